package main

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/lisa-llm/lisa/internal/shared"
)

// openPTY opens a pseudo-terminal and returns its controlling side and
// its terminal side; it skips t where the system has none.
func openPTY(t *testing.T) (ptm, pts *os.File) {
	t.Helper()
	ptm, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	fd := int(ptm.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		ptm.Close()
		t.Fatalf("unlock the pseudo-terminal: %v", err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		ptm.Close()
		t.Fatalf("pseudo-terminal number: %v", err)
	}
	pts, err = os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		ptm.Close()
		t.Fatalf("open the terminal side: %v", err)
	}
	t.Cleanup(func() { pts.Close(); ptm.Close() })
	return ptm, pts
}

// readAll collects what the terminal side shows until it is closed
// (the controlling side then reads EIO).
func readAll(ptm *os.File) <-chan string {
	out := make(chan string, 1)
	go func() {
		var b bytes.Buffer
		io.Copy(&b, ptm)
		out <- b.String()
	}()
	return out
}

func TestIsTerminal(t *testing.T) {
	_, pts := openPTY(t)
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	file, err := os.Create(filepath.Join(t.TempDir(), "log"))
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	tests := []struct {
		name string
		w    io.Writer
		want bool
	}{
		{"pseudo-terminal", pts, true},
		{"pipe", pw, false},
		{"/dev/null", null, false},
		{"regular file", file, false},
		{"buffer", &bytes.Buffer{}, false},
		{"nil file", (*os.File)(nil), false},
	}
	for _, tc := range tests {
		if got := isTerminal(tc.w); got != tc.want {
			t.Errorf("%s: isTerminal %v, want %v", tc.name, got, tc.want)
		}
		if got := progressOut(tc.w, isTerminal) == tc.w; got != tc.want {
			t.Errorf("%s: progress shown %v, want %v", tc.name, got, tc.want)
		}
	}
}

// benchArgs is a quick in-process `lisa bench` of stories260K.
func benchArgs(t *testing.T, extra ...string) []string {
	model := shared.Path(t, "models/stories260K.gguf")
	return append([]string{"bench", "-m", model, "-p", "8", "-n", "2", "-r", "1", "-t", "1", "-o", "md"}, extra...)
}

// TestBenchProgressTerminal: on a terminal `lisa bench` shows the model
// load and each measurement; into a pipe it shows nothing, and stdout
// carries the results either way.
func TestBenchProgressTerminal(t *testing.T) {
	ptm, pts := openPTY(t)
	shown := readAll(ptm)
	var so bytes.Buffer
	if code := run(benchArgs(t, "--no-sandbox"), &so, pts); code != 0 {
		t.Fatalf("exit %d", code)
	}
	pts.Close()
	got := <-shown
	for _, want := range []string{"model loaded: 48 tensors, 1.1 MiB", "pp8, 1 threads: warm-up", "tg2, 1 threads: repetition 1/1"} {
		if !strings.Contains(got, want) {
			t.Errorf("terminal shows %q, want %q in it", got, want)
		}
	}
	if !strings.Contains(so.String(), "pp8") {
		t.Errorf("results %q", so.String())
	}

	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	so.Reset()
	code := run(benchArgs(t, "--no-sandbox"), &so, pw)
	pw.Close()
	piped, _ := io.ReadAll(pr)
	if code != 0 || len(piped) != 0 || !strings.Contains(so.String(), "tg2") {
		t.Fatalf("piped: exit %d, stderr %q, stdout %q", code, piped, so.String())
	}
}

// TestBenchWorkerProgress runs the lisa binary's sandboxed bench: the
// worker's load line reaches a terminal, and a piped stderr stays empty.
func TestBenchWorkerProgress(t *testing.T) {
	bin := e2eBinary(t)
	args := benchArgs(t)[1:]
	ptm, pts := openPTY(t)
	shown := readAll(ptm)
	cmd := exec.Command(bin, append([]string{"bench"}, args...)...)
	var so bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, pts
	if err := cmd.Run(); err != nil {
		t.Fatalf("lisa bench on a terminal: %v", err)
	}
	pts.Close()
	if got := <-shown; !strings.Contains(got, "model loaded: 48 tensors") || !strings.Contains(got, "repetition 1/1") {
		t.Errorf("terminal shows %q", got)
	}
	cmd = exec.Command(bin, append([]string{"bench"}, args...)...)
	var se bytes.Buffer
	so.Reset()
	cmd.Stdout, cmd.Stderr = &so, &se
	if err := cmd.Run(); err != nil {
		t.Fatalf("lisa bench piped: %v\n%s", err, se.String())
	}
	if se.Len() != 0 || !strings.Contains(so.String(), "tg2") {
		t.Fatalf("piped: stderr %q, stdout %q", se.String(), so.String())
	}
}

// TestRunProgressTerminal: `lisa run` prints the load line on a terminal
// and not into a buffer.
func TestRunProgressTerminal(t *testing.T) {
	model := shared.Path(t, "models/stories260K.gguf")
	ptm, pts := openPTY(t)
	shown := readAll(ptm)
	var so bytes.Buffer
	args := []string{"run", "--no-sandbox", "-m", model, "-p", "Once", "-n", "2", "--temp", "0", "--threads", "1"}
	if code := run(args, &so, pts); code != 0 {
		t.Fatalf("exit %d", code)
	}
	pts.Close()
	if got := <-shown; !strings.Contains(got, "model loaded: 48 tensors") {
		t.Errorf("terminal shows %q", got)
	}
	var se bytes.Buffer
	if code := run(args, &so, &se); code != 0 || strings.Contains(se.String(), "model loaded") {
		t.Fatalf("exit %d, stderr %q", code, se.String())
	}
}

// TestBenchKernelsSandboxed: --kernels reaches the sandboxed worker (its
// results name the path it used), and a bad path in the sandbox config
// is refused.
func TestBenchKernelsSandboxed(t *testing.T) {
	bin := e2eBinary(t)
	args := append(benchArgs(t, "--kernels", "generic"), "-o", "json")
	out, err := exec.Command(bin, args...).Output()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	var rs []map[string]any
	if err := json.Unmarshal(out, &rs); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(rs) == 0 {
		t.Fatal("no results")
	}
	for _, r := range rs {
		if r["kernels"] != "generic" || r["sandbox"] != true {
			t.Errorf("result %v: want kernels generic, sandbox true", r)
		}
	}
}
