package ipc

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"runtime"
	"testing"
)

func TestFrameRoundTrip(t *testing.T) {
	bodies := [][]byte{[]byte(`{}`), []byte(`{"a":1}`), bytes.Repeat([]byte("x"), readChunk*3+17), bytes.Repeat([]byte("y"), MaxFrame)}
	var stream bytes.Buffer
	for _, b := range bodies {
		if err := WriteFrame(&stream, b); err != nil {
			t.Fatal(err)
		}
	}
	r := NewReader(&stream)
	for i, want := range bodies {
		got, err := r.ReadFrame()
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("frame %d: got %d bytes, want %d", i, len(got), len(want))
		}
	}
	if _, err := r.ReadFrame(); err != io.EOF {
		t.Fatalf("after the last frame: %v, want io.EOF", err)
	}
}

// countingReader counts the bytes read from it.
type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

func header(n uint32) []byte { return binary.BigEndian.AppendUint32(nil, n) }

func TestFrameErrors(t *testing.T) {
	tests := []struct {
		name   string
		in     []byte
		kind   Kind
		offset int64
	}{
		{"oversized", append(header(MaxFrame+1), bytes.Repeat([]byte("x"), 100)...), KindFrameSize, 0},
		{"max uint32", header(0xFFFFFFFF), KindFrameSize, 0},
		{"zero", header(0), KindFrameSize, 0},
		{"one", append(header(1), '{'), KindFrameSize, 0},
		{"short header", []byte{0, 0}, KindTruncated, 2},
		{"short body", append(header(10), `{"a":`...), KindTruncated, 9},
		{"second frame oversized", append(append(header(2), "{}"...), header(MaxFrame+1)...), KindFrameSize, 6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cr := &countingReader{r: bytes.NewReader(tt.in)}
			r := NewReader(cr)
			var err error
			for err == nil {
				_, err = r.ReadFrame()
			}
			var pe *ProtocolError
			if !errors.As(err, &pe) || pe.Kind != tt.kind || pe.Offset != tt.offset {
				t.Fatalf("got %v, want kind %v at offset %d", err, tt.kind, tt.offset)
			}
			if !errors.Is(err, ErrProtocol) {
				t.Fatalf("%v does not match ErrProtocol", err)
			}
			if tt.kind == KindFrameSize && cr.n != int(tt.offset)+4 {
				t.Fatalf("read %d bytes; an oversized length must be refused before the body is read", cr.n)
			}
		})
	}
}

func TestFrameSizeCheckedBeforeAllocation(t *testing.T) {
	allocated := func(in []byte, want Kind) uint64 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for range 10 {
			_, err := NewReader(bytes.NewReader(in)).ReadFrame()
			if KindOf(err) != want {
				t.Fatalf("got %v, want %v", err, want)
			}
		}
		runtime.ReadMemStats(&after)
		return (after.TotalAlloc - before.TotalAlloc) / 10
	}
	// Refused on its length alone: nothing near MaxFrame is allocated.
	if n := allocated(header(MaxFrame+1), KindFrameSize); n > 4096 {
		t.Fatalf("%d bytes allocated per refused frame", n)
	}
	// A frame announcing MaxFrame but sending little never allocates it all.
	if n := allocated(append(header(MaxFrame), "{}"...), KindTruncated); n > 2*readChunk {
		t.Fatalf("%d bytes allocated per truncated frame", n)
	}
}

func TestAppendFrameRefusesOversized(t *testing.T) {
	for _, n := range []int{0, 1, MaxFrame + 1} {
		if _, err := AppendFrame(nil, make([]byte, n)); KindOf(err) != KindFrameSize {
			t.Errorf("body of %d bytes: got %v, want a frame size error", n, err)
		}
	}
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

func TestFrameReadErrorWrapped(t *testing.T) {
	boom := errors.New("boom")
	_, err := NewReader(errReader{boom}).ReadFrame()
	if !errors.Is(err, boom) || errors.Is(err, ErrProtocol) {
		t.Fatalf("got %v, want the read error wrapped", err)
	}
}
