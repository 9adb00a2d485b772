package llref

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
)

// Tokenization is one (add_special, parse_special) combination of a
// tokenize reference.
type Tokenization struct {
	AddSpecial   bool    `json:"add_special"`
	ParseSpecial bool    `json:"parse_special"`
	IDs          []int32 `json:"ids"`
	// Detokenized is llama_detokenize of IDs (special tokens rendered),
	// exact bytes.
	Detokenized []byte `json:"-"`
	DetokHex    string `json:"detokenized_hex"`
}

// TokenizeCase is one string of a tokenize reference with its four
// tokenizations.
type TokenizeCase struct {
	// Text is the exact bytes tokenized.
	Text          []byte         `json:"-"`
	TextHex       string         `json:"text_hex"`
	Tokenizations []Tokenization `json:"tokenizations"`
}

// IDs returns the ids for one combination of the options.
func (c *TokenizeCase) IDs(addSpecial, parseSpecial bool) ([]int32, bool) {
	for _, t := range c.Tokenizations {
		if t.AddSpecial == addSpecial && t.ParseSpecial == parseSpecial {
			return t.IDs, true
		}
	}
	return nil, false
}

// TokenizeReference is a document printed by `ref.sh tokenize`.
type TokenizeReference struct {
	Tool      string         `json:"tool"`
	Mode      string         `json:"mode"`
	ModelFile string         `json:"model_file"`
	NVocab    int            `json:"n_vocab"`
	BOS       int32          `json:"bos_id"`
	EOS       int32          `json:"eos_id"`
	AddBOS    bool           `json:"add_bos"`
	AddEOS    bool           `json:"add_eos"`
	Results   []TokenizeCase `json:"results"`
}

// ParseTokenize reads a tokenize reference, decoding the exact bytes of
// every string from its hex twin.
func ParseTokenize(data []byte) (*TokenizeReference, error) {
	var r TokenizeReference
	if err := parseDoc(data, &r, "llref", "tokenize", func() (string, string) { return r.Tool, r.Mode }); err != nil {
		return nil, err
	}
	for i := range r.Results {
		c := &r.Results[i]
		var err error
		if c.Text, err = unhex(c.TextHex, i, "text_hex"); err != nil {
			return nil, err
		}
		if len(c.Tokenizations) != 4 {
			return nil, fmt.Errorf("llref: tokenize result %d: %d tokenizations, want 4", i, len(c.Tokenizations))
		}
		for j := range c.Tokenizations {
			t := &c.Tokenizations[j]
			if t.Detokenized, err = unhex(t.DetokHex, i, "detokenized_hex"); err != nil {
				return nil, err
			}
			if err := checkIDs(t.IDs, r.NVocab); err != nil {
				return nil, fmt.Errorf("llref: tokenize result %d: %w", i, err)
			}
		}
	}
	return &r, nil
}

// ChatMessage is one message of a chat reference's conversation.
type ChatMessage struct {
	Role string `json:"role"`
	// Content is the exact bytes of the message.
	Content    []byte `json:"-"`
	ContentHex string `json:"content_hex"`
}

// ChatCase is one conversation of a chat reference and its rendering.
type ChatCase struct {
	Messages []ChatMessage `json:"messages"`
	// Rendered is the exact prompt text; Error is set instead when the
	// renderer refused the conversation.
	Rendered    []byte `json:"-"`
	RenderedHex string `json:"rendered_hex"`
	Error       string `json:"error"`
	// IDs tokenizes Rendered as llama-server does (add_special and
	// parse_special on).
	IDs []int32 `json:"ids"`
	// IDsBOSStripped (mode chat only) tokenizes Rendered without a
	// leading BOS text when the vocabulary adds BOS.
	IDsBOSStripped []int32 `json:"ids_bos_stripped"`
}

// ChatReference is a document printed by `ref.sh chat` (Tool "llref")
// or `ref.sh chat-jinja` (Tool "llref-jinja").
type ChatReference struct {
	Tool                string     `json:"tool"`
	Mode                string     `json:"mode"`
	ModelFile           string     `json:"model_file"`
	Template            []byte     `json:"-"`
	TemplateHex         string     `json:"template_hex"`
	AddGenerationPrompt bool       `json:"add_generation_prompt"`
	EnableThinking      bool       `json:"enable_thinking"`
	Now                 int64      `json:"now"`
	Results             []ChatCase `json:"results"`
}

// ParseChat reads a chat reference of either renderer.
func ParseChat(data []byte) (*ChatReference, error) {
	var r ChatReference
	tool := "llref"
	if err := parseDoc(data, &r, "", "chat", func() (string, string) { tool = r.Tool; return r.Tool, r.Mode }); err != nil {
		return nil, err
	}
	if tool != "llref" && tool != "llref-jinja" {
		return nil, fmt.Errorf("llref: tool %q, want llref or llref-jinja", tool)
	}
	var err error
	if r.Template, err = unhex(r.TemplateHex, -1, "template_hex"); err != nil {
		return nil, err
	}
	for i := range r.Results {
		c := &r.Results[i]
		for j := range c.Messages {
			if c.Messages[j].Content, err = unhex(c.Messages[j].ContentHex, i, "content_hex"); err != nil {
				return nil, err
			}
		}
		if c.Error != "" {
			continue
		}
		if c.Rendered, err = unhex(c.RenderedHex, i, "rendered_hex"); err != nil {
			return nil, err
		}
	}
	return &r, nil
}

// parseDoc decodes data into v and checks its tool (unless tool is "")
// and mode.
func parseDoc(data []byte, v any, tool, mode string, got func() (string, string)) error {
	if len(data) > MaxDocument {
		return fmt.Errorf("llref: document of %d bytes, at most %d", len(data), MaxDocument)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("llref: %s reference: %w", mode, err)
	}
	t, m := got()
	if (tool != "" && t != tool) || m != mode {
		return fmt.Errorf("llref: tool %q mode %q, want %s", t, m, mode)
	}
	return nil
}

func unhex(s string, i int, field string) ([]byte, error) {
	b, err := hex.DecodeString(s)
	if err != nil {
		if i < 0 {
			return nil, fmt.Errorf("llref: %s: %w", field, err)
		}
		return nil, fmt.Errorf("llref: result %d: %s: %w", i, field, err)
	}
	return b, nil
}

func checkIDs(ids []int32, nVocab int) error {
	for i, id := range ids {
		if id < 0 || int(id) >= nVocab {
			return fmt.Errorf("id %d (%d) outside the vocabulary of %d", i, id, nVocab)
		}
	}
	return nil
}
