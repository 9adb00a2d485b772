package ipc

import (
	"bytes"
	"testing"
)

// FuzzReadFrame feeds arbitrary streams to the frame reader: it must never
// panic, must return only bodies within the limits, and the frames it
// returns must re-encode to the bytes it consumed.
func FuzzReadFrame(f *testing.F) {
	for _, m := range append(sampleRequests(), sampleReplies()...) {
		fr, _ := Encode(nil, m)
		f.Add(fr)
	}
	f.Add(header(MaxFrame + 1))
	f.Add([]byte{0, 0, 0, 2, '{', '}', 0, 0})
	f.Fuzz(func(t *testing.T, in []byte) {
		r := NewReader(bytes.NewReader(in))
		var again []byte
		for {
			body, err := r.ReadFrame()
			if err != nil {
				break
			}
			if len(body) < minFrame || len(body) > MaxFrame {
				t.Fatalf("body of %d bytes", len(body))
			}
			again, _ = AppendFrame(again, body)
		}
		if !bytes.HasPrefix(in, again) {
			t.Fatal("re-encoded frames differ from the input")
		}
	})
}

// FuzzDecodeReply feeds arbitrary bodies to the worker→broker decoder. A
// body it accepts must re-encode to a body it accepts again, identically.
func FuzzDecodeReply(f *testing.F) {
	for _, m := range sampleReplies() {
		b, _ := Marshal(m)
		f.Add(b)
	}
	f.Add([]byte(`{"type":"tokens","id":1,"text":"\ud800"}`))
	f.Add([]byte(`{"type":"error","id":1,"id":2,"message":"x"}`))
	f.Add([]byte(`{"type":"progress","id":1,"tensors":3,"tensors_total":2,"bytes":0,"bytes_total":0,"elapsed_us":0}`))
	f.Add([]byte(`{"type":"progress","id":1,"tensors":0,"tensors_total":0,"bytes":0,"bytes_total":-1,"elapsed_us":1e3}`))
	f.Fuzz(func(t *testing.T, body []byte) { roundTrip(t, body, DecodeReply) })
}

// FuzzDecodeRequest does the same for the broker→worker decoder.
func FuzzDecodeRequest(f *testing.F) {
	for _, m := range sampleRequests() {
		b, _ := Marshal(m)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, body []byte) { roundTrip(t, body, DecodeRequest) })
}

func roundTrip(t *testing.T, body []byte, dec func([]byte) (Message, error)) {
	m, err := dec(body)
	if err != nil {
		if KindOf(err) == 0 {
			t.Fatalf("error without a kind: %v", err)
		}
		return
	}
	b1, err := Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	m2, err := dec(b1)
	if err != nil {
		t.Fatalf("re-encoded %s refused: %v", b1, err)
	}
	b2, _ := Marshal(m2)
	if !bytes.Equal(b1, b2) {
		t.Fatalf("re-encoding changed:\n%s\n%s", b1, b2)
	}
}
