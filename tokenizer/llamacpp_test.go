package tokenizer

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"strconv"
	"strings"

	"flag"

	"os"
	"path/filepath"

	"testing"

	"github.com/lisa-llm/lisa/gguf"
	"github.com/lisa-llm/lisa/internal/shared"
)

// deriveDir, when set, makes TestDeriveVocabs write the derived test
// vocabularies there for bench/llamacpp/lltok.sh, which runs llama.cpp on
// them to regenerate testdata/llamacpp/expected.txt.
var deriveDir = flag.String("lltok.derive", "", "write the derived test vocabularies to this folder")

// llamaCppPreNames are the tokenizer.ggml.pre values current llama.cpp
// accepts (its llama-vocab.cpp, as built into the library lltok drives).
var llamaCppPreNames = []string{
	"default", "minicpm5", "llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral",
	"midm-2.0", "lfm2", "jina-v5-nano", "deepseek-llm", "deepseek-coder", "deepseek-v3", "spark2_5",
	"youtu", "falcon", "mpt", "starcoder", "gpt-2", "phi-2", "jina-es", "jina-de", "gigachat",
	"jina-v2-es", "jina-v2-de", "a.x-4.0", "mellum", "modern-bert", "jais-2", "gemma4",
	"granite-embed-multi-311m", "sarvam-moe", "jina-v1-en", "jina-v2-code", "roberta-bpe",
	"whitespace", "refact", "command-r", "qwen2", "deepseek-r1-qwen", "kormo", "f2llmv2", "qwen35",
	"stablelm2", "olmo", "dbrx", "smaug-bpe", "poro-chat", "glm4", "chatglm-bpe", "viking", "jais",
	"tekken", "smollm", "codeshell", "bloom", "gpt3-finnish", "exaone", "exaone4", "exaone-moe",
	"chameleon", "minerva-7b", "megrez", "gpt-4o", "llama4", "kanana2", "talkie",
	"granite-embed-multi-97m", "tiny_aya", "cohere2moe", "superbpe", "trillion", "granite-docling",
	"bailingmoe", "bailingmoe2", "llada-moe", "seed-coder", "hunyuan", "hunyuan-dense", "hy_v4",
	"joyai-llm", "kimi-k2", "ufakzeka", "grok-2", "afmoe", "laguna", "minimax-m2", "solar-open",
	"mellum2",
}

// derivedExtra are the special tokens appended to the derived
// vocabularies, so that the chat strings exercise special-token parsing
// (control and user-defined tokens, llama.cpp's gpt-oss rule that makes
// <|channel|> and friends user-defined, the tokens phi-3's rule needs).
var derivedExtra = []struct {
	text string
	ty   TokenType
}{
	{"<|im_start|>", TypeControl}, {"<|im_end|>", TypeControl}, {"<s>", TypeControl},
	{"</s>", TypeControl}, {"<unk>", TypeUnknown}, {"[INST]", TypeControl}, {"[/INST]", TypeControl},
	{"<|user|>", TypeUserDefined}, {"<mask>", TypeUserDefined}, {"<|channel|>", TypeControl},
	{"<|message|>", TypeControl}, {"<|start|>", TypeControl}, {"<|end|>", TypeControl},
	{"<|endoftext|>", TypeControl},
}

// derivedVariants names the derived vocabularies: one per pre-tokenizer
// name, plus "phi-3" and "phi-3-spm", the gpt-2 and the SentencePiece
// vocabulary with a general.name that turns on llama.cpp's phi-3 rule
// (whitespace after special tokens is dropped).
func derivedVariants() []string {
	return append(append([]string{}, llamaCppPreNames...), "phi-3", "phi-3-spm")
}

// derivedBases are the shared vocabularies the variants are derived
// from: gpt-2's for all but phi-3-spm, llama-spm's for it.
type derivedBases struct{ gpt2, spm *gguf.File }

const (
	derivedBase    = "ref/vocab/ggml-vocab-gpt-2.gguf"
	derivedBaseSPM = "ref/vocab/ggml-vocab-llama-spm.gguf"
)

// openDerivedBases opens the base vocabularies, closed when t ends.
func openDerivedBases(t *testing.T) derivedBases {
	t.Helper()
	var b derivedBases
	for _, x := range []struct {
		rel string
		dst **gguf.File
	}{{derivedBase, &b.gpt2}, {derivedBaseSPM, &b.spm}} {
		f, err := gguf.Open(shared.Path(t, x.rel), gguf.DefaultLimits())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		*x.dst = f
	}
	return b
}

// derive rewrites a base vocabulary for variant: tokenizer.ggml.pre set
// to the variant's name (kept for the phi-3 variants), the derivedExtra
// tokens the base lacks appended (with score 0 where it has scores),
// general.name set ("Phi-3 …" for the phi-3 variants) and a separator id
// added (llama.cpp insists on one for the pre names that add a
// separator). The tokenization then depends only on the pre-tokenizer
// and the flags its name sets.
func (b derivedBases) derive(variant string) ([]byte, error) {
	base, pre, name := b.gpt2, variant, "derived "+variant
	switch variant {
	case "phi-3":
		pre, name = "gpt-2", "Phi-3 derived"
	case "phi-3-spm":
		base, pre, name = b.spm, "", "Phi-3 SPM derived"
	}
	tokens, err := base.Strings(keyTokens)
	if err != nil {
		return nil, err
	}
	types, err := base.Int32s(keyTypes)
	if err != nil {
		return nil, err
	}
	scores, err := optional(base.Float32s(keyScores))
	if err != nil {
		return nil, err
	}
	have := map[string]bool{}
	for _, s := range tokens {
		have[s] = true
	}
	tokens = append([]string{}, tokens...)
	types = append([]int32{}, types...)
	scores = append([]float32(nil), scores...)
	for _, x := range derivedExtra {
		if have[x.text] {
			continue
		}
		tokens = append(tokens, x.text)
		types = append(types, int32(x.ty))
		if scores != nil {
			scores = append(scores, 0)
		}
	}
	w := gguf.NewWriter()
	for _, kv := range base.KV {
		v := kv.Value
		switch kv.Key {
		case "general.name":
			v = gguf.StringValue(name)
		case keyPre:
			if pre != "" {
				v = gguf.StringValue(pre)
			}
		case keyTokens:
			v = gguf.StringsValue(tokens)
		case keyTypes:
			v = gguf.Int32sValue(types)
		case keyScores:
			v = gguf.Float32sValue(scores)
		}
		if err := w.Add(kv.Key, v); err != nil {
			return nil, err
		}
	}
	eos, err := base.Uint32("tokenizer.ggml.eos_token_id")
	if err != nil {
		return nil, err
	}
	if err := w.Add("tokenizer.ggml.seperator_token_id", gguf.Uint32Value(eos)); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// TestDeriveVocabs writes the derived vocabularies when -lltok.derive is
// given, and otherwise checks that every variant derives and parses.
func TestDeriveVocabs(t *testing.T) {
	bases := openDerivedBases(t)
	for _, v := range derivedVariants() {
		data, err := bases.derive(v)
		if err != nil {
			t.Fatalf("%s: %v", v, err)
		}
		if *deriveDir != "" {
			if err := os.WriteFile(filepath.Join(*deriveDir, v+".gguf"), data, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		f, err := gguf.ParseBytes(data, gguf.DefaultLimits())
		if err != nil {
			t.Fatalf("%s: %v", v, err)
		}
		if got, _ := f.String(keyPre); !strings.HasPrefix(v, "phi-3") && got != v {
			t.Errorf("%s: pre %q", v, got)
		}
	}
}

// llamaCase is llama.cpp's result for one test string.
type llamaCase struct {
	plain, special []int32
	text           string // detokenized plain ids
}

// llamaBlock is a group of vocabularies with identical results.
type llamaBlock struct {
	names []string
	cases []llamaCase
}

// readExpected parses testdata/llamacpp/expected.txt (see lltok.sh): the
// blocks, and the names llama.cpp refuses.
func readExpected(t *testing.T, inputs []string) (blocks []llamaBlock, refused []string) {
	t.Helper()
	f, err := os.Open("testdata/llamacpp/expected.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	var lines [][]string // each block's lines, "^k" resolved
	var raw []string
	flush := func() {
		if len(blocks) == 0 {
			return
		}
		b := &blocks[len(blocks)-1]
		if len(raw) != len(inputs) {
			t.Fatalf("block %v: %d lines for %d inputs", b.names, len(raw), len(inputs))
		}
		for i, l := range raw {
			if ref, ok := strings.CutPrefix(l, "^"); ok {
				k, err := strconv.Atoi(ref)
				if err != nil || k < 1 || k > len(lines) {
					t.Fatalf("block %v line %d: bad reference %q", b.names, i, l)
				}
				l = lines[k-1][i]
				raw[i] = l
			}
			b.cases = append(b.cases, parseCase(t, l, inputs[i]))
		}
		lines = append(lines, raw)
	}
	for sc.Scan() {
		l := sc.Text()
		switch {
		case strings.HasPrefix(l, "#"):
		case strings.HasPrefix(l, "@ "):
			flush()
			blocks = append(blocks, llamaBlock{names: strings.Fields(l[2:])})
			raw = nil
		case strings.HasPrefix(l, "! "):
			refused = append(refused, strings.TrimSpace(l[2:]))
		default:
			raw = append(raw, l)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	flush()
	return blocks, refused
}

func parseCase(t *testing.T, line, input string) llamaCase {
	t.Helper()
	f := strings.Split(line, "\t")
	if len(f) != 3 {
		t.Fatalf("bad line %q", line)
	}
	c := llamaCase{plain: parseIDs(t, f[0]), special: parseIDs(t, f[1]), text: input}
	if f[2] != "=" {
		b, err := hex.DecodeString(f[2])
		if err != nil {
			t.Fatalf("bad hex in %q", line)
		}
		c.text = string(b)
	}
	return c
}

func parseIDs(t *testing.T, s string) []int32 {
	t.Helper()
	var ids []int32
	for _, w := range strings.Fields(s) {
		n, err := strconv.ParseInt(w, 10, 32)
		if err != nil {
			t.Fatalf("bad id %q", w)
		}
		ids = append(ids, int32(n))
	}
	return ids
}

// llamaInputs returns the test strings of expected.txt: llama.cpp's
// vocabulary test strings, then chat.inp's, then random.inp's (mixes of
// the characters, words and special tokens the pre-tokenizers treat
// differently, and the strings that found bugs).
func llamaInputs(t *testing.T) []string {
	t.Helper()
	var all []string
	for _, p := range []string{shared.Path(t, derivedBase+".inp"), "testdata/llamacpp/chat.inp",
		"testdata/llamacpp/random.inp"} {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		in := strings.Split(string(data), "\n__ggml_vocab_test__\n")
		if in[len(in)-1] == "" {
			in = in[:len(in)-1]
		}
		all = append(all, in...)
	}
	return all
}

// llamaTokenizer builds lisa's tokenizer for a name of expected.txt.
func llamaTokenizer(t *testing.T, bases derivedBases, name string) (*Tokenizer, error) {
	t.Helper()
	if v, ok := strings.CutPrefix(name, "vocab:"); ok {
		return loadShared(t, "ref/vocab/ggml-vocab-"+v+".gguf"), nil
	}
	data, err := bases.derive(name)
	if err != nil {
		t.Fatal(err)
	}
	f, err := gguf.ParseBytes(data, gguf.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	return FromGGUF(f)
}

// TestLlamaCppVectors compares lisa's tokenizer with llama.cpp's on every
// vocabulary and pre-tokenizer name of testdata/llamacpp/expected.txt,
// special parsing off and on, and the detokenized text.
func TestLlamaCppVectors(t *testing.T) {
	inputs := llamaInputs(t)
	blocks, refused := readExpected(t, inputs)
	bases := openDerivedBases(t)
	seen := map[string]bool{}
	for _, b := range blocks {
		for _, name := range b.names {
			seen[name] = true
			t.Run(name, func(t *testing.T) {
				tok, err := llamaTokenizer(t, bases, name)
				if err != nil {
					t.Fatal(err)
				}
				for i, c := range b.cases {
					in := inputs[i]
					if got := tok.Encode(in, true, false); !equalIDs(got, c.plain) {
						t.Errorf("case %d %q, special off:\n got %v\nwant %v", i, in, got, c.plain)
					}
					if got := tok.Encode(in, true, true); !equalIDs(got, c.special) {
						t.Errorf("case %d %q, special on:\n got %v\nwant %v", i, in, got, c.special)
					}
					if got := tok.Decode(c.plain); got != c.text {
						t.Errorf("case %d: Decode = %q, want %q", i, got, c.text)
					}
				}
			})
		}
	}
	for _, name := range refused {
		seen[name] = true
		t.Run(name, func(t *testing.T) {
			if _, err := llamaTokenizer(t, bases, name); err == nil {
				t.Errorf("llama.cpp refuses %q, lisa accepts it", name)
			}
		})
	}
	for _, v := range derivedVariants() {
		if !seen[v] {
			t.Errorf("%s: not in expected.txt (rerun bench/llamacpp/lltok.sh)", v)
		}
	}
}
