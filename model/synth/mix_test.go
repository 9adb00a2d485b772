package synth

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lisa-llm/lisa/gguf"
	"github.com/lisa-llm/lisa/kernels"
	"github.com/lisa-llm/lisa/model"
)

// mixTables is the file of tensor types llama.cpp's own quantizer chose
// for mixShapes in every quantized file type: lines of "shape ftype
// tensor type". Regenerate it with
//
//	LISA_LLAMA_QUANT=$PWD/bench/llamacpp/quant.sh go test ./model/synth -run TestMixesLlamaQuantize
//
// (quant.sh runs llama_model_quantize of the prebuilt llama.cpp).
const mixTables = "testdata/mixes.txt"

// mixShapes exercise the rules of llama_tensor_get_type: 16 layers with
// four query heads per KV head (use_more_bits, n_layer/16 and /8, the
// n_gqa >= 4 rules), a tied model whose rows are not whole 256-value
// blocks (every K-quant fallback) with fewer than four heads per KV head,
// and three mixtures of experts.
func mixShapes() []Shape {
	base, _ := Lookup("llama2-quant")
	gqa4 := base
	gqa4.Name, gqa4.NLayer, gqa4.NHead, gqa4.NHeadKV, gqa4.NFF = "mix-gqa4", 16, 8, 2, 512
	odd, _ := Lookup("qwen2-odd-quant")
	odd.Name, odd.NLayer, odd.NFF = "mix-odd", 8, 640
	// Mixtures of experts: eight experts (llama.cpp's rules for them) and
	// four (the dense rules on the stacked experts, by layer).
	moe8, _ := Lookup("mixtral-tiny")
	moe8.Name, moe8.NLayer, moe8.NFF = "mix-moe8", 8, 256
	moe4, _ := Lookup("qwen3moe-tiny")
	moe4.Name, moe4.NLayer, moe4.NExpert, moe4.NExpertUsed = "mix-moe4", 8, 4, 2
	// gpt-oss: biases, sinks and router kept F32, and like gpt-oss-20b's
	// 2880 a width that is not whole 256-value blocks.
	gptoss, _ := Lookup("gpt-oss-tiny")
	gptoss.Name, gptoss.NLayer, gptoss.NEmbd, gptoss.NFF, gptoss.NFFExp = "mix-gptoss", 8, 384, 384, 384
	return []Shape{gqa4, odd, moe8, moe4, gptoss}
}

// quantizedTypes are the file types llama-quantize writes from an F16
// file.
func quantizedTypes() []FileType {
	var fts []FileType
	for i := range fileTypes {
		if ft := FileType(i); ft != F32 && ft != F16 && !ft.SynthOnly() {
			fts = append(fts, ft)
		}
	}
	return fts
}

// TestMixesLlamaQuantize checks Plan's tensor types against those
// llama.cpp's quantizer wrote for the same shapes, in every file type.
func TestMixesLlamaQuantize(t *testing.T) {
	if q := os.Getenv("LISA_LLAMA_QUANT"); q != "" {
		writeMixTables(t, q)
	}
	f, err := os.Open(mixTables)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	want := map[string]map[string]string{} // "shape ftype" -> tensor -> type
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) != 4 {
			t.Fatalf("bad line %q", sc.Text())
		}
		k := fs[0] + " " + fs[1]
		if want[k] == nil {
			want[k] = map[string]string{}
		}
		want[k][fs[2]] = fs[3]
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	for _, s := range mixShapes() {
		for _, ft := range quantizedTypes() {
			w := want[s.Name+" "+ft.String()]
			if w == nil {
				t.Errorf("%s %s: not in %s", s.Name, ft, mixTables)
				continue
			}
			plan, err := Plan(s, ft)
			if err != nil {
				t.Errorf("%s %s: %v", s.Name, ft, err)
				continue
			}
			if len(plan) != len(w) {
				t.Errorf("%s %s: %d tensors, llama.cpp %d", s.Name, ft, len(plan), len(w))
			}
			for _, p := range plan {
				if got := p.Type.String(); got != w[p.Name] {
					t.Errorf("%s %s: %s is %s, llama.cpp %s", s.Name, ft, p.Name, got, w[p.Name])
				}
			}
		}
	}
}

// writeMixTables writes mixTables from files the quantizer script q
// (bench/llamacpp/quant.sh) writes from F16 synthetic files.
func writeMixTables(t *testing.T, q string) {
	dir := t.TempDir()
	var out strings.Builder
	for _, s := range mixShapes() {
		src := filepath.Join(dir, s.Name+"-f16.gguf")
		if _, err := WriteFile(src, Options{Shape: s, Type: F16, Seed: 1}); err != nil {
			t.Fatal(err)
		}
		for _, ft := range quantizedTypes() {
			dst := filepath.Join(dir, s.Name+"-"+ft.String()+".gguf")
			cmd := exec.Command(q, src, dst, strings.ToUpper(ft.String()))
			if b, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("%s %s: %v\n%s", s.Name, ft, err, b)
			}
			g, err := gguf.Open(dst, gguf.DefaultLimits())
			if err != nil {
				t.Fatal(err)
			}
			for _, ti := range g.Tensors {
				fmt.Fprintf(&out, "%s %s %s %s\n", s.Name, ft, ti.Name, ti.Type)
			}
			g.Close()
			os.Remove(dst)
		}
	}
	if err := os.WriteFile(mixTables, []byte(out.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestFileTypesLoadAndRun writes two one-layer shapes (one with rows of
// whole 256-value blocks, one with fallbacks) in every quantized file
// type and in F32 from the same seed, loads each with package model, and
// decodes a few tokens: the quantized model's logits must be finite and
// follow the F32 model's (relative RMS difference below the type's
// bound), which a wrongly laid out or wrongly decoded type fails.
func TestFileTypesLoadAndRun(t *testing.T) {
	// Bounds on ‖q − f‖ / ‖f‖ of the last token's logits, loose enough
	// for 2-bit weights and tight enough that random logits (about 1.4)
	// fail.
	bound := map[FileType]float64{Q2_K: 0.6, Q3_K_S: 0.45, Q3_K_M: 0.4, Q3_K_L: 0.4}
	tokens := []int32{1, 17, 42, 99, 7, 250, 3, 64}
	for _, name := range []string{"llama2-quant", "qwen2-odd-quant"} {
		s, _ := Lookup(name)
		ref := runLogits(t, s, F32, tokens)
		for _, ft := range append(quantizedTypes(), MXFP4) {
			t.Run(s.Name+" "+ft.String(), func(t *testing.T) {
				got := runLogits(t, s, ft, tokens)
				var d, n float64
				for i, v := range got {
					if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
						t.Fatalf("logit %d is %g", i, v)
					}
					e := float64(v - ref[i])
					d += e * e
					n += float64(ref[i]) * float64(ref[i])
				}
				b, ok := bound[ft]
				if !ok {
					b = 0.25
				}
				if r := math.Sqrt(d / n); r > b || r == 0 {
					t.Errorf("relative RMS difference to F32 %.4f, want in (0, %g]", r, b)
				}
			})
		}
	}
}

// runLogits writes shape s in file type ft (seed 3), loads it and returns
// the logits after decoding tokens as one batch.
func runLogits(t *testing.T, s Shape, ft FileType, tokens []int32) []float32 {
	t.Helper()
	var b bytes.Buffer
	if _, err := Write(&b, Options{Shape: s, Type: ft, Seed: 3, Threads: 2}); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.ParseBytes(b.Bytes(), gguf.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	m, err := model.Load(f)
	if err != nil {
		t.Fatalf("%s %s: %v", s.Name, ft, err)
	}
	c, err := model.NewCache(m.Config, model.KVF16, 1, 64)
	if err != nil {
		t.Fatal(err)
	}
	pool := kernels.NewPool(2)
	defer pool.Close()
	r := model.NewRunner(m, c, pool, len(tokens))
	n := len(tokens)
	batch := model.Batch{Tokens: tokens, Pos: make([]int32, n), Seq: make([]int32, n), Logits: make([]bool, n)}
	for i := range tokens {
		batch.Pos[i] = int32(i)
	}
	batch.Logits[n-1] = true
	rows, err := r.Decode(batch)
	if err != nil {
		t.Fatal(err)
	}
	return append([]float32(nil), rows[len(rows)-1]...)
}
