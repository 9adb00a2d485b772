package supervisor

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/lisa-llm/lisa/ipc"
)

// progressLogEvery is the least time between two "model loading" lines,
// however many progress messages the worker sends.
const progressLogEvery = time.Second

// loadLog checks and logs a worker's progress reports while it loads the
// model. The worker is untrusted: a report whose counts go back or whose
// totals change is a protocol violation, and it cannot make the broker
// log more than one line per progressLogEvery.
type loadLog struct {
	last    *ipc.Progress
	lastLog time.Time
}

// disorder is the violation of a report that contradicts the last one.
func disorder(m ipc.Message, field string, got, was int64) error {
	return &ipc.ProtocolError{Kind: ipc.KindBadValue, Type: m.Type(), Field: field, Offset: -1,
		Detail: fmt.Sprintf("%d after %d", got, was)}
}

// progress checks m against the last report and logs it when the last
// line is old enough.
func (l *loadLog) progress(log *slog.Logger, m *ipc.Progress, now time.Time) error {
	if p := l.last; p != nil {
		switch {
		case m.TensorsTotal != p.TensorsTotal:
			return disorder(m, "tensors_total", int64(m.TensorsTotal), int64(p.TensorsTotal))
		case m.BytesTotal != p.BytesTotal:
			return disorder(m, "bytes_total", m.BytesTotal, p.BytesTotal)
		case m.Tensors < p.Tensors:
			return disorder(m, "tensors", int64(m.Tensors), int64(p.Tensors))
		case m.Bytes < p.Bytes:
			return disorder(m, "bytes", m.Bytes, p.Bytes)
		case m.ElapsedUS < p.ElapsedUS:
			return disorder(m, "elapsed_us", m.ElapsedUS, p.ElapsedUS)
		}
	}
	c := *m
	l.last = &c
	if m.Tensors == m.TensorsTotal || now.Sub(l.lastLog) < progressLogEvery {
		return nil // the end is in "model loaded"
	}
	l.lastLog = now
	log.Info("model loading", "tensors", m.Tensors, "tensors_total", m.TensorsTotal,
		"bytes", m.Bytes, "bytes_total", m.BytesTotal, "elapsed", usDuration(m.ElapsedUS))
	return nil
}

// ready checks the ready's figures against the last report and logs the
// load's summary.
func (l *loadLog) ready(log *slog.Logger, m *ipc.Ready) error {
	if p := l.last; p != nil {
		if m.Tensors < p.Tensors {
			return disorder(m, "tensors", int64(m.Tensors), int64(p.Tensors))
		}
		if m.TensorBytes < p.Bytes {
			return disorder(m, "tensor_bytes", m.TensorBytes, p.Bytes)
		}
	}
	log.Info("model loaded", "tensors", m.Tensors, "bytes", m.TensorBytes, "duration", usDuration(m.LoadUS),
		"kv_cache_bytes", m.KVCacheBytes, "cache_type_k", m.CacheTypeK, "cache_type_v", m.CacheTypeV)
	return nil
}

// usDuration turns a worker's microsecond count (at most
// ipc.MaxLoadMicros, so no overflow) into a Duration.
func usDuration(us int64) time.Duration { return time.Duration(us) * time.Microsecond }
