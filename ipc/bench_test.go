package ipc

import (
	"bytes"
	"testing"

	"github.com/lisa-llm/lisa/gen"
)

func BenchmarkDecodeTokens(b *testing.B) {
	body, _ := Marshal(&Tokens{ID: 12345, Text: " the", Logprobs: []gen.TokenProb{{Token: " the", Logprob: -0.1}}})
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, err := DecodeReply(body); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeLargeText(b *testing.B) {
	body := []byte(`{"type":"tokens","id":1,"text":"`)
	body = append(body, bytes.Repeat([]byte("abc é "), (1<<20)/7)...)
	body = append(body, `"}`...)
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, err := DecodeReply(body); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkFrameRoundTrip(b *testing.B) {
	f, _ := Encode(nil, &Tokens{ID: 1, Text: "x"})
	stream := bytes.Repeat(f, 1024)
	b.SetBytes(int64(len(stream)))
	for b.Loop() {
		r := NewReader(bytes.NewReader(stream))
		for range 1024 {
			if _, err := r.ReadFrame(); err != nil {
				b.Fatal(err)
			}
		}
	}
}
