package engine

import (
	"strings"
	"testing"
)

// FuzzStopper: whatever the pieces and stop strings, the text let through
// is exactly the whole text cut before the first stop string, and nothing
// let through is ever cut later.
func FuzzStopper(f *testing.F) {
	f.Add("ab|cE|N|D!", "END", "x")
	f.Add("aa|ab", "aab", "")
	f.Add("é|ü|éx", "éx", "ü")
	f.Fuzz(func(t *testing.T, joined, stop1, stop2 string) {
		pieces := strings.Split(joined, "|")
		s := newStopper([]string{stop1, stop2})
		var sent strings.Builder
		hit := false
		for _, p := range pieces {
			out, h := s.push(p)
			sent.WriteString(out)
			if h {
				hit = true
				break
			}
		}
		if !hit {
			sent.WriteString(s.flush())
		}
		// The generation stops at the first piece that completes a stop
		// string; the text is what came before that stop's first
		// occurrence in the text so far.
		want := strings.Join(pieces, "")
		text := ""
		for _, p := range pieces {
			text += p
			cut := -1
			for _, st := range []string{stop1, stop2} {
				if i := strings.Index(text, st); st != "" && i >= 0 && (cut < 0 || i < cut) {
					cut = i
				}
			}
			if cut >= 0 {
				want = text[:cut]
				break
			}
		}
		if sent.String() != want {
			t.Fatalf("pieces %q stops %q %q: sent %q, want %q", pieces, stop1, stop2, sent.String(), want)
		}
	})
}
