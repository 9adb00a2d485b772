package broker_test

import (
	"flag"
	"io"
	"net/http"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lisa-llm/lisa/config"
)

var loadDuration = flag.Duration("load.duration", 0, "how long TestLoad streams (default 10s, 3s with -short)")

func openFDs() int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1
	}
	return len(ents)
}

func heapInuse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// TestLoad runs 64 streaming clients against the fake backend, then floods
// past the queue; every request must end 200, 429 or 503, and goroutines,
// file descriptors and heap must come back to where they were.
func TestLoad(t *testing.T) {
	dur := *loadDuration
	if dur == 0 {
		dur = 10 * time.Second
		if testing.Short() {
			dur = 3 * time.Second
		}
	}
	fake := newFake("tok", "en", " ", "text")
	fake.Endless = true
	fake.Delay = time.Millisecond
	fake.Model.ContextSize = 4096
	cfg := testConfig(t, func(c *config.Config) {
		c.MaxRunning, c.QueueSize, c.MaxConnections = 16, 64, 1024
		c.MaxConnectionsPerAddress = 0 // every simulated client is on 127.0.0.1
		c.QueueTimeout = config.Duration(30 * time.Second)
	})
	goBefore, fdBefore, heapBefore := runtime.NumGoroutine(), openFDs(), heapInuse()
	ts := start(t, fake, cfg)
	tr := &http.Transport{MaxIdleConnsPerHost: 300}
	client := &http.Client{Transport: tr, Timeout: 60 * time.Second}
	var ok, refused, other, tokens atomic.Int64
	var peakHeap atomic.Uint64
	var floodRefused atomic.Int64
	post := func(body string, refusals *atomic.Int64) {
		resp, err := client.Post(ts.URL+"/v1/chat/completions", "application/json", strings.NewReader(body))
		if err != nil {
			other.Add(1)
			t.Errorf("request failed: %v", err)
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		switch resp.StatusCode {
		case 200:
			ok.Add(1)
			tokens.Add(int64(strings.Count(string(b), `"content":"`)))
		case 429, 503:
			refused.Add(1)
			refusals.Add(1)
			time.Sleep(10 * time.Millisecond) // as a client honouring Retry-After would, roughly
		default:
			other.Add(1)
			t.Errorf("status %d: %.200s", resp.StatusCode, b)
		}
	}
	stream := `{"messages":[{"role":"user","content":"go"}],"stream":true,"max_tokens":100}`
	deadline := time.Now().Add(dur)
	var wg sync.WaitGroup
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				post(stream, new(atomic.Int64))
			}
		}()
	}
	stopSample := make(chan struct{})
	go func() {
		for {
			select {
			case <-stopSample:
				return
			case <-time.After(200 * time.Millisecond):
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				if ms.HeapInuse > peakHeap.Load() {
					peakHeap.Store(ms.HeapInuse)
				}
			}
		}
	}()
	// A flood past the queue, in the middle of the run.
	time.Sleep(dur / 2)
	var flood sync.WaitGroup
	for range 300 {
		flood.Add(1)
		go func() {
			defer flood.Done()
			post(`{"messages":[{"role":"user","content":"x"}],"max_tokens":50}`, &floodRefused)
		}()
	}
	flood.Wait()
	wg.Wait()
	close(stopSample)
	if floodRefused.Load() == 0 {
		t.Error("a flood of 300 past a queue of 64 was never refused")
	}
	if other.Load() != 0 {
		t.Errorf("%d requests ended neither 200 nor 429/503", other.Load())
	}
	tr.CloseIdleConnections()
	heapLoaded := heapInuse()
	ts.Stop()
	// Every generation must have ended and every goroutine gone.
	var goAfter, fdAfter int
	for i := 0; i < 100; i++ {
		_, active, _ := fake.Counts()
		goAfter, fdAfter = runtime.NumGoroutine(), openFDs()
		if active == 0 && goAfter <= goBefore+2 && fdAfter <= fdBefore+1 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	heapAfter := heapInuse()
	t.Logf("load %v: %d completed (%d streamed text chunks), %d refused (%d of the flood), goroutines %d→%d, fds %d→%d, heap in use %d KiB before, %d KiB at the end under load, %d KiB after shutdown (peak %d KiB)",
		dur, ok.Load(), tokens.Load(), refused.Load(), floodRefused.Load(), goBefore, goAfter, fdBefore, fdAfter,
		heapBefore>>10, heapLoaded>>10, heapAfter>>10, peakHeap.Load()>>10)
	if _, active, _ := fake.Counts(); active != 0 {
		t.Errorf("%d generations still running", active)
	}
	if goAfter > goBefore+2 {
		t.Errorf("goroutine leak: %d before, %d after", goBefore, goAfter)
	}
	if fdBefore >= 0 && fdAfter > fdBefore+1 {
		t.Errorf("fd leak: %d before, %d after", fdBefore, fdAfter)
	}
	if peakHeap.Load() > 256<<20 {
		t.Errorf("heap peaked at %d MiB", peakHeap.Load()>>20)
	}
}
