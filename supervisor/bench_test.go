package supervisor

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/lisa-llm/lisa/broker"
	"github.com/lisa-llm/lisa/gen"
	"github.com/lisa-llm/lisa/worker/workertest"
)

// BenchmarkStream measures chunks streamed from an in-process echo worker
// through the real worker loop and supervisor to the broker's channel.
func BenchmarkStream(b *testing.B) {
	cfg := Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	s := New(cfg, &fakeLauncher{scripts: []script{honest(&workertest.Engine{})}})
	if err := s.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	const n = 1000
	b.ReportAllocs()
	for b.Loop() {
		ch, err := s.Generate(context.Background(), gen.Request{Prompt: sp("x"), MaxTokens: n})
		if err != nil {
			b.Fatal(err)
		}
		for ev := range ch {
			if ev.Kind == broker.EventError {
				b.Fatal(ev.Err)
			}
		}
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "chunks/s")
}
