package engine

import (
	"context"
	"testing"

	"github.com/lisa-llm/lisa/gen"
)

// TestChunkedPrefill: while a slot decodes, a long prompt goes in chunks
// of at most the scheduler's chunk, each step also carrying the decoding
// slot's token (its stream goes on during the prompt instead of waiting
// for all of it), and both outputs are those each request gets alone.
func TestChunkedPrefill(t *testing.T) {
	refs := loadRef(t)
	var long []int32
	for len(long) < 100 {
		for _, p := range refs {
			long = append(long, p.PromptIDs[1:]...) // without BOS
		}
	}
	long = append([]int32{refs[0].PromptIDs[0]}, long[:100]...)
	dec := greedy(refs[1].PromptIDs, 48)
	pre := greedy(long, 6)

	alone := newEngine(t, Options{Threads: 2, Parallel: 1, CtxSize: 256})
	wantDec := runGen(context.Background(), alone, dec)
	wantPre := runGen(context.Background(), alone, pre)
	if wantDec.err != nil || wantPre.err != nil {
		t.Fatalf("alone: %v, %v", wantDec.err, wantPre.err)
	}

	const chunk = 16
	e := newEngine(t, Options{Threads: 2, Parallel: 2, CtxSize: 256})
	e.sched.chunk = chunk // before the first request: submit's lock orders it
	// Before each step the scheduler still holds the previous step's
	// spans: note how many prompt tokens went in beside a decoding token.
	var mixed, overChunk int
	prompt := 0
	e.sched.beforeStep = func() {
		decoding, inPrompt := false, 0
		for _, sp := range e.sched.spans {
			if sp.n == 1 {
				decoding = true
			} else {
				inPrompt += sp.n
			}
		}
		if decoding && inPrompt > 0 {
			mixed++
			prompt += inPrompt
			if inPrompt > chunk+chunk/8 {
				overChunk++
			}
		}
	}
	started := make(chan struct{})
	decDone := make(chan result, 1)
	go func() {
		var r result
		first := true
		r.done, r.err = e.Generate(context.Background(), dec, func(c gen.Chunk) error {
			r.chunks = append(r.chunks, c)
			r.text += c.Text
			if first {
				first = false
				close(started)
			}
			return nil
		})
		decDone <- r
	}()
	<-started
	gotPre := runGen(context.Background(), e, pre)
	gotDec := <-decDone
	if gotPre.err != nil || gotDec.err != nil {
		t.Fatalf("together: %v, %v", gotDec.err, gotPre.err)
	}
	if overChunk > 0 {
		t.Errorf("%d steps carried more than %d prompt tokens beside a decoding token", overChunk, chunk+chunk/8)
	}
	// The prompt's tokens but its last few (the step that admitted it may
	// have run before the decoding slot's first token was sampled) went
	// in beside the decoding slot's tokens, chunk by chunk.
	if want := (len(long) - chunk) / chunk; mixed < want || prompt < len(long)-chunk {
		t.Errorf("%d steps carried %d prompt tokens beside a decoding token, want at least %d steps and %d tokens", mixed, prompt, want, len(long)-chunk)
	}
	if gotDec.text != wantDec.text || gotPre.text != wantPre.text {
		t.Errorf("together: %q and %q, alone: %q and %q", gotDec.text, gotPre.text, wantDec.text, wantPre.text)
	}
}
