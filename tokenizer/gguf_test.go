package tokenizer

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/lisa-llm/lisa/gguf"
)

// writeVocab writes a vocabulary-only GGUF file with the given keys
// (a nil value deletes a key of the base set) and parses it.
func writeVocab(t *testing.T, model string, edit map[string]*gguf.Value) *gguf.File {
	t.Helper()
	tokens := []string{"<unk>", "<s>", "</s>", "▁a", "a", "Ġ", "b", "Ġb"}
	kv := map[string]gguf.Value{
		keyModel:  gguf.StringValue(model),
		keyTokens: gguf.StringsValue(tokens),
		keyScores: gguf.Float32sValue([]float32{0, 0, 0, -1, -2, -3, -4, -5}),
		keyTypes:  gguf.Int32sValue([]int32{2, 3, 3, 1, 1, 1, 1, 1}),
	}
	if model == "gpt2" {
		kv[keyMerges] = gguf.StringsValue([]string{"Ġ b"})
		kv[keyPre] = gguf.StringValue("gpt-2")
	}
	for k, v := range edit {
		if v == nil {
			delete(kv, k)
		} else {
			kv[k] = *v
		}
	}
	w := gguf.NewWriter()
	for k, v := range kv {
		if err := w.Add(k, v); err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.ParseBytes(buf.Bytes(), gguf.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func val(v gguf.Value) *gguf.Value { return &v }

func TestFromGGUF(t *testing.T) {
	tok, err := FromGGUF(writeVocab(t, "llama", nil))
	if err != nil {
		t.Fatal(err)
	}
	if tok.BOS() != 1 || tok.EOS() != 2 || !tok.AddBOS() || tok.NVocab() != 8 {
		t.Errorf("defaults: bos %d eos %d addBOS %v n %d", tok.BOS(), tok.EOS(), tok.AddBOS(), tok.NVocab())
	}
	tok, err = FromGGUF(writeVocab(t, "llama", map[string]*gguf.Value{
		"tokenizer.ggml.bos_token_id": val(gguf.Uint32Value(3)), keyAddBOS: val(gguf.BoolValue(false)),
		keyAddEOS: val(gguf.BoolValue(true)), keyScores: nil, keyTypes: nil,
	}))
	if err != nil {
		t.Fatal(err)
	}
	if tok.BOS() != 3 || tok.AddBOS() || !tok.AddEOS() || tok.Type(1) != TypeNormal {
		t.Errorf("overrides: bos %d addBOS %v addEOS %v type %d", tok.BOS(), tok.AddBOS(), tok.AddEOS(), tok.Type(1))
	}
	bpe, err := FromGGUF(writeVocab(t, "gpt2", nil))
	if err != nil {
		t.Fatal(err)
	}
	if got := bpe.Encode(" b", false, false); len(got) != 1 || got[0] != 7 {
		t.Errorf("merge not applied: %v", got)
	}
	if bpe.BOS() != None || bpe.EOS() != None {
		t.Errorf("default BOS/EOS 11 outside the vocabulary kept: %d %d", bpe.BOS(), bpe.EOS())
	}
	tmpl, err := ChatTemplate(writeVocab(t, "llama", map[string]*gguf.Value{KeyChatTemplate: val(gguf.StringValue("chatml"))}))
	if err != nil || tmpl != "chatml" {
		t.Errorf("ChatTemplate = %q, %v", tmpl, err)
	}
}

func TestFromGGUFRejects(t *testing.T) {
	cases := []struct {
		name  string
		model string
		edit  map[string]*gguf.Value
		key   string
	}{
		{"no model", "llama", map[string]*gguf.Value{keyModel: nil}, keyModel},
		{"unknown model", "bert", nil, keyModel},
		{"no tokens", "llama", map[string]*gguf.Value{keyTokens: nil}, keyTokens},
		{"tokens not strings", "llama", map[string]*gguf.Value{keyTokens: val(gguf.Int32sValue([]int32{1}))}, keyTokens},
		{"scores wrong type", "llama", map[string]*gguf.Value{keyScores: val(gguf.StringValue("x"))}, keyScores},
		{"scores short", "llama", map[string]*gguf.Value{keyScores: val(gguf.Float32sValue([]float32{1}))}, keyScores},
		{"types short", "llama", map[string]*gguf.Value{keyTypes: val(gguf.Int32sValue([]int32{1, 1}))}, keyTypes},
		{"bos out of range", "llama", map[string]*gguf.Value{"tokenizer.ggml.bos_token_id": val(gguf.Uint32Value(70000))}, "tokenizer.ggml.bos_token_id"},
		{"eos negative", "llama", map[string]*gguf.Value{"tokenizer.ggml.eos_token_id": val(gguf.Int32Value(-3))}, "tokenizer.ggml.eos_token_id"},
		{"add_bos not bool", "llama", map[string]*gguf.Value{keyAddBOS: val(gguf.StringValue("yes"))}, keyAddBOS},
		{"no merges", "gpt2", map[string]*gguf.Value{keyMerges: nil}, keyMerges},
		{"bad pre", "gpt2", map[string]*gguf.Value{keyPre: val(gguf.StringValue("klingon"))}, keyPre},
		{"duplicate token", "llama", map[string]*gguf.Value{keyTokens: val(gguf.StringsValue([]string{"a", "b", "c", "a", "d", "e", "f", "g"}))}, keyTokens},
	}
	for _, c := range cases {
		_, err := FromGGUF(writeVocab(t, c.model, c.edit))
		if err == nil || !strings.Contains(err.Error(), c.key) {
			t.Errorf("%s: err = %v, want one naming %s", c.name, err, c.key)
		}
	}
	_, err := FromGGUF(writeVocab(t, "llama", map[string]*gguf.Value{keyTokens: nil}))
	if !errors.Is(err, gguf.ErrNotFound) {
		t.Errorf("missing tokens: %v does not wrap gguf.ErrNotFound", err)
	}
}
