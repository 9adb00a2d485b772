package tokenizer

import (
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lisa-llm/lisa/internal/shared"
)

// reference is the part of a llama.cpp reference file the tokenizer uses.
type reference struct {
	ModelFile string `json:"model_file"`
	NVocab    int    `json:"n_vocab"`
	BOS       int32  `json:"bos_id"`
	EOS       int32  `json:"eos_id"`
	AddBOS    bool   `json:"add_bos"`
	Prompts   []struct {
		Prompt             string   `json:"prompt"`
		PromptIDs          []int32  `json:"prompt_ids"`
		PromptPieces       []string `json:"prompt_pieces"`
		GeneratedIDs       []int32  `json:"generated_ids"`
		GeneratedPiecesHex []string `json:"generated_pieces_hex"`
		GeneratedTextHex   string   `json:"generated_text_hex"`
		FullText           string   `json:"full_text_detokenized"`
		FirstEOG           int      `json:"first_eog_gen_index"`
	} `json:"prompts"`
}

func TestReferenceFiles(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(shared.Path(t, "ref/reference"), "*.json"))
	if len(files) == 0 {
		t.Fatal("no reference files")
	}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var ref reference
			if err := json.Unmarshal(data, &ref); err != nil {
				t.Fatal(err)
			}
			tok := loadShared(t, filepath.Join("models", ref.ModelFile))
			if tok.NVocab() != ref.NVocab || tok.BOS() != ref.BOS || tok.EOS() != ref.EOS || tok.AddBOS() != ref.AddBOS {
				t.Errorf("vocab %d bos %d eos %d add_bos %v, want %d %d %d %v",
					tok.NVocab(), tok.BOS(), tok.EOS(), tok.AddBOS(), ref.NVocab, ref.BOS, ref.EOS, ref.AddBOS)
			}
			for i, p := range ref.Prompts {
				checkReferencePrompt(t, tok, i, p.Prompt, p.PromptIDs, p.PromptPieces)
				checkReferenceGenerated(t, tok, i, p.GeneratedIDs, p.GeneratedPiecesHex, p.GeneratedTextHex)
				all := append(append([]int32{}, p.PromptIDs...), p.GeneratedIDs...)
				if got := tok.Decode(all); got != p.FullText {
					t.Errorf("prompt %d: Decode = %q, want %q", i, got, p.FullText)
				}
				eog := -1
				for j, id := range p.GeneratedIDs {
					if tok.IsEOG(id) {
						eog = j
						break
					}
				}
				if eog != p.FirstEOG {
					t.Errorf("prompt %d: first EOG at %d, want %d", i, eog, p.FirstEOG)
				}
			}
		})
	}
}

func checkReferencePrompt(t *testing.T, tok *Tokenizer, i int, prompt string, ids []int32, pieces []string) {
	t.Helper()
	if got := tok.Encode(prompt, true, false); !equalIDs(got, ids) {
		t.Errorf("prompt %d %q: Encode = %v, want %v", i, prompt, got, ids)
	}
	for j, id := range ids {
		if j < len(pieces) && string(tok.PieceSpecial(id)) != pieces[j] {
			t.Errorf("prompt %d piece %d: %q, want %q", i, j, tok.PieceSpecial(id), pieces[j])
		}
	}
}

func checkReferenceGenerated(t *testing.T, tok *Tokenizer, i int, ids []int32, piecesHex []string, textHex string) {
	t.Helper()
	var stream strings.Builder
	d := tok.NewContinuationDecoder() // the generation follows the prompt
	for j, id := range ids {
		if j < len(piecesHex) {
			if got := hex.EncodeToString(tok.Piece(id)); got != piecesHex[j] {
				t.Errorf("prompt %d generated %d (id %d): piece %s, want %s", i, j, id, got, piecesHex[j])
			}
		}
		stream.WriteString(d.Add(id))
	}
	stream.WriteString(d.Flush())
	want, err := hex.DecodeString(textHex)
	if err != nil {
		t.Fatal(err)
	}
	if got := stream.String(); got != sanitize(string(want)) {
		t.Errorf("prompt %d: streamed %q, want %q", i, got, sanitize(string(want)))
	}
}

// sanitize replaces every byte that is not part of a valid UTF-8
// character by U+FFFD, as StreamDecoder does.
func sanitize(s string) string {
	var b strings.Builder
	for _, r := range s {
		b.WriteRune(r)
	}
	return b.String()
}
