// Package quantref checks package model against llama.cpp on files that
// llama.cpp's own quantizer wrote: a Llama-2-shaped model in each of the
// common llama-quantize file types, and SmolLM2- and Qwen2.5-shaped
// Q4_K_M files, whose widths are not multiples of 256, holding
// llama-quantize's Q5_0/Q8_0 fallbacks; and one file lisa's synthesizer
// wrote with every matrix MXFP4, which llama-quantize has no type for
// (its MXFP4_MOE quantizes only a mixture's experts). The files are committed gzip'ed
// in testdata (the manifest pins their SHA-256), with the teacher-forced
// references bench/llamacpp/ref.sh made from them; the test evaluates the
// same prompts and compares every position's top logits.
package quantref

import (
	"bufio"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lisa-llm/lisa/gguf"
	"github.com/lisa-llm/lisa/internal/llref"
	"github.com/lisa-llm/lisa/model"
	"github.com/lisa-llm/lisa/tensor"
	"github.com/lisa-llm/lisa/tokenizer"
)

// entry is one line of testdata/MANIFEST: a llama.cpp-quantized file,
// the types it must hold, and the reference made from it.
type entry struct {
	shape, ftype string
	sha256       string
	holds        []tensor.Type // types the file must contain
	ref          string        // reference file in testdata
}

// file is the gzip'ed model in testdata.
func (e entry) file() string { return e.shape + "-" + e.ftype + ".gguf.gz" }

func readManifest(t *testing.T) []entry {
	t.Helper()
	f, err := os.Open("testdata/MANIFEST")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var es []entry
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fs := strings.Fields(line)
		if len(fs) != 5 {
			t.Fatalf("MANIFEST line %q: want shape ftype sha256 holds reference", line)
		}
		e := entry{shape: fs[0], ftype: fs[1], sha256: fs[2], ref: fs[4]}
		for name := range strings.SplitSeq(fs[3], ",") {
			typ, ok := tensor.ParseType(name)
			if !ok {
				t.Fatalf("MANIFEST line %q: unknown type %q", line, name)
			}
			e.holds = append(e.holds, typ)
		}
		es = append(es, e)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(es) == 0 {
		t.Fatal("empty MANIFEST")
	}
	return es
}

// unpack gunzips e's file into a temporary directory and checks it is
// byte for byte the one llama.cpp wrote and was run on.
func unpack(t *testing.T, e entry) string {
	t.Helper()
	in, err := os.Open(filepath.Join("testdata", e.file()))
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	zr, err := gzip.NewReader(in)
	if err != nil {
		t.Fatalf("%s: %v", e.file(), err)
	}
	path := filepath.Join(t.TempDir(), strings.TrimSuffix(e.file(), ".gz"))
	out, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	// The files are a few hundred KiB; the cap keeps a corrupt archive
	// from filling the disk.
	n, err := io.Copy(io.MultiWriter(out, h), io.LimitReader(zr, 64<<20))
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatalf("%s: %v", e.file(), err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != e.sha256 {
		t.Fatalf("%s: %d bytes with SHA-256 %s, the reference was made from %s: regenerate (testdata/README.md)", e.file(), n, got, e.sha256)
	}
	return path
}

// typeCounts counts f's tensors per type, checks the file holds every
// type e says llama-quantize chose for it, and returns a summary for the
// log.
func typeCounts(t *testing.T, f *gguf.File, e entry) string {
	t.Helper()
	counts := map[tensor.Type]int{}
	for _, ti := range f.Tensors {
		counts[ti.Type]++
	}
	for _, typ := range e.holds {
		if counts[typ] == 0 {
			t.Errorf("%s: no %v tensor: llama-quantize's choice is not what the manifest says", e.file(), typ)
		}
	}
	var types []tensor.Type
	for typ := range counts {
		types = append(types, typ)
	}
	slices.Sort(types)
	var b strings.Builder
	for _, typ := range types {
		fmt.Fprintf(&b, " %v×%d", typ, counts[typ])
	}
	return strings.TrimSpace(b.String())
}

// evaluate is llref.Evaluate, failing t on an error.
func evaluate(t *testing.T, m *model.Model, tok *tokenizer.Tokenizer, want llref.Run, set llref.Settings, topN int) llref.Run {
	t.Helper()
	got, err := llref.Evaluate(m, tok, want, set, topN)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// logTopFlips logs each position whose top-1 differs from llama.cpp's,
// with llama.cpp's own gap between the two ids: the detail of a near tie
// Compare accepted or of a mismatch it reported.
func logTopFlips(t *testing.T, prompt int, got, want llref.Run) {
	t.Helper()
	byPos := make(map[int][]llref.Pair, len(want.Positions))
	for _, p := range want.Positions {
		byPos[p.Position] = p.Top
	}
	for _, p := range got.Positions {
		w := byPos[p.Position]
		if len(p.Top) == 0 || len(w) == 0 || p.Top[0].ID == w[0].ID {
			continue
		}
		gap := "not in llama.cpp's top list"
		for _, wp := range w {
			if wp.ID == p.Top[0].ID {
				gap = fmt.Sprintf("llama.cpp's gap %.4g", w[0].Logit-wp.Logit)
			}
		}
		t.Logf("prompt %d position %d: top-1 %d, llama.cpp %d (%s)", prompt, p.Position, p.Top[0].ID, w[0].ID, gap)
	}
}

// splitMaxDiff returns the largest logit difference on ids both rows
// list, over the prompt's rows (computed in batches) and over the rows
// of the ids fed one at a time: llama.cpp runs different kernels for the
// two, so the split says which path a difference comes from.
func splitMaxDiff(got, want llref.Run) (prompt, gen float64) {
	wl := map[[2]int]float32{}
	for _, p := range want.Positions {
		for _, q := range p.Top {
			wl[[2]int{p.Position, int(q.ID)}] = q.Logit
		}
	}
	for _, p := range got.Positions {
		for _, q := range p.Top {
			w, ok := wl[[2]int{p.Position, int(q.ID)}]
			if !ok {
				continue
			}
			d := math.Abs(float64(w) - float64(q.Logit))
			if p.Position < len(got.PromptIDs) {
				prompt = max(prompt, d)
			} else {
				gen = max(gen, d)
			}
		}
	}
	return prompt, gen
}

func TestLlamaQuantizeFilesMatchLlamaCpp(t *testing.T) {
	// Random weights have near ties that rounding may flip: a top-1 that
	// differs from llama.cpp's is accepted only within the logit
	// tolerance of it, and counted and logged (as model/familyref does).
	// The AVX2/AVX-512 path has none on these files; the pure-Go path
	// (-tags purego, other architectures) flips one.
	tol := llref.Quantized()
	tol.NearTies = true
	for _, e := range readManifest(t) {
		t.Run(e.shape+"-"+e.ftype, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", e.ref))
			if err != nil {
				t.Fatal(err)
			}
			ref, err := llref.Parse(data)
			if err != nil {
				t.Fatal(err)
			}
			f, err := gguf.Open(unpack(t, e), gguf.DefaultLimits())
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			types := typeCounts(t, f, e)
			m, err := model.Load(f)
			if err != nil {
				t.Fatalf("%s (%s): %v", e.file(), types, err)
			}
			tok, err := tokenizer.FromGGUF(f)
			if err != nil {
				t.Fatal(err)
			}
			var maxDiff, maxPrompt, maxGen float64
			nearTies, compared := 0, 0
			for i, want := range ref.Results {
				got := evaluate(t, m, tok, want, ref.Settings, tol.TopN)
				rep := llref.Compare(got, want, tol)
				if err := rep.Err(); err != nil {
					t.Errorf("prompt %d: %v", i, err)
				}
				logTopFlips(t, i, got, want)
				p, g := splitMaxDiff(got, want)
				maxPrompt, maxGen = max(maxPrompt, p), max(maxGen, g)
				maxDiff = max(maxDiff, rep.MaxDiff)
				nearTies += rep.NearTies
				compared += rep.Compared
			}
			if compared == 0 {
				t.Fatal("no position compared")
			}
			t.Logf("%s %s: %d positions, max logit difference %.4g (prompt rows %.3g, one-token rows %.3g), %d near ties; tensors %s",
				e.shape, e.ftype, compared, maxDiff, maxPrompt, maxGen, nearTies, types)
		})
	}
}
