package tokenizer

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/lisa-llm/lisa/gguf"
	"github.com/lisa-llm/lisa/internal/shared"
)

// loadShared builds the tokenizer of a shared GGUF file.
func loadShared(t testing.TB, rel string) *Tokenizer {
	t.Helper()
	f, err := gguf.Open(shared.Path(t, rel), gguf.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tok, err := FromGGUF(f)
	if err != nil {
		t.Fatalf("%s: %v", rel, err)
	}
	return tok
}

// readVectors parses a vocabulary's .inp/.out test vectors.
func readVectors(t *testing.T, rel string) (inputs []string, want [][]int32) {
	t.Helper()
	inp, err := os.ReadFile(shared.Path(t, rel+".inp"))
	if err != nil {
		t.Fatal(err)
	}
	outp, err := os.ReadFile(shared.Path(t, rel+".out"))
	if err != nil {
		t.Fatal(err)
	}
	inputs = strings.Split(string(inp), "\n__ggml_vocab_test__\n")
	if inputs[len(inputs)-1] == "" {
		inputs = inputs[:len(inputs)-1]
	}
	lines := strings.Split(strings.TrimSuffix(string(outp), "\n"), "\n")
	if len(lines) != len(inputs) {
		t.Fatalf("%s: %d inputs, %d outputs", rel, len(inputs), len(lines))
	}
	for _, l := range lines {
		var ids []int32
		for _, f := range strings.Fields(l) {
			n, err := strconv.ParseInt(f, 10, 32)
			if err != nil {
				t.Fatalf("%s: bad id %q", rel, f)
			}
			ids = append(ids, int32(n))
		}
		want = append(want, ids)
	}
	return inputs, want
}

func TestVocabVectors(t *testing.T) {
	for _, name := range []string{"llama-spm", "gpt-2", "deepseek-llm", "starcoder", "falcon"} {
		t.Run(name, func(t *testing.T) {
			rel := "ref/vocab/ggml-vocab-" + name + ".gguf"
			tok := loadShared(t, rel)
			inputs, want := readVectors(t, rel)
			if len(inputs) != 46 {
				t.Errorf("%d test strings, want 46", len(inputs))
			}
			for i, in := range inputs {
				got := tok.Encode(in, false, false)
				if !equalIDs(got, want[i]) {
					t.Errorf("case %d %q:\n got %v\nwant %v", i, in, got, want[i])
				}
				// Vocabularies without space clean-up give the text back.
				if !tok.clean && !strings.Contains(in, "▁") {
					if back := tok.Decode(got); back != in {
						t.Errorf("case %d: Decode(Encode(%q)) = %q", i, in, back)
					}
				}
			}
		})
	}
}

func equalIDs(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
