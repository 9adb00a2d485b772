package ipc

import (
	"math"
	"unicode/utf8"
)

// The embedding message pair: the broker sends Embed, the worker answers
// with one Embedding or an Error naming Embed's id. Cancel may name a
// running Embed's id.
const (
	TypeEmbed     = "embed"
	TypeEmbedding = "embedding"
)

// Bounds of the embedding messages.
const (
	// MaxEmbedDim bounds an embedding's length (the model's hidden size).
	MaxEmbedDim = 1 << 16
	// MaxEmbedText bounds an Embed's text, in bytes.
	MaxEmbedText = 4 << 20
	// maxUnitComponent bounds a component of a unit-length vector, with
	// room for float32 rounding.
	maxUnitComponent = 1 + 1e-3
)

// Embed asks for the embedding of one input: Text, tokenized by the
// worker, or IDs, evaluated as given; exactly one of them is non-empty.
type Embed struct {
	ID   uint64  `json:"id" ipc:"required"`
	Text string  `json:"text,omitempty"`
	IDs  []int32 `json:"ids,omitempty"`
}

// Embedding answers Embed: the input's unit-length embedding and the
// number of tokens the input took.
type Embedding struct {
	ID     uint64    `json:"id" ipc:"required"`
	Vector []float32 `json:"vector" ipc:"required"`
	Tokens int       `json:"tokens" ipc:"required"`
}

// Type returns TypeEmbed.
func (*Embed) Type() string { return TypeEmbed }

// Type returns TypeEmbedding.
func (*Embedding) Type() string { return TypeEmbedding }

// RequestID returns the Embed's id.
func (m *Embed) RequestID() uint64 { return m.ID }

// RequestID returns the Embedding's id.
func (m *Embedding) RequestID() uint64 { return m.ID }

func (m *Embed) validate() error {
	switch {
	case (m.Text == "") == (len(m.IDs) == 0):
		return bad(TypeEmbed, "text", "exactly one of text and ids must be non-empty")
	case len(m.Text) > MaxEmbedText:
		return bad(TypeEmbed, "text", "%d bytes, more than %d", len(m.Text), MaxEmbedText)
	case !utf8.ValidString(m.Text):
		return bad(TypeEmbed, "text", "not valid UTF-8")
	case len(m.IDs) >= MaxTokens:
		return bad(TypeEmbed, "ids", "%d ids, more than %d", len(m.IDs), MaxTokens-1)
	}
	if err := checkIDs(TypeEmbed, "ids", m.IDs); err != nil {
		return err
	}
	return checkID(TypeEmbed, m.ID)
}

func (m *Embedding) validate() error {
	if n := len(m.Vector); n == 0 || n > MaxEmbedDim {
		return bad(TypeEmbedding, "vector", "%d values, want 1 to %d", n, MaxEmbedDim)
	}
	var ss float64
	for i, v := range m.Vector {
		f := float64(v)
		if math.IsNaN(f) || math.Abs(f) > maxUnitComponent {
			return bad(TypeEmbedding, "vector", "value %d is %v, not a unit vector's component", i, v)
		}
		ss += f * f
	}
	if math.Abs(ss-1) > 1e-3 {
		return bad(TypeEmbedding, "vector", "squared length %v, not 1", ss)
	}
	if err := checkCount(TypeEmbedding, "tokens", m.Tokens, 1); err != nil {
		return err
	}
	return checkID(TypeEmbedding, m.ID)
}
