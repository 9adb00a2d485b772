package toolcall

import (
	"encoding/json"
	"reflect"
	"testing"
)

var fuzzFormats = []Format{Hermes, Mistral, Llama3, Generic}

// FuzzParse feeds arbitrary outputs to every format: no panic, every
// call has a valid name and a JSON object as arguments, and a stream
// split at an arbitrary point (and fed in small pieces) agrees with
// Parse.
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
		for _, c := range whole.Calls {
			if !validName(c.Name) || !validID(c.ID) {
				t.Fatalf("call %+v", c)
			}
			var obj map[string]any
			if err := json.Unmarshal([]byte(c.Arguments), &obj); err != nil {
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
