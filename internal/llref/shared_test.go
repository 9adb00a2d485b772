package llref

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/lisa-llm/lisa/internal/shared"
)

// TestCommittedMatchesSharedReference checks the committed llref
// reference against the older llama.cpp reference of the same model:
// the same prompt ids, the same greedy ids, logits within the drift.
func TestCommittedMatchesSharedReference(t *testing.T) {
	// How far the llama.cpp release llref drives has moved from the
	// February 2025 build of ../shared/ref on stories260K (measured:
	// 3.1e-3 at most).
	driftTolerance := Tolerance{Name: "llama.cpp drift", TopN: 10, Abs: 5e-3}
	oldPath := shared.Path(t, filepath.Join("ref", "reference", "stories260K.gguf.json"))
	data, err := os.ReadFile(filepath.Join("testdata", "stories260K.logits.json"))
	if err != nil {
		t.Fatal(err)
	}
	ref, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	oldData, err := os.ReadFile(oldPath)
	if err != nil {
		t.Fatal(err)
	}
	var old struct {
		Prompts []struct {
			Prompt          string     `json:"prompt"`
			PromptIDs       []int32    `json:"prompt_ids"`
			GeneratedIDs    []int32    `json:"generated_ids"`
			PromptPositions []Position `json:"prompt_positions"`
			Positions       []Position `json:"positions"`
		} `json:"prompts"`
	}
	if err := json.Unmarshal(oldData, &old); err != nil {
		t.Fatal(err)
	}
	matched := 0
	for _, want := range ref.Results {
		for _, o := range old.Prompts {
			if want.Prompt == nil || o.Prompt != *want.Prompt {
				continue
			}
			matched++
			t.Run(o.Prompt, func(t *testing.T) {
				n := min(len(o.GeneratedIDs), len(want.GeneratedIDs))
				last := len(o.PromptIDs) + n - 1
				got := Run{PromptIDs: o.PromptIDs, GeneratedIDs: o.GeneratedIDs[:n]}
				seen := map[int]bool{}
				for _, p := range append(o.PromptPositions, o.Positions...) {
					if p.Position <= last && !seen[p.Position] {
						seen[p.Position] = true
						got.Positions = append(got.Positions, p)
					}
				}
				trimmed := want
				trimmed.GeneratedIDs = want.GeneratedIDs[:n]
				rep := Compare(got, trimmed, driftTolerance)
				if err := rep.Err(); err != nil {
					t.Fatal(err)
				}
				if rep.Compared != last+1 {
					t.Errorf("compared %d positions, want %d", rep.Compared, last+1)
				}
				t.Logf("%d positions, largest logit difference %.3g", rep.Compared, rep.MaxDiff)
			})
		}
	}
	if matched < 3 {
		t.Errorf("only %d prompts in both references", matched)
	}
}
