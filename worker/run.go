package worker

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"time"

	"github.com/lisa-llm/lisa/ipc"
)

// ServingFunc runs between loading the model and answering ready: it
// stacks the serving sandbox stage and returns the layers the worker has
// applied and the Landlock ABI in force (0: none).
type ServingFunc func() (layers []ipc.Layer, landlockABI int, err error)

// Run is the worker's side of the protocol over conn: it reads the hello,
// loads the engine from model (its files: one, or a split model's shards
// in order), calls serving, answers ready and serves
// requests until conn reaches its end (nil). A load or serving failure is
// sent to the broker as an error naming the hello's id, and returned.
func Run(conn io.ReadWriter, model []*os.File, load EngineLoader, serving ServingFunc) error {
	r := ipc.NewReader(conn)
	body, err := r.ReadFrame()
	if err != nil {
		return fmt.Errorf("worker: read hello: %w", err)
	}
	m, err := ipc.DecodeRequest(body)
	if err != nil {
		return fmt.Errorf("worker: decode hello: %w", err)
	}
	hello, ok := m.(*ipc.Hello)
	if !ok {
		return fmt.Errorf("worker: first message is %s, want hello", m.Type())
	}
	out := &sender{w: conn}
	// The serving filter refuses close: the model's *os.Files must not be
	// collected (their cleanup would close fds 4, 5, …) while the worker
	// runs.
	defer runtime.KeepAlive(model)
	lp := newLoadReporter(out, hello.ID)
	eng, err := load(model, *hello, lp.report)
	if err == nil {
		err = lp.err
	}
	if err == nil && eng == nil {
		err = errors.New("loader returned no engine")
	}
	if err != nil {
		err = fmt.Errorf("load model: %w", err)
		return errors.Join(err, out.sendError(hello.ID, err))
	}
	ready, err := readyFor(hello, eng.Info())
	if err == nil {
		ready.Tensors, ready.TensorBytes, ready.LoadUS = lp.last.Tensors, lp.last.Bytes, time.Since(lp.start).Microseconds()
		ready.Layers, ready.LandlockABI, err = serving()
	}
	if err != nil {
		return errors.Join(err, out.sendError(hello.ID, err))
	}
	if err := out.send(ready); err != nil {
		return err
	}
	return Serve(r, conn, eng)
}

// readyFor builds the ready message from the engine's Info.
func readyFor(hello *ipc.Hello, info Info) (*ipc.Ready, error) {
	if info.ContextSize <= 0 || info.ContextSize >= ipc.MaxTokens || info.VocabSize <= 0 || info.VocabSize >= ipc.MaxTokens {
		return nil, fmt.Errorf("worker: engine reports context size %d and vocabulary size %d", info.ContextSize, info.VocabSize)
	}
	name := hello.ModelName
	if name == "" {
		name = info.Name
	}
	var bos *int32
	if info.BOS >= 0 {
		bos = &info.BOS
	}
	return &ipc.Ready{ID: hello.ID, Protocol: ipc.Version, Name: name, Architecture: info.Architecture,
		ContextSize: info.ContextSize, VocabSize: info.VocabSize, SpecialTokens: info.SpecialTokens, ControlIDs: info.ControlIDs,
		BOS: bos, Kernels: info.Kernels, Slots: min(max(info.Slots, 0), 1024),
		KVCacheBytes: max(info.KVCacheBytes, 0), CacheTypeK: info.CacheTypeK, CacheTypeV: info.CacheTypeV}, nil
}

// loadReporter forwards a loader's progress to the broker as progress
// messages, dropping reports the broker would refuse (counts that go
// back, totals that change, values out of range).
type loadReporter struct {
	out   *sender
	id    uint64 // the hello's
	start time.Time
	last  LoadProgress
	sent  bool  // last has been sent
	err   error // the first send failure
}

func newLoadReporter(out *sender, id uint64) *loadReporter {
	return &loadReporter{out: out, id: id, start: time.Now()}
}

// report sends p unless it is out of order or a send already failed.
func (r *loadReporter) report(p LoadProgress) {
	if r.err != nil {
		return
	}
	if r.sent && (p.Tensors < r.last.Tensors || p.Bytes < r.last.Bytes ||
		p.TensorsTotal != r.last.TensorsTotal || p.BytesTotal != r.last.BytesTotal) {
		return
	}
	m := &ipc.Progress{ID: r.id, Tensors: p.Tensors, TensorsTotal: p.TensorsTotal, Bytes: p.Bytes,
		BytesTotal: p.BytesTotal, ElapsedUS: time.Since(r.start).Microseconds()}
	if ipc.Check(m) != nil {
		return
	}
	r.last, r.sent = p, true
	if err := r.out.send(m); err != nil {
		r.err = fmt.Errorf("progress: %w", err)
	}
}
