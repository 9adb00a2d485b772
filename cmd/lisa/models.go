package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"text/tabwriter"

	"github.com/lisa-llm/lisa/hub"
)

// runModels is lisa models: it lists the downloaded models, or with rm
// removes one.
func runModels(args []string, stdout, stderr io.Writer) int {
	rm := len(args) > 0 && args[0] == "rm"
	if rm {
		args = args[1:]
	}
	name := "models"
	if rm {
		name = "models rm"
	}
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	dir := modelsDirFlag(fs)
	pos, status, done := parseCommand(name, fs, args, true, stdout, stderr)
	if done {
		return status
	}
	switch {
	case rm && len(pos) != 1:
		return badUsage(stderr, name, "give one model to remove")
	case !rm && len(pos) != 0:
		return badUsage(stderr, name, fmt.Sprintf("unexpected argument %q", pos[0]))
	}
	store, err := modelsStore(*dir)
	if err != nil {
		fmt.Fprintf(stderr, "lisa models: %v\n", err)
		return 1
	}
	if rm {
		return removeModel(store, pos[0], stdout, stderr)
	}
	list, err := store.List()
	if err != nil {
		fmt.Fprintf(stderr, "lisa models: %v\n", err)
		return 1
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSIZE\tQUANT\tSHA256")
	for _, l := range list {
		name := l.Name()
		if len(l.Files) > 1 {
			name += fmt.Sprintf(" (+%d shards)", len(l.Files)-1)
		}
		q := l.Quant()
		if q == "" {
			q = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", name, formatBytes(l.Size()), q, l.SHA256())
	}
	tw.Flush()
	if len(list) == 0 {
		fmt.Fprintf(stderr, "no models in %s yet: lisa pull OWNER/NAME:QUANT fetches one\n", store.Dir)
	}
	return 0
}

func removeModel(store hub.Store, name string, stdout, stderr io.Writer) int {
	ref, err := hub.ParseRef(name)
	if err != nil {
		fmt.Fprintf(stderr, "lisa models rm: %v\n", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	l, err := store.Remove(ctx, ref, func() { fmt.Fprintf(stderr, "%s is being pulled; waiting\n", ref) })
	if err != nil {
		fmt.Fprintf(stderr, "lisa models rm: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "removed %s (%s)\n", l.Name(), formatBytes(l.Size()))
	return 0
}
