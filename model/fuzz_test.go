package model

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/lisa-llm/lisa/gguf"
	"github.com/lisa-llm/lisa/kernels"
	msynth "github.com/lisa-llm/lisa/model/synth"
	"github.com/lisa-llm/lisa/model/synth/vocab"
	"github.com/lisa-llm/lisa/tensor"
)

var update = flag.Bool("update", false, "rewrite the fuzz seed corpus in testdata/fuzz")

// fuzzSeeds are the synthetic models the FuzzLoad corpus starts from.
func fuzzSeeds(tb testing.TB) map[string][]byte {
	tb.Helper()
	tied := synthSpec{embd: 8, layers: 1, heads: 2, kvHeads: 1, ff: 8, vocab: 6, seed: 1, tied: true}
	untied := synthSpec{embd: 8, layers: 2, heads: 2, kvHeads: 2, ff: 4, vocab: 5, seed: 2}
	f16 := synthSpec{embd: 8, layers: 1, heads: 4, kvHeads: 2, ff: 8, vocab: 4, seed: 3, wtype: tensor.F16}
	seeds := map[string][]byte{
		"tied":   newSynth(tb, tied).bytes(tb),
		"untied": newSynth(tb, untied).bytes(tb),
		"f16":    newSynth(tb, f16).bytes(tb),
	}
	// The second-wave families at the smallest widths their synthetic
	// vocabularies allow, so that mutations reach their keys and tensors.
	for _, s := range []msynth.Shape{
		{Name: "gemma2", Arch: msynth.ArchGemma2, NEmbd: 8, NLayer: 2, NHead: 2, NHeadKV: 1, HeadDim: 8, HeadDimKey: true, NFF: 8,
			NVocab: 460, NCtx: 64, RopeBase: 10000, Tied: true, SlidingWindow: 2, AttnSoftcap: 1, FinalSoftcap: 2,
			Vocab: vocab.Spec{Family: vocab.Gemma2, NVocab: 460}},
		{Name: "gemma3", Arch: msynth.ArchGemma3, NEmbd: 8, NLayer: 6, NHead: 2, NHeadKV: 1, HeadDim: 4, HeadDimKey: true, NFF: 8,
			NVocab: 460, NCtx: 64, RopeBase: 1e6, Tied: true, SlidingWindow: 2, Rope: msynth.RopeScaling{Type: "linear", Factor: 8},
			Vocab: vocab.Spec{Family: vocab.Gemma3, NVocab: 460}},
		{Name: "phi3", Arch: msynth.ArchPhi3, NEmbd: 8, NLayer: 1, NHead: 2, NHeadKV: 1, NFF: 8, NVocab: 420, NCtx: 64,
			RopeBase: 10000, RopeDim: 2, Rope: msynth.RopeScaling{Type: "longrope", OrigCtx: 16},
			Vocab: vocab.Spec{Family: vocab.Phi3, NVocab: 420, SpecialAt: 356}},
		// Mixtures of experts: Mixtral's llama with four experts, two
		// per token, and qwen3moe with experts narrower than the FFN.
		{Name: "mixtral", Arch: msynth.ArchLlama, NEmbd: 8, NLayer: 1, NHead: 2, NHeadKV: 1, NFF: 8, NVocab: 400, NCtx: 64,
			RopeBase: 1e6, NExpert: 4, NExpertUsed: 2, Vocab: vocab.Spec{Family: vocab.Mistral, NVocab: 400}},
		{Name: "qwen3moe", Arch: msynth.ArchQwen3MoE, NEmbd: 8, NLayer: 1, NHead: 2, NHeadKV: 1, HeadDim: 4, HeadDimKey: true, NFF: 8,
			NVocab: 460, NCtx: 64, RopeBase: 1e6, NExpert: 4, NExpertUsed: 3, NFFExp: 4,
			Vocab: vocab.Spec{Family: vocab.Qwen3, NVocab: 460, SpecialAt: 420}},
		// gpt-oss: sinks, biases on every projection and expert, a window
		// on the even layer, YaRN.
		gptossSmall,
	} {
		var b bytes.Buffer
		if _, err := msynth.Write(&b, msynth.Options{Shape: s, Type: msynth.F32, Seed: 4, Threads: 1}); err != nil {
			tb.Fatalf("seed %s: %v", s.Name, err)
		}
		seeds[s.Name] = b.Bytes()
	}
	return seeds
}

// TestFuzzSeeds keeps the committed corpus equal to the generated seeds
// (go test -run TestFuzzSeeds -update rewrites it).
func TestFuzzSeeds(t *testing.T) {
	dir := filepath.Join("testdata", "fuzz", "FuzzLoad")
	for name, b := range fuzzSeeds(t) {
		path := filepath.Join(dir, "seed-"+name)
		want := "go test fuzz v1\n[]byte(" + strconv.Quote(string(b)) + ")\n"
		if *update {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run go test -run TestFuzzSeeds -update)", err)
		}
		if string(got) != want {
			t.Errorf("%s is stale (run go test -run TestFuzzSeeds -update)", path)
		}
	}
}

// FuzzLoad feeds arbitrary bytes through the GGUF reader, Load and one
// decoding step: none may panic, whatever the file says.
func FuzzLoad(f *testing.F) {
	for _, b := range fuzzSeeds(f) {
		f.Add(b)
	}
	pool := kernels.NewPool(1)
	defer pool.Close()
	f.Fuzz(func(t *testing.T, data []byte) {
		gf, err := gguf.ParseBytes(data, gguf.DefaultLimits())
		if err != nil {
			return
		}
		m, err := Load(gf)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error")
			}
			return
		}
		c := m.Config
		if c.NLayer*c.KVDim() > 1<<16 || c.NFF > 1<<16 || c.NEmbd > 1<<12 {
			return // valid but too large to run quickly
		}
		cache, err := NewCache(c, KVF16, 1, 3)
		if err != nil {
			t.Fatalf("cache for a loaded model: %v", err)
		}
		r := NewRunner(m, cache, pool, 2)
		rows, err := r.Decode(Batch{Tokens: []int32{0, int32(c.NVocab - 1)}, Pos: []int32{0, 1}, Seq: []int32{0, 0}, Logits: []bool{true, true}})
		if err != nil {
			t.Fatalf("decode: %v", err)
		}
		if len(rows) != 2 || len(rows[1]) != c.NVocab {
			t.Fatalf("rows %d × %d", len(rows), len(rows[0]))
		}
		_ = fmt.Sprint(rows[0][0])
	})
}
