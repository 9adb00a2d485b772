package ipc

import (
	"errors"
	"strings"
	"testing"
)

// TestEmbedViolations checks the value rules of the embedding pair, each
// naming its field.
func TestEmbedViolations(t *testing.T) {
	long := `"` + strings.Repeat("a", MaxEmbedText+1) + `"`
	tests := []struct {
		name, body, field string
		reply             bool
	}{
		{"neither input", `{"type":"embed","id":1}`, "text", false},
		{"both inputs", `{"type":"embed","id":1,"text":"a","ids":[1]}`, "text", false},
		{"text too long", `{"type":"embed","id":1,"text":` + long + `}`, "text", false},
		{"negative id", `{"type":"embed","id":1,"ids":[1,-1]}`, "ids[1]", false},
		{"id 0", `{"type":"embed","id":0,"text":"a"}`, "id", false},
		{"empty vector", `{"type":"embedding","id":1,"vector":[],"tokens":1}`, "vector", true},
		{"not unit", `{"type":"embedding","id":1,"vector":[0.5,0.5],"tokens":1}`, "vector", true},
		{"component too large", `{"type":"embedding","id":1,"vector":[3,0],"tokens":1}`, "vector", true},
		{"too long", `{"type":"embedding","id":1,"vector":[1` + strings.Repeat(",0", MaxEmbedDim) + `],"tokens":1}`, "vector", true},
		{"no tokens", `{"type":"embedding","id":1,"vector":[1],"tokens":0}`, "tokens", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dec := DecodeRequest
			if tt.reply {
				dec = DecodeReply
			}
			_, err := dec([]byte(tt.body))
			var pe *ProtocolError
			if !errors.As(err, &pe) || pe.Kind != KindBadValue || pe.Field != tt.field {
				t.Fatalf("got %v, want a bad value in %q", err, tt.field)
			}
		})
	}
	// Strict decoding applies as to every message: a mistyped or unknown
	// member is refused before the value rules.
	for _, body := range []string{`{"type":"embedding","id":1,"vector":["x"],"tokens":1}`, `{"type":"embedding","id":1,"vector":[1],"tokens":1,"pooling":"mean"}`,
		`{"type":"embedding","id":1,"tokens":1}`} {
		if _, err := DecodeReply([]byte(body)); err == nil {
			t.Errorf("%s accepted", body)
		}
	}
}

// TestTrackerEmbed checks that only an embedding (or an error) answers
// an embed.
func TestTrackerEmbed(t *testing.T) {
	tr := NewTracker()
	id := tr.Issue(ReqEmbed)
	if _, err := tr.Check(&Tokenized{ID: id}); err == nil {
		t.Fatal("tokenized accepted as the answer to embed")
	}
	if k, err := tr.Check(&Embedding{ID: id, Vector: []float32{1}, Tokens: 1}); err != nil || k != ReqEmbed {
		t.Fatalf("embedding: kind %v, %v", k, err)
	}
	if tr.Live() != 0 {
		t.Fatal("embed still live after its answer")
	}
}
