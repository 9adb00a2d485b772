package tokenizer

import (
	"strings"
	"testing"
	"time"
)

// hostileInputs are texts that make naive tokenizers quadratic.
// n is the size of each in bytes, spaces are always 1 MiB.
func hostileInputs(n int) map[string]string {
	in := hostileInputsSpaces(n, 1<<20)
	in["1MiB spaces"] = in["spaces"]
	delete(in, "spaces")
	return in
}

// hostileInputsSpaces is hostileInputs with spaces bytes of spaces.
func hostileInputsSpaces(n, spaces int) map[string]string {
	return map[string]string{
		"spaces":         strings.Repeat(" ", spaces),
		"a":              strings.Repeat("a", n),
		"newlines":       strings.Repeat("\n", n),
		"0xFF":           strings.Repeat("\xff", n),
		"emoji":          strings.Repeat("🦙", n/4),
		"digits":         strings.Repeat("7", n),
		"punct":          strings.Repeat("!", n),
		"spaces+letters": strings.Repeat(" \ta", n/3),
	}
}

// hostileBudget bounds one hostile encode. It is far above the ~1s a
// megabyte takes on a loaded CI core, and far below the hours a quadratic
// algorithm would take on a megabyte.
const hostileBudget = 60 * time.Second

func TestHostileInputSynthetic(t *testing.T) {
	if testing.Short() {
		t.Skip("slow in -short mode")
	}
	// Every family (its names share its steps) at a quarter megabyte;
	// the families lisa had first, whose hand-written splitters the
	// others reuse, at a megabyte of spaces too.
	type hostile struct {
		tok    *Tokenizer
		inputs map[string]string
	}
	toks := map[string]hostile{"spm": {mustNew(t, spmVocab()), hostileInputs(1 << 18)}}
	first := map[preKind]bool{preDefault: true, preGPT2: true, preLlama3: true, preQwen2: true,
		preStarcoder: true, preFalcon: true, preDeepseekLLM: true, preDeepseekCoder: true}
	families := map[preKind]bool{}
	for _, pre := range sortedPreNames() {
		k := preNames[pre].kind
		if families[k] {
			continue
		}
		families[k] = true
		in := hostileInputsSpaces(1<<16, 1<<18)
		if first[k] {
			in = hostileInputs(1 << 18)
		}
		toks[pre] = hostile{mustNew(t, bpeVocab(pre)), in}
	}
	for name, h := range toks {
		for what, text := range h.inputs {
			start := time.Now()
			out := h.tok.Encode(text, false, false)
			el := time.Since(start)
			if el > time.Second {
				t.Logf("%s %s: %v", name, what, el)
			}
			// Every byte gives at most one token (plus U+FFFD's three for an
			// invalid byte); only raw BPE drops what it has no token for.
			if len(out) == 0 && !h.tok.pre.raw || len(out) > 3*len(text)+1 {
				t.Errorf("%s %s: %d tokens for %d bytes", name, what, len(out), len(text))
			}
			if el > hostileBudget {
				t.Errorf("%s %s: took %v", name, what, el)
			}
		}
	}
}

// TestEncodeSpeed checks the 10 KB budget on the real vocabularies.
func TestEncodeSpeed(t *testing.T) {
	text := strings.Repeat("The quick brown fox jumps over the lazy dog; naïve café 東京 123,456! ", 150)[:10240]
	for _, name := range []string{"llama-spm", "gpt-2", "deepseek-llm"} {
		tok := loadShared(t, "ref/vocab/ggml-vocab-"+name+".gguf")
		tok.Encode(text, false, false) // warm up
		best := time.Hour
		for i := 0; i < 5; i++ {
			start := time.Now()
			tok.Encode(text, false, false)
			best = min(best, time.Since(start))
		}
		t.Logf("%s: 10 KiB in %v", name, best)
		if best > 50*time.Millisecond {
			t.Errorf("%s: 10 KiB took %v, budget 50ms", name, best)
		}
	}
}

func TestHostileInputReal(t *testing.T) {
	if testing.Short() {
		t.Skip("slow in -short mode")
	}
	for _, name := range []string{"llama-spm", "gpt-2"} {
		tok := loadShared(t, "ref/vocab/ggml-vocab-"+name+".gguf")
		for what, text := range hostileInputs(1 << 20) {
			start := time.Now()
			out := tok.Encode(text, true, true)
			el := time.Since(start)
			t.Logf("%s %s: %d tokens in %v", name, what, len(out), el)
			if el > hostileBudget {
				t.Errorf("%s %s: took %v", name, what, el)
			}
		}
	}
}

func BenchmarkEncode10K(b *testing.B) {
	text := strings.Repeat("The quick brown fox jumps over the lazy dog. ", 228)[:10240]
	for _, name := range []string{"llama-spm", "gpt-2"} {
		tok := loadShared(b, "ref/vocab/ggml-vocab-"+name+".gguf")
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				tok.Encode(text, false, false)
			}
		})
	}
}
