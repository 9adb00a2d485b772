package sandbox

import (
	"bufio"
	"bytes"
	"io"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"github.com/lisa-llm/lisa/sandbox/seccomp"
)

// Bounds on what the broker keeps of the worker's stderr.
const (
	tailBytes    = 4096
	maxLineBytes = 4096
)

// tailWriter drains the worker's stderr pipe: it forwards each line to an
// optional writer and keeps the last tailBytes for the death report, so a
// worker writing without end costs the broker bounded memory.
type tailWriter struct {
	out   io.Writer
	outMu sync.Mutex // serialises writes to out
	mu    sync.Mutex
	buf   []byte
	done  chan struct{}
	// reasonLine is the first line that says why a Go program died: a
	// long traceback pushes it out of the tail.
	reasonLine string
}

func newTailWriter(out io.Writer) *tailWriter {
	return &tailWriter{out: out, done: make(chan struct{})}
}

// drain reads r to its end and closes it.
func (t *tailWriter) drain(r io.ReadCloser) {
	defer close(t.done)
	defer r.Close()
	br := bufio.NewReaderSize(r, maxLineBytes)
	for {
		line, err := br.ReadSlice('\n')
		if len(line) > 0 {
			t.keep(line)
			t.forward(line)
		}
		if err != nil && err != bufio.ErrBufferFull {
			return
		}
	}
}

// forward writes b to the optional output.
func (t *tailWriter) forward(b []byte) {
	if t.out == nil {
		return
	}
	t.outMu.Lock()
	defer t.outMu.Unlock()
	t.out.Write(b)
}

// logLine writes one line of the broker's own to the output.
func (t *tailWriter) logLine(s string) { t.forward([]byte(s)) }

func (t *tailWriter) keep(b []byte) {
	t.mu.Lock()
	defer t.mu.Unlock()
	line := string(bytes.ToValidUTF8(bytes.TrimRight(b, "\n"), []byte("?")))
	if t.reasonLine == "" && isReason(line) {
		t.reasonLine = limitLine(line)
	}
	t.buf = append(t.buf, b...)
	if n := len(t.buf) - tailBytes; n > 0 {
		t.buf = append(t.buf[:0], t.buf[n:]...)
	}
}

// wait blocks until the pipe reached its end.
func (t *tailWriter) wait() { <-t.done }

// String returns the kept tail.
func (t *tailWriter) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(bytes.ToValidUTF8(t.buf, []byte("?")))
}

// reason returns the first line that said why the worker died.
func (t *tailWriter) reason() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.reasonLine
}

// isReason reports whether a stderr line says why a Go program died.
func isReason(l string) bool {
	for _, p := range []string{"fatal error:", "panic:", "SIGSYS:", "runtime: out of memory", "sandbox worker:"} {
		if strings.HasPrefix(l, p) {
			return true
		}
	}
	return false
}

// syscallName names call nr of this architecture, or gives its number.
func syscallName(nr int) string {
	if a, err := seccomp.LookupArch(runtime.GOARCH); err == nil {
		if n := a.SyscallName(nr); n != "" {
			return n
		}
	}
	return "#" + strconv.Itoa(nr)
}
