package main

import (
	"fmt"
	"io"
	"time"

	"github.com/lisa-llm/lisa/model"
)

// progressEvery is how often a slow model load prints a line.
const progressEvery = time.Second

// progressOut returns where a command prints its progress: stderr when
// term says it is a terminal, nowhere otherwise, so that piped or
// redirected output carries results and errors only.
func progressOut(stderr io.Writer, term func(io.Writer) bool) io.Writer {
	if term(stderr) {
		return stderr
	}
	return io.Discard
}

// loadProgress returns a model.LoadWithProgress callback that prints the
// end of the load and, for a slow one, a line about once a second to w;
// nil when w is nil or io.Discard.
func loadProgress(w io.Writer) func(model.LoadProgress) {
	if w == nil || w == io.Discard {
		return nil
	}
	return model.Throttle(func(p model.LoadProgress) { fmt.Fprintln(w, p) }, progressEvery)
}
