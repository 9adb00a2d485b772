package ipc

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// MaxFrame is the largest frame body, in bytes (16 MiB).
const MaxFrame = 16 << 20

// minFrame is the smallest body that can hold a JSON object ("{}").
const minFrame = 2

// readChunk bounds each allocation while a frame body is read, so a length
// prefix alone never makes the reader allocate MaxFrame.
const readChunk = 256 << 10

// Reader reads frames from a stream.
type Reader struct {
	r   io.Reader
	off int64 // bytes consumed so far
	hdr [4]byte
}

// NewReader returns a Reader of frames from r. It does not buffer: it
// reads exactly the frames' bytes, so a refused length leaves the body
// unread.
func NewReader(r io.Reader) *Reader { return &Reader{r: r} }

// Offset returns the number of bytes read so far.
func (r *Reader) Offset() int64 { return r.off }

// ReadFrame returns the next frame's body. It returns io.EOF when the
// stream ends cleanly between frames, and a *ProtocolError for a length
// outside [2, MaxFrame] (checked before allocating) or a stream that ends
// inside a frame. Other read errors are returned wrapped.
func (r *Reader) ReadFrame() ([]byte, error) {
	start := r.off
	n, err := io.ReadFull(r.r, r.hdr[:])
	r.off += int64(n)
	switch {
	case err == io.EOF:
		return nil, io.EOF
	case errors.Is(err, io.ErrUnexpectedEOF):
		return nil, &ProtocolError{Kind: KindTruncated, Offset: r.off, Detail: fmt.Sprintf("stream ended after %d of 4 length bytes", n)}
	case err != nil:
		return nil, fmt.Errorf("ipc: read frame length: %w", err)
	}
	size := binary.BigEndian.Uint32(r.hdr[:])
	if size > MaxFrame || size < minFrame {
		return nil, &ProtocolError{Kind: KindFrameSize, Offset: start,
			Detail: fmt.Sprintf("frame length %d outside %d..%d", size, minFrame, MaxFrame)}
	}
	body := make([]byte, 0, min(int(size), readChunk))
	for len(body) < int(size) {
		want := min(int(size)-len(body), readChunk)
		if cap(body)-len(body) < want {
			grown := make([]byte, len(body), min(int(size), 2*cap(body)+want))
			copy(grown, body)
			body = grown
		}
		got, err := io.ReadFull(r.r, body[len(body):len(body)+want])
		body = body[:len(body)+got]
		r.off += int64(got)
		if err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, &ProtocolError{Kind: KindTruncated, Offset: r.off,
				Detail: fmt.Sprintf("stream ended after %d of %d body bytes", len(body), size)}
		}
		if err != nil {
			return nil, fmt.Errorf("ipc: read frame body: %w", err)
		}
	}
	return body, nil
}

// AppendFrame appends body as one frame (length prefix and body) to dst.
func AppendFrame(dst, body []byte) ([]byte, error) {
	if len(body) > MaxFrame || len(body) < minFrame {
		return dst, &ProtocolError{Kind: KindFrameSize, Offset: -1,
			Detail: fmt.Sprintf("frame length %d outside %d..%d", len(body), minFrame, MaxFrame)}
	}
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(body)))
	return append(dst, body...), nil
}

// WriteFrame writes body to w as one frame with a single Write call.
func WriteFrame(w io.Writer, body []byte) error {
	f, err := AppendFrame(make([]byte, 0, 4+len(body)), body)
	if err != nil {
		return err
	}
	if _, err := w.Write(f); err != nil {
		return fmt.Errorf("ipc: write frame: %w", err)
	}
	return nil
}
