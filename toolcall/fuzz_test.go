package toolcall

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

var fuzzFormats = []Format{Hermes, Mistral, Llama3, Generic}

// FuzzParse feeds arbitrary outputs to every format: no panic, every
// call has a valid name and a JSON object as arguments (but the last of
// a broken output, which keeps what was read), and a stream split at an
// arbitrary point (and fed in small pieces) agrees with Parse: the same
// content, and the pieces of each call join to its arguments exactly.
func FuzzParse(f *testing.F) {
	for _, c := range parseCases {
		for i, ff := range fuzzFormats {
			if ff == c.f {
				f.Add(uint8(i), c.out, uint16(len(c.out)/2), uint8(3))
			}
		}
	}
	f.Fuzz(func(t *testing.T, fi uint8, out string, cut uint16, step uint8) {
		if len(out) > 1<<14 {
			return
		}
		format := fuzzFormats[int(fi)%len(fuzzFormats)]
		whole, err := Parse(format, out, Options{NewID: seqIDs()})
		if err != nil {
			t.Fatal(err)
		}
		for i, c := range whole.Calls {
			if !validName(c.Name) || !validID(c.ID) {
				t.Fatalf("call %+v", c)
			}
			var obj map[string]any
			if err := json.Unmarshal([]byte(c.Arguments), &obj); err != nil && (whole.Err == nil || i < len(whole.Calls)-1) {
				// Only the last call of a broken output may have
				// arguments cut off.
				t.Fatalf("arguments %q: %v", c.Arguments, err)
			}
		}
		k := int(cut) % (len(out) + 1)
		var pieces []string
		pieces = append(pieces, out[:k])
		n := int(step)%7 + 1
		for i := k; i < len(out); i += n {
			pieces = append(pieces, out[i:min(i+n, len(out))])
		}
		content, calls, r := streamAll(t, format, Options{NewID: seqIDs()}, pieces)
		if content != whole.Content || !reflect.DeepEqual(calls, whole.Calls) || !reflect.DeepEqual(r, whole) {
			t.Fatalf("pieces %q:\nstreamed %q %+v\nparse    %q %+v", pieces, content, calls, whole.Content, whole.Calls)
		}
	})
}

// FuzzScanValue checks the streaming JSON scanner against encoding/json:
// a text it reads as one whole value is valid JSON and compacts as
// json.Compact does, a valid object is read whole, and resumed where a
// shorter text ended, it says what it says at once.
func FuzzScanValue(f *testing.F) {
	for _, s := range []string{`{"a": [1, -2.5e+3, true, null], "b": {"c": "\u00e9\n"}}`, `{"a":01}`, `{"a" 1}`, `[1,]`, `{"x": "\q"}`, `{}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) == 0 || s[0] != '{' {
			return
		}
		end, st := scanValue(s, 0)
		if end < 0 || end > len(s) {
			t.Fatalf("end %d of %d", end, len(s))
		}
		// Read in two pieces, resuming, the scanner says the same.
		for _, k := range []int{len(s) / 2, len(s) / 3, len(s) - 1} {
			var sc jsonScan
			e, st2 := sc.feed(s[:k], 0)
			if st2 == incomplete {
				e, st2 = sc.feed(s, k)
			}
			if e != end || st2 != st {
				t.Fatalf("%q resumed at %d: %v at %d, at once %v at %d", s, k, st2, e, st, end)
			}
		}
		valid := json.Valid([]byte(s))
		if st == done {
			if !json.Valid([]byte(s[:end])) {
				t.Fatalf("%q read whole to %d, not JSON", s, end)
			}
			var b bytes.Buffer
			if err := json.Compact(&b, []byte(s[:end])); err != nil || b.String() != compact(s[:end]) {
				t.Fatalf("compact %q = %q, json.Compact %q", s[:end], compact(s[:end]), b.String())
			}
		}
		if valid && (st != done || strings.TrimSpace(s[end:]) != "") {
			t.Fatalf("valid %q read as %v to %d", s, st, end)
		}
	})
}
