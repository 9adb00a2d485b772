package engine

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/lisa-llm/lisa/gen"
)

// TestEmbed checks the embedding's invariants on stories260K: unit length,
// deterministic, distinct for distinct inputs, the same whether given as
// text or as the ids the text tokenizes to (with BOS), and unaffected by
// generations sharing the cache or by the batch size it is split into.
func TestEmbed(t *testing.T) {
	e := newEngine(t, Options{Parallel: 2, CtxSize: 128, BatchSize: 4})
	ctx := context.Background()
	a, na, err := e.Embed(ctx, "Once upon a time", nil)
	if err != nil {
		t.Fatal(err)
	}
	var ss float64
	for _, v := range a {
		ss += float64(v) * float64(v)
	}
	if len(a) != e.model.Config.NEmbd || math.Abs(ss-1) > 1e-5 {
		t.Fatalf("%d values of squared length %v, want %d of 1", len(a), ss, e.model.Config.NEmbd)
	}
	ids := e.tok.Encode("Once upon a time", true, false)
	if na != len(ids) {
		t.Errorf("%d tokens counted, want %d", na, len(ids))
	}
	if _, err := runGenOnce(e); err != nil {
		t.Fatal(err)
	}
	b, _, err := e.Embed(ctx, "", ids)
	if err != nil {
		t.Fatal(err)
	}
	if c := cosine(a, b); c != 1 {
		t.Errorf("text and ids embeddings differ: cosine %v", c)
	}
	d, _, err := e.Embed(ctx, "The dog ran home", nil)
	if err != nil {
		t.Fatal(err)
	}
	if c := cosine(a, d); c > 0.9999 {
		t.Errorf("distinct inputs embed alike: cosine %v", c)
	}
	e2 := newEngine(t, Options{Parallel: 1, CtxSize: 128, BatchSize: 64})
	f, _, err := e2.Embed(ctx, "Once upon a time", nil)
	if err != nil {
		t.Fatal(err)
	}
	if c := cosine(a, f); c < 0.99999 {
		t.Errorf("batch size changes the embedding: cosine %v", c)
	}
}

func runGenOnce(e *Engine) (result, error) {
	r := runGen(context.Background(), e, greedy([]int32{1, 400, 500}, 4))
	return r, r.err
}

func cosine(a, b []float32) float64 {
	var ab, aa, bb float64
	for i := range a {
		ab += float64(a[i]) * float64(b[i])
		aa += float64(a[i]) * float64(a[i])
		bb += float64(b[i]) * float64(b[i])
	}
	return ab / math.Sqrt(aa*bb)
}

// TestEmbedRefusals checks the typed errors of inputs the engine cannot
// embed.
func TestEmbedRefusals(t *testing.T) {
	e := newEngine(t, Options{CtxSize: 16})
	long := make([]int32, 17)
	for i := range long {
		long[i] = 5
	}
	cases := []struct {
		name string
		text string
		ids  []int32
		code gen.Code
	}{
		{"empty", "", nil, gen.CodeInvalidPrompt},
		{"id outside the vocabulary", "", []int32{1, 1 << 20}, gen.CodeInvalidPrompt},
		{"longer than the context", "", long, gen.CodeContextLength},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := e.Embed(context.Background(), c.text, c.ids)
			ge := gen.AsError(err)
			if ge == nil || ge.Code != c.code {
				t.Fatalf("got %v, want code %s", err, c.code)
			}
		})
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := e.Embed(ctx, "hi", nil); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: got %v", err)
	}
}
