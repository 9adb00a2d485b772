package sandbox

import (
	"strings"
	"testing"
)

// FuzzExitString feeds hostile stderr tails (the worker controls them) to
// the death-line code: one line, bounded, no panic.
func FuzzExitString(f *testing.F) {
	f.Add("SIGSYS: bad system call\nrax    0x29\n", 2)
	f.Add("fatal error: out of memory\n", 2)
	f.Add("", 0)
	f.Add("rax    0xffffffffffffffffff\nSIGSYS: bad system call", 1)
	f.Fuzz(func(t *testing.T, tail string, code int) {
		if len(tail) > tailBytes {
			tail = tail[:tailBytes]
		}
		e := Exit{Code: code, StderrTail: tail}
		s := e.String()
		if len(s) > 1200 {
			t.Fatalf("death line of %d bytes", len(s))
		}
		if strings.Count(s, "\n") != 0 {
			t.Fatalf("death line %q spans lines", s)
		}
	})
}
