package sandbox

import (
	"bufio"
	"bytes"
	"io"
	"regexp"
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
	// reason is the first line that says why a Go program died, and rax
	// the register line of a SIGSYS report: a long traceback pushes both
	// out of the tail.
	reason, rax string
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
	if t.reason == "" && isReason(line) {
		t.reason = limitLine(line)
	}
	if t.rax == "" && strings.HasPrefix(t.reason, "SIGSYS:") && raxLine.MatchString(line) {
		t.rax = line
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

// notable returns the reason line and the SIGSYS report's rax line.
func (t *tailWriter) notable() (reason, rax string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.reason, t.rax
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

// raxLine matches the rax line of the register dump the Go runtime prints
// for a fatal SIGSYS (a seccomp trap): the call number is in rax.
var raxLine = regexp.MustCompile(`(?m)^rax\s+0x([0-9a-f]+)\s*$`)

// trappedSyscall finds the number of the call a seccomp trap refused in a
// Go crash report.
func trappedSyscall(tail string) (int, bool) {
	if !bytes.Contains([]byte(tail), []byte("SIGSYS: bad system call")) {
		return 0, false
	}
	m := raxLine.FindStringSubmatch(tail)
	if m == nil {
		return 0, false
	}
	n, err := strconv.ParseUint(m[1], 16, 32)
	if err != nil {
		return 0, false
	}
	return int(n), true
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
