package vocab

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"

	"github.com/lisa-llm/lisa/gguf"
	"github.com/lisa-llm/lisa/tokenizer"
)

// The real layouts, typed from the models' tokenizer.json and
// tokenizer_config.json: ids and types of the special tokens, and the
// special ids the GGUF files state.
var realSpecs = []struct {
	name          string
	spec          Spec
	pre           string
	specials      map[int]string // id → text
	types         map[int]int32  // id → token type
	bos, eos      int32
	unk, pad      int32
	addBOS        bool   // the tokenizer adds BOS (key or llama.cpp's default)
	addBOSKey     bool   // the file states add_bos_token
	bytesAt       int    // id of the first byte token
	firstByteText string // its text
}{
	{"llama-3.1", Spec{Llama3, 128256, 128000, "llama-3.1"}, "llama-bpe",
		map[int]string{128000: "<|begin_of_text|>", 128001: "<|end_of_text|>", 128004: "<|finetune_right_pad_id|>",
			128006: "<|start_header_id|>", 128007: "<|end_header_id|>", 128008: "<|eom_id|>", 128009: "<|eot_id|>",
			128010: "<|python_tag|>", 128011: "<|reserved_special_token_3|>", 128255: "<|reserved_special_token_247|>"},
		map[int]int32{128000: TypeControl, 128255: TypeControl, 127999: TypeNormal, 0: TypeNormal},
		128000, 128009, -1, -1, true, false, 0, "!"},
	{"qwen2.5", Spec{Qwen2, 151936, 151643, "qwen2.5"}, "qwen2",
		map[int]string{151643: "<|endoftext|>", 151644: "<|im_start|>", 151645: "<|im_end|>", 151657: "<tool_call>",
			151658: "</tool_call>", 151659: "<|fim_prefix|>", 151664: "<|file_sep|>", 151665: "[PAD151665]", 151935: "[PAD151935]"},
		map[int]int32{151643: TypeControl, 151657: TypeUserDefined, 151664: TypeControl, 151665: TypeUnused, 151935: TypeUnused},
		151643, 151645, -1, 151643, false, true, 0, "!"},
	{"qwen2.5-7b", Spec{Qwen2, 152064, 151643, "qwen2.5"}, "qwen2",
		map[int]string{151645: "<|im_end|>", 152063: "[PAD152063]"},
		map[int]int32{152063: TypeUnused},
		151643, 151645, -1, 151643, false, true, 0, "!"},
	{"qwen3", Spec{Qwen3, 151936, 151643, "qwen3"}, "qwen2",
		map[int]string{151643: "<|endoftext|>", 151645: "<|im_end|>", 151665: "<tool_response>", 151666: "</tool_response>",
			151667: "<think>", 151668: "</think>", 151669: "[PAD151669]"},
		map[int]int32{151667: TypeUserDefined, 151668: TypeUserDefined, 151669: TypeUnused},
		151643, 151645, -1, 151643, false, true, 0, "!"},
	{"granite-3.1", Spec{Granite, 49155, 49152, "granite-3.1"}, "refact",
		map[int]string{0: "<|end_of_text|>", 1: "<fim_prefix>", 18: "<reponame>", 49152: "<|start_of_role|>",
			49153: "<|end_of_role|>", 49154: "<|tool_call|>"},
		map[int]int32{0: TypeControl, 18: TypeControl, 19: TypeNormal, 49154: TypeControl},
		0, 0, 0, 0, false, true, 19, "!"},
	{"tekken", Spec{Tekken, 131072, 0, "mistral-nemo"}, "tekken",
		map[int]string{0: "<unk>", 1: "<s>", 2: "</s>", 3: "[INST]", 4: "[/INST]", 9: "[TOOL_CALLS]", 999: "<SPECIAL_999>",
			1032: "Ġ", 1044: ","},
		map[int]int32{0: TypeControl, 999: TypeControl, 1000: TypeNormal},
		1, 2, 0, -1, true, true, 1000, "Ā"},
	// SentencePiece layouts (spm.go): the specials of Gemma 2's and 3's
	// tokenizer_config.json, Phi-3.5-mini's added tokens and padding.
	{"gemma-2", Spec{Gemma2, 256000, 0, "gemma-2"}, "default",
		map[int]string{0: "<pad>", 1: "<eos>", 2: "<bos>", 3: "<unk>", 106: "<start_of_turn>", 107: "<end_of_turn>"},
		map[int]int32{0: TypeControl, 3: TypeUnknown, 106: TypeControl, 107: TypeControl, 108: TypeByte},
		2, 1, 3, 0, true, true, 108, "<0x00>"},
	{"gemma-3", Spec{Gemma3, 262144, 0, "gemma-3"}, "default",
		map[int]string{1: "<eos>", 2: "<bos>", 5: "[multimodal]", 105: "<start_of_turn>", 106: "<end_of_turn>"},
		map[int]int32{2: TypeControl, 105: TypeControl, 106: TypeControl, 107: TypeByte},
		2, 1, 3, 0, true, true, 107, "<0x00>"},
	{"phi-3.5", Spec{Phi3, 32064, 32000, "phi-3.5"}, "default",
		map[int]string{0: "<unk>", 1: "<s>", 2: "</s>", 32000: "<|endoftext|>", 32001: "<|assistant|>", 32006: "<|system|>",
			32007: "<|end|>", 32010: "<|user|>", 32011: "[PAD1]", 32063: "[PAD53]"},
		map[int]int32{0: TypeUnknown, 1: TypeControl, 3: TypeByte, 32007: TypeControl, 32011: TypeUnused},
		1, 32000, 0, 32000, false, true, 3, "<0x00>"},
	{"phi-4-mini", Spec{Phi4Mini, 200064, 199999, "phi-4-mini"}, "gpt-4o",
		map[int]string{199999: "<|endoftext|>", 200000: "[PAD200000]", 200017: "[PAD200017]", 200018: "<|endofprompt|>",
			200019: "<|assistant|>", 200020: "<|end|>", 200021: "<|user|>", 200022: "<|system|>", 200028: "<|tag|>",
			200029: "[PAD200029]", 200063: "[PAD200063]"},
		map[int]int32{199999: TypeControl, 200000: TypeUnused, 200020: TypeControl, 200028: TypeControl, 200063: TypeUnused},
		199999, 199999, -1, 199999, false, true, 0, "!"},
	// gpt-oss's tokenizer_config.json: 21 added tokens, all special;
	// bos <|startoftext|>, eos <|return|>, pad <|endoftext|>, no
	// add_bos_token (gpt-4o's default: no BOS).
	{"gpt-oss", Spec{GptOss, 201088, 199998, "gpt-oss"}, "gpt-4o",
		map[int]string{199998: "<|startoftext|>", 199999: "<|endoftext|>", 200000: "<|reserved_200000|>", 200002: "<|return|>",
			200003: "<|constrain|>", 200004: "<|reserved_200004|>", 200005: "<|channel|>", 200006: "<|start|>", 200007: "<|end|>",
			200008: "<|message|>", 200011: "<|reserved_200011|>", 200012: "<|call|>", 200017: "<|reserved_200017|>",
			200018: "<|endofprompt|>", 200019: "[PAD200019]", 201087: "[PAD201087]"},
		map[int]int32{199997: TypeNormal, 199998: TypeControl, 200000: TypeControl, 200012: TypeControl, 200018: TypeControl,
			200019: TypeUnused, 201087: TypeUnused},
		199998, 200002, -1, 199999, false, false, 0, "!"},
	{"mixtral", Spec{Mistral, 32000, 0, "mixtral"}, "default",
		map[int]string{0: "<unk>", 1: "<s>", 2: "</s>", 259: "▁"},
		map[int]int32{0: TypeUnknown, 1: TypeControl, 2: TypeControl, 3: TypeByte, 258: TypeByte, 259: TypeNormal},
		1, 2, 0, -1, true, true, 3, "<0x00>"},
}

// vocabFile writes v's metadata into a GGUF file with no tensors.
func vocabFile(t *testing.T, v *Vocab) *gguf.File {
	t.Helper()
	w := gguf.NewWriter()
	for _, kv := range v.KVs() {
		if err := w.Add(kv.Key, kv.Value); err != nil {
			t.Fatal(err)
		}
	}
	var b bytes.Buffer
	if _, err := w.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.ParseBytes(b.Bytes(), gguf.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestBuildRealLayouts checks the special tokens, types, ids and keys of
// each family at its real size, that every token is distinct, and that
// every merge joins two tokens into a token.
func TestBuildRealLayouts(t *testing.T) {
	for _, tc := range realSpecs {
		t.Run(tc.name, func(t *testing.T) {
			v, err := Build(tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			if len(v.Tokens) != tc.spec.NVocab || len(v.Types) != tc.spec.NVocab {
				t.Fatalf("%d tokens, %d types; want %d", len(v.Tokens), len(v.Types), tc.spec.NVocab)
			}
			for id, text := range tc.specials {
				if v.Tokens[id] != text {
					t.Errorf("token %d is %q, want %q", id, v.Tokens[id], text)
				}
			}
			for id, ty := range tc.types {
				if v.Types[id] != ty {
					t.Errorf("token %d (%q) has type %d, want %d", id, v.Tokens[id], v.Types[id], ty)
				}
			}
			if v.Tokens[tc.bytesAt] != tc.firstByteText {
				t.Errorf("first byte token %d is %q, want %q", tc.bytesAt, v.Tokens[tc.bytesAt], tc.firstByteText)
			}
			if v.BOS != tc.bos || v.EOS != tc.eos || v.UNK != tc.unk || v.PAD != tc.pad || v.Pre != tc.pre {
				t.Errorf("bos %d eos %d unk %d pad %d pre %q; want %d %d %d %d %q",
					v.BOS, v.EOS, v.UNK, v.PAD, v.Pre, tc.bos, tc.eos, tc.unk, tc.pad, tc.pre)
			}
			if (v.AddBOS != nil) != tc.addBOSKey || v.AddBOS != nil && *v.AddBOS != tc.addBOS {
				t.Errorf("add_bos_token %v, want present %v, value %v", v.AddBOS, tc.addBOSKey, tc.addBOS)
			}
			ids := map[string]int{}
			for i, tok := range v.Tokens {
				if j, dup := ids[tok]; dup {
					t.Fatalf("tokens %d and %d are both %q", j, i, tok)
				}
				ids[tok] = i
			}
			if v.Model == "llama" {
				// SentencePiece: learned pieces in place of merges, each
				// scored, the earlier ones higher.
				n := 0
				for i, tok := range v.Tokens {
					if v.Types[i] == TypeNormal && !strings.HasPrefix(tok, "[synth") && len([]rune(tok)) > 1 {
						n++
					}
				}
				if n < 2000 || len(v.Scores) != len(v.Tokens) {
					t.Errorf("%d learned pieces, %d scores", n, len(v.Scores))
				}
			} else if len(v.Merges) < 2000 {
				t.Errorf("only %d merges", len(v.Merges))
			}
			for i, m := range v.Merges {
				l, r, ok := strings.Cut(m, " ")
				_, okl := ids[l]
				_, okr := ids[r]
				_, okj := ids[l+r]
				if !ok || !okl || !okr || !okj {
					t.Fatalf("merge %d %q: parts or result not in the vocabulary", i, m)
				}
			}
			if v.ChatTemplate == "" {
				t.Error("no chat template")
			}
		})
	}
}

// TestTokenizerRoundTrip loads each vocabulary with package tokenizer,
// checks text round-trips, that the merges shorten English, and that the
// chat template's special tokens are parsed as single tokens.
func TestTokenizerRoundTrip(t *testing.T) {
	texts := []string{
		"Hello, world! The quick brown fox jumps over the lazy dog.",
		"func main() {\n\tfmt.Println(\"héllo wörld\", 42)\n}\n",
		"日本語のテキスト and emoji 🦙 with  double  spaces\r\n\ttabs",
		"",
	}
	for _, tc := range realSpecs {
		t.Run(tc.name, func(t *testing.T) {
			v, err := Build(tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			tok, err := tokenizer.FromGGUF(vocabFile(t, v))
			if err != nil {
				t.Fatal(err)
			}
			if tok.NVocab() != tc.spec.NVocab {
				t.Errorf("NVocab %d", tok.NVocab())
			}
			for _, s := range texts {
				ids := tok.Encode(s, false, false)
				if got := tok.Decode(ids); got != s {
					t.Errorf("%q round-trips to %q", s, got)
				}
				for _, id := range ids {
					if v.Types[id] == TypeByte && v.Model == "llama" {
						continue // SentencePiece's byte fallback
					}
					if v.Types[id] != TypeNormal || strings.HasPrefix(v.Tokens[id], "[synth") {
						t.Errorf("%q: token %d %q is not a learned one", s, id, v.Tokens[id])
					}
				}
			}
			en := texts[0]
			if n := len(tok.Encode(en, false, false)); n*2 > len(en) {
				t.Errorf("%d tokens for %d bytes of English: merges not used", n, len(en))
			}
			for id, text := range tc.specials {
				// Special parsing finds control and user-defined tokens, not
				// the normal ones the table names (tekken's byte tokens).
				if typ := v.Types[id]; typ == TypeUnused || typ == TypeNormal {
					continue
				}
				ids := tok.Encode("a"+text+"b", false, true)
				if !containsID(ids, int32(id)) {
					t.Errorf("%q parsed as %v, want id %d among them", text, ids, id)
				}
			}
			if got := tok.Encode("x", true, false); tc.addBOS != (len(got) > 0 && got[0] == tc.bos) {
				t.Errorf("add_bos %v, Encode(addSpecial) gives %v", tc.addBOS, got)
			}
		})
	}
}

func containsID(ids []int32, id int32) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

// TestBuildDeterministic checks two builds are equal and a small layout
// keeps the specials at the moved ids.
func TestBuildDeterministic(t *testing.T) {
	s := Spec{Qwen3, 4096, 3840, "qwen3"}
	a, err := Build(s)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Build(s)
	if fmt.Sprint(a.Tokens, a.Merges, a.Types) != fmt.Sprint(b.Tokens, b.Merges, b.Types) {
		t.Fatal("two builds differ")
	}
	if a.Tokens[3840] != "<|endoftext|>" || a.Tokens[3840+24] != "<think>" || a.EOS != 3842 || a.PAD != 3840 {
		t.Errorf("moved specials: %q %q eos %d pad %d", a.Tokens[3840], a.Tokens[3864], a.EOS, a.PAD)
	}
}

// TestBuildErrors checks impossible layouts are refused.
func TestBuildErrors(t *testing.T) {
	for _, s := range []Spec{
		{Family: 0, NVocab: 1000},
		{Family: Llama3, NVocab: 1000, SpecialAt: 100}, // no room for the bytes
		{Family: Llama3, NVocab: 1000, SpecialAt: 700}, // specials do not end the vocabulary
		{Family: Qwen2, NVocab: 1000, SpecialAt: 990},  // specials past the end
		{Family: Tekken, NVocab: 1200},                 // no room for the bytes after the controls
		{Family: Granite, NVocab: 4099, SpecialAt: 4096, Template: "nope"},
		{Family: Gemma2, NVocab: 300},                 // no room for the bytes after the controls
		{Family: Phi3, NVocab: 4096, SpecialAt: 4090}, // the trailing tokens past the end
		{Family: Phi3, NVocab: 4096, SpecialAt: 3000, Template: "nope"},
	} {
		if _, err := Build(s); err == nil {
			t.Errorf("Build(%+v) succeeded", s)
		}
	}
}

// TestTemplates checks each template is there and has its family's
// markers.
func TestTemplates(t *testing.T) {
	want := map[string]string{
		"llama-3.1": "<|start_header_id|>", "llama-3.2": "<|eot_id|>", "qwen2.5": "<|im_start|>",
		"qwen3": "enable_thinking", "granite-3.1": "<|start_of_role|>", "mistral-nemo": "[INST]",
		"gemma-2": "System role not supported", "gemma-3": "first_user_prefix", "phi-3.5": "<|assistant|>",
		"phi-4-mini": "<|tool|>", "mixtral": "' [INST] '", "gpt-oss": "<|channel|>analysis<|message|>",
	}
	if len(Templates()) != len(want) {
		t.Errorf("templates %v", Templates())
	}
	for name, marker := range want {
		s, err := Template(name)
		if err != nil || !strings.Contains(s, marker) {
			t.Errorf("%s: %v, marker %q missing", name, err, marker)
		}
	}
}

// TestGptOssTemplateBytes pins gpt-oss's template to the published bytes
// (llama.cpp's models/templates/openai-gpt-oss-120b.jinja, the same text
// as the 20b model's): another package embeds the identical file, and an
// edit here would make the two renderings differ.
func TestGptOssTemplateBytes(t *testing.T) {
	s, err := Template("gpt-oss")
	if err != nil {
		t.Fatal(err)
	}
	const want = "a4c9919cbbd4acdd51ccffe22da049264b1b73e59055fa58811a99efbd7c8146"
	if sum := sha256.Sum256([]byte(s)); hex.EncodeToString(sum[:]) != want || len(s) != 16738 {
		t.Errorf("gpt-oss.jinja: %d bytes, SHA-256 %x; want 16738 bytes, %s", len(s), sum, want)
	}
}
