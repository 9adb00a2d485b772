package toolcall

import (
	"strings"
	"testing"
)

// BenchmarkStreamCall streams one call with 16 KiB of arguments in
// 4-byte pieces: the unfinished call is re-read on every write.
func BenchmarkStreamCall(b *testing.B) {
	text := `<tool_call>{"name": "f", "arguments": {"code": "` + strings.Repeat("x = 1; ", 16<<10/7) + `"}}</tool_call>`
	for b.Loop() {
		s, _ := NewStream(Hermes, Options{NewID: seqIDs()})
		for i := 0; i < len(text); i += 4 {
			if _, err := s.Write(text[i:min(i+4, len(text))]); err != nil {
				b.Fatal(err)
			}
		}
		if _, _, err := s.Close(); err != nil {
			b.Fatal(err)
		}
	}
}
