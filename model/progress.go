package model

import (
	"fmt"
	"time"

	"github.com/lisa-llm/lisa/gguf"
)

// LoadProgress is how far LoadWithProgress has got: the tensors whose
// shape, type and data it has checked and bound, and their data bytes
// (windows of the file's mapping when it is mapped).
type LoadProgress struct {
	Tensors      int           // tensors validated and bound so far
	TensorsTotal int           // tensors in the file
	Bytes        int64         // data bytes of the tensors validated so far
	BytesTotal   int64         // data bytes of every tensor in the file
	Elapsed      time.Duration // since the load started
}

// Done reports whether every tensor of the file has been validated.
func (p LoadProgress) Done() bool { return p.Tensors == p.TensorsTotal }

// String renders p for a person watching a terminal: "loading model:
// 12/48 tensors, 1.5 MiB of 6.0 MiB, 0.8 s", or "model loaded: 48
// tensors, 6.0 MiB, 1.2 s" once done.
func (p LoadProgress) String() string {
	el := p.Elapsed.Round(time.Millisecond)
	if p.Elapsed < time.Millisecond {
		el = p.Elapsed.Round(time.Microsecond)
	}
	if p.Done() {
		return fmt.Sprintf("model loaded: %d tensors, %s, %v", p.Tensors, HumanBytes(p.BytesTotal), el)
	}
	return fmt.Sprintf("loading model: %d/%d tensors, %s of %s, %v", p.Tensors, p.TensorsTotal,
		HumanBytes(p.Bytes), HumanBytes(p.BytesTotal), el)
}

// HumanBytes formats a byte count with a binary unit: 512 B, 1.5 KiB,
// 6.0 MiB, 4.1 GiB.
func HumanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	v, i := float64(n)/unit, 0
	for v >= unit && i < 4 {
		v /= unit
		i++
	}
	return fmt.Sprintf("%.1f %ciB", v, "KMGTP"[i])
}

// Throttle returns a progress function that passes to fn the final
// report and, of the others, only those at least every after the last one
// it passed (judged by their Elapsed, from the start of the load). A load
// quicker than every reports only its end; a slow one about once per
// every. The result is for one load at a time.
func Throttle(fn func(LoadProgress), every time.Duration) func(LoadProgress) {
	var last time.Duration
	return func(p LoadProgress) {
		if p.Done() || p.Elapsed-last >= every {
			last = p.Elapsed
			fn(p)
		}
	}
}

// progressCounter counts the tensors a binder has validated.
type progressCounter struct {
	fn    func(LoadProgress) // nil: no reports
	start time.Time
	p     LoadProgress
}

// newProgressCounter starts counting the tensors of f for fn.
func newProgressCounter(f *gguf.File, fn func(LoadProgress)) *progressCounter {
	c := &progressCounter{fn: fn, start: time.Now(), p: LoadProgress{TensorsTotal: len(f.Tensors)}}
	for i := range f.Tensors {
		c.p.BytesTotal += f.Tensors[i].Size
	}
	return c
}

// validated counts a tensor of size bytes as checked and reports it.
func (c *progressCounter) validated(size int64) {
	c.p.Tensors++
	c.p.Bytes += size
	if c.fn != nil {
		c.p.Elapsed = time.Since(c.start)
		c.fn(c.p)
	}
}
