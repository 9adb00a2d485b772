package broker

import (
	"testing"
)

// TestDecodeEmbedRequest checks every accepted input shape and the 400s
// of bad fields.
func TestDecodeEmbedRequest(t *testing.T) {
	cases := []struct {
		name   string
		body   string
		inputs int
		ids    bool
		param  string // "" when the body is valid
	}{
		{"string", `{"model":"m","input":"hello"}`, 1, false, ""},
		{"strings", `{"input":["a","b","c"]}`, 3, false, ""},
		{"ids", `{"input":[1,2,3]}`, 1, true, ""},
		{"id arrays", `{"input":[[1,2],[3]]}`, 2, true, ""},
		{"base64", `{"input":"a","encoding_format":"base64","dimensions":8,"user":"u"}`, 1, false, ""},
		{"missing input", `{"model":"m"}`, 0, false, "input"},
		{"null input", `{"input":null}`, 0, false, "input"},
		{"empty string", `{"input":""}`, 0, false, "input"},
		{"empty array", `{"input":[]}`, 0, false, "input"},
		{"empty string item", `{"input":["a",""]}`, 0, false, "input[1]"},
		{"empty id array", `{"input":[[1],[]]}`, 0, false, "input[1]"},
		{"number input", `{"input":3}`, 0, false, "input"},
		{"object item", `{"input":["a",{}]}`, 0, false, "input[1]"},
		{"negative id", `{"input":[1,-2]}`, 0, false, "input[1]"},
		{"fractional id", `{"input":[1.5]}`, 0, false, "input[0]"},
		{"mixed ids and text", `{"input":[1,"a"]}`, 0, false, "input[1]"},
		{"bad encoding", `{"input":"a","encoding_format":"int8"}`, 0, false, "encoding_format"},
		{"encoding not a string", `{"input":"a","encoding_format":1}`, 0, false, "encoding_format"},
		{"zero dimensions", `{"input":"a","dimensions":0}`, 0, false, "dimensions"},
		{"string dimensions", `{"input":"a","dimensions":"8"}`, 0, false, "dimensions"},
		{"model not a string", `{"input":"a","model":1}`, 0, false, "model"},
		{"unknown field", `{"input":"a","pooling":"mean"}`, 0, false, "pooling"},
		{"not an object", `["a"]`, 0, false, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req, err := decodeEmbedRequest([]byte(c.body))
			if c.param == "" && c.inputs > 0 {
				if err != nil {
					t.Fatal(err)
				}
				if len(req.inputs) != c.inputs || (req.inputs[0].ids != nil) != c.ids {
					t.Fatalf("got %+v", req.inputs)
				}
				return
			}
			ae, ok := err.(*APIError)
			if !ok || ae.Status != 400 || ae.Param != c.param {
				t.Fatalf("got %v, want a 400 naming %q", err, c.param)
			}
		})
	}
	many := `{"input":[` + "\"a\"" + repeat(`,"a"`, MaxEmbedInputs) + `]}`
	if _, err := decodeEmbedRequest([]byte(many)); err == nil {
		t.Error("more than MaxEmbedInputs inputs accepted")
	}
}

func repeat(s string, n int) string {
	b := make([]byte, 0, len(s)*n)
	for range n {
		b = append(b, s...)
	}
	return string(b)
}

// FuzzDecodeEmbedRequest checks the decoder never panics and that what
// it accepts is within bounds.
func FuzzDecodeEmbedRequest(f *testing.F) {
	for _, s := range []string{`{"input":"a"}`, `{"input":[[1,2],[3]]}`, `{"input":["a","b"],"encoding_format":"base64"}`, `{"input":[1,2]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := decodeEmbedRequest(body)
		if err != nil {
			return
		}
		if len(req.inputs) == 0 || len(req.inputs) > MaxEmbedInputs {
			t.Fatalf("%d inputs", len(req.inputs))
		}
		for _, in := range req.inputs {
			if (in.text == "") == (len(in.ids) == 0) {
				t.Fatalf("input %+v", in)
			}
		}
	})
}
