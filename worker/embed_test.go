package worker_test

import (
	"context"
	"os"
	"testing"

	"github.com/lisa-llm/lisa/gen"
	"github.com/lisa-llm/lisa/ipc"
	"github.com/lisa-llm/lisa/worker"
	"github.com/lisa-llm/lisa/worker/workertest"
)

// embedEngine adds Embed to the echo engine: the text "bad" gets a vector
// that is not of unit length (an engine bug the worker must not pass
// on), anything else the unit vector along its length's parity.
type embedEngine struct{ *workertest.Engine }

func (e embedEngine) Embed(_ context.Context, text string, ids []int32) ([]float32, int, error) {
	if text == "bad" {
		return []float32{2, 0}, 1, nil
	}
	n := len(text) + len(ids)
	v := []float32{0, 0}
	v[n%2] = 1
	return v, n, nil
}

func TestEmbed(t *testing.T) {
	for _, embedder := range []bool{true, false} {
		eng := &workertest.Engine{}
		load := eng.Loader()
		if embedder {
			load = func(fhs []*os.File, h ipc.Hello, progress func(worker.LoadProgress)) (worker.Engine, error) {
				e, err := eng.Loader()(fhs, h, progress)
				if err != nil {
					return nil, err
				}
				return embedEngine{e.(*workertest.Engine)}, nil
			}
		}
		p := startWorker(t, load, noLayers)
		p.send(&ipc.Hello{ID: 1, Protocol: ipc.Version})
		if _, ok := p.recv().(*ipc.Ready); !ok {
			t.Fatal("no ready")
		}
		p.send(&ipc.Embed{ID: 2, Text: "abc"})
		m := p.recv()
		if !embedder {
			if e, ok := m.(*ipc.Error); !ok || e.ID != 2 || e.Code != gen.CodeUnsupported {
				t.Fatalf("no embedder: got %#v", m)
			}
			p.end()
			continue
		}
		if e, ok := m.(*ipc.Embedding); !ok || e.ID != 2 || e.Tokens != 3 || e.Vector[1] != 1 {
			t.Fatalf("embedding: got %#v", m)
		}
		p.send(&ipc.Embed{ID: 3, IDs: []int32{1, 2}})
		if e, ok := p.recv().(*ipc.Embedding); !ok || e.ID != 3 || e.Tokens != 2 || e.Vector[0] != 1 {
			t.Fatalf("ids embedding: got %#v", e)
		}
		p.send(&ipc.Embed{ID: 4, Text: "bad"})
		if e, ok := p.recv().(*ipc.Error); !ok || e.ID != 4 || e.Code != "" {
			t.Fatalf("bad vector: got %#v", e)
		}
		if err := p.end(); err != nil {
			t.Fatal(err)
		}
	}
}
