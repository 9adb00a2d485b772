// Package familyref checks package model against llama.cpp on synthesized
// files of each family's real layout: the references in testdata were
// written by bench/llamacpp/ref.sh from the very bytes synth writes here
// (the manifest pins their SHA-256), and the test evaluates the same
// prompts teacher-forced and compares every position's top logits.
package familyref

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/lisa-llm/lisa/gguf"
	"github.com/lisa-llm/lisa/internal/llref"
	"github.com/lisa-llm/lisa/model"
	"github.com/lisa-llm/lisa/model/synth"
	"github.com/lisa-llm/lisa/tokenizer"
)

// entry is one line of testdata/MANIFEST: a synthesized file and the
// reference made from it.
type entry struct {
	shape, ftype string
	seed         uint64
	sha256       string
	ref          string // reference file in testdata
	tol          llref.Tolerance
}

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
			t.Fatalf("MANIFEST line %q: want shape type seed sha256 reference", line)
		}
		seed, err := strconv.ParseUint(fs[2], 10, 64)
		if err != nil {
			t.Fatalf("MANIFEST line %q: %v", line, err)
		}
		// Random weights have near ties that the rounding of quantized
		// activations may flip: a top-1 that differs from llama.cpp's is
		// accepted only within the logit tolerance of it, and counted.
		tol := llref.Quantized()
		tol.NearTies = true
		if fs[1] == "f16" || fs[1] == "f32" {
			tol = llref.F16()
		}
		es = append(es, entry{fs[0], fs[1], seed, fs[3], fs[4], tol})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(es) == 0 {
		t.Fatal("empty MANIFEST")
	}
	return es
}

// writeModel synthesizes e's file and checks it is byte for byte the one
// llama.cpp was run on.
func writeModel(t *testing.T, e entry) string {
	t.Helper()
	sh, ok := synth.Lookup(e.shape)
	if !ok {
		t.Fatalf("unknown shape %s", e.shape)
	}
	ft, err := synth.ParseFileType(e.ftype)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), e.shape+"-"+e.ftype+".gguf")
	if _, err := synth.WriteFile(path, synth.Options{Shape: sh, Type: ft, Seed: e.seed}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != e.sha256 {
		t.Fatalf("%s %s: synth wrote a file with SHA-256 %x, the reference was made from %s: regenerate (testdata/README.md)", e.shape, e.ftype, sum, e.sha256)
	}
	return path
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

func TestFamiliesMatchLlamaCpp(t *testing.T) {
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
			path := writeModel(t, e)
			f, err := gguf.Open(path, gguf.DefaultLimits())
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			m, err := model.Load(f)
			if err != nil {
				t.Fatal(err)
			}
			tok, err := tokenizer.FromGGUF(f)
			if err != nil {
				t.Fatal(err)
			}
			for i, want := range ref.Results {
				got := evaluate(t, m, tok, want, ref.Settings, e.tol.TopN)
				rep := llref.Compare(got, want, e.tol)
				if err := rep.Err(); err != nil {
					t.Errorf("prompt %d: %v", i, err)
				}
				t.Logf("prompt %d: %s", i, fmt.Sprint(rep))
			}
		})
	}
}
