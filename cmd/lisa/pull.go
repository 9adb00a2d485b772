package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/lisa-llm/lisa/hub"
)

// runPull is lisa pull: it downloads a model from the hub into the models
// directory, verified against the repository's digest.
func runPull(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("pull", flag.ContinueOnError)
	dir := modelsDirFlag(fs)
	pos, status, done := parseCommand("pull", fs, args, true, stdout, stderr)
	if done {
		return status
	}
	if len(pos) != 1 {
		return badUsage(stderr, "pull", "give one model")
	}
	ref, err := hub.ParseRef(pos[0])
	if err != nil {
		fmt.Fprintf(stderr, "lisa pull: %v\n", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	l, err := pullModel(ctx, ref, *dir, progressOut(stderr, isTerminal))
	if err != nil {
		fmt.Fprintf(stderr, "lisa pull: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "%s\t%s\tsha256:%s\n", l.Path(), formatBytes(l.Size()), l.SHA256())
	return 0
}

// modelsDirFlag registers --models-dir on fs.
func modelsDirFlag(fs *flag.FlagSet) *string {
	return fs.String("models-dir", "", "models `directory` (default: $"+hub.EnvModels+", else ~/.cache/lisa/models)")
}

// modelsStore returns the models directory: dir when given, else the
// default, made absolute (the sandbox mounts the model by absolute path).
func modelsStore(dir string) (hub.Store, error) {
	if dir == "" {
		var err error
		if dir, err = hub.DefaultDir(os.Getenv); err != nil {
			return hub.Store{}, err
		}
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return hub.Store{}, fmt.Errorf("models directory %q: %w", dir, err)
	}
	return hub.Store{Dir: abs}, nil
}

// pullModel downloads ref into the models directory dir with the hub
// client the environment configures, drawing progress on progress.
func pullModel(ctx context.Context, ref hub.Ref, dir string, progress io.Writer) (*hub.Local, error) {
	store, err := modelsStore(dir)
	if err != nil {
		return nil, err
	}
	client, err := hub.FromEnv(os.Getenv)
	if err != nil {
		return nil, err
	}
	p := &hub.Puller{Client: client, Store: store, Progress: newPullBar(progress, time.Now).event}
	return p.Pull(ctx, ref)
}

// pullBar draws a pull's progress on a terminal, one line per file
// redrawn in place: bytes, rate and time left.
type pullBar struct {
	w     io.Writer
	now   func() time.Time
	file  string
	start time.Time // when this file's current attempt began
	base  int64     // bytes it had then
	drawn time.Time
}

// pullRedraw is how often the line is redrawn at most.
const pullRedraw = 200 * time.Millisecond

// newPullBar returns a bar writing to w; nil w or io.Discard draws nothing.
func newPullBar(w io.Writer, now func() time.Time) *pullBar {
	if w == io.Discard {
		w = nil
	}
	return &pullBar{w: w, now: now}
}

func (b *pullBar) event(e hub.Event) {
	if b.w == nil {
		return
	}
	t := b.now()
	switch {
	case e.Waiting:
		fmt.Fprintf(b.w, "%s: another pull is downloading it; waiting\n", e.File)
		return
	case e.Retry != nil:
		fmt.Fprintf(b.w, "\n%s: %v; resuming\n", e.File, e.Retry)
		b.file = ""
		return
	}
	if e.File != b.file || e.Done < b.base {
		b.file, b.start, b.base, b.drawn = e.File, t, e.Done, time.Time{}
	}
	if !e.Finished && t.Sub(b.drawn) < pullRedraw {
		return
	}
	b.drawn = t
	fmt.Fprintf(b.w, "\r%s\x1b[K", b.line(e, t))
	if e.Finished {
		fmt.Fprintln(b.w)
	}
}

// line formats one progress line.
func (b *pullBar) line(e hub.Event, t time.Time) string {
	s := ""
	if e.Count > 1 {
		s = fmt.Sprintf("[%d/%d] ", e.Index, e.Count)
	}
	pct := 100.0
	if e.Total > 0 {
		pct = 100 * float64(e.Done) / float64(e.Total)
	}
	s += fmt.Sprintf("%s %5.1f%% %s / %s", filepath.Base(e.File), pct, formatBytes(e.Done), formatBytes(e.Total))
	if e.Finished {
		return s + "  verified"
	}
	elapsed := t.Sub(b.start).Seconds()
	if got := e.Done - b.base; got > 0 && elapsed > 0 {
		rate := float64(got) / elapsed
		left := time.Duration(float64(e.Total-e.Done) / rate * float64(time.Second)).Round(time.Second)
		s += fmt.Sprintf("  %s/s  ETA %s", formatBytes(int64(rate)), left)
	}
	return s
}

// formatBytes writes n with a binary unit.
func formatBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	v, i := float64(n)/unit, 0
	for v >= unit && i < 4 {
		v /= unit
		i++
	}
	return fmt.Sprintf("%.1f %ciB", v, "KMGTP"[i])
}
