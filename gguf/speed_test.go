package gguf

import (
	"bytes"
	"fmt"
	"testing"
	"time"
)

// vocabFile writes a vocabulary-only file of n tokens with scores, token
// types and n merges, like a BPE model's.
func vocabFile(t testing.TB, n int) []byte {
	t.Helper()
	toks := make([]string, n)
	merges := make([]string, n)
	scores := make([]float32, n)
	types := make([]int32, n)
	for i := range toks {
		toks[i] = fmt.Sprintf("tok%d\xe2\x96\x81", i)
		merges[i] = fmt.Sprintf("a%d b%d", i, i)
		scores[i] = float32(-i)
		types[i] = 1
	}
	w := NewWriter()
	for _, kv := range []KV{
		{"tokenizer.ggml.tokens", StringsValue(toks)}, {"tokenizer.ggml.merges", StringsValue(merges)},
		{"tokenizer.ggml.scores", Float32sValue(scores)}, {"tokenizer.ggml.token_type", Int32sValue(types)},
	} {
		if err := w.Add(kv.Key, kv.Value); err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestParseSpeed parses a 100k-token vocabulary (with as many merges)
// through both input paths. The bound is loose because the test machine
// is shared; BenchmarkParseVocab gives the real figure.
func TestParseSpeed(t *testing.T) {
	data := vocabFile(t, 100000)
	best := time.Hour
	for range 5 {
		start := time.Now()
		f, err := Parse(bytes.NewReader(data), int64(len(data)), Limits{})
		if err != nil {
			t.Fatal(err)
		}
		if toks, _ := f.Strings("tokenizer.ggml.tokens"); len(toks) != 100000 || toks[99999] != "tok99999\xe2\x96\x81" {
			t.Fatalf("tokens read back wrong: %d", len(toks))
		}
		best = min(best, time.Since(start))
	}
	t.Logf("100k tokens + 100k merges (%d bytes): best of 5 %v", len(data), best)
	if best > time.Second {
		t.Errorf("parse took %v", best)
	}
}

func BenchmarkParseVocab(b *testing.B) {
	data := vocabFile(b, 100000)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := ParseBytes(data, Limits{}); err != nil {
			b.Fatal(err)
		}
	}
}
