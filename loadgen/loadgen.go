// Package loadgen drives a running lisa serve (or any OpenAI-compatible
// server) with concurrent streaming completions and measures what its
// users feel: aggregate generation throughput and time to first token,
// alone and under load. `lisa loadgen` is its command line.
package loadgen

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"
)

// Config says what to send.
type Config struct {
	URL       string // base URL, e.g. http://127.0.0.1:8080
	APIKey    string // bearer key ("" for none)
	Vocab     int    // prompt token ids are drawn from [100, Vocab)
	Seed      uint64 // seed of the prompt ids
	MaxTokens int    // tokens each generation asks for
}

// Sample is one streamed generation as the client saw it.
type Sample struct {
	Start, First, End time.Time
	Tokens            int // completion_tokens from the usage chunk
}

// TTFT is the time to first token.
func (s Sample) TTFT() time.Duration { return s.First.Sub(s.Start) }

// prompt returns n pseudo-random token ids; each call site passes its own
// stream so that prompts differ between clients (no prefix reuse).
func (c Config) prompt(n int, stream uint64) []int {
	r := rand.New(rand.NewPCG(c.Seed, stream))
	ids := make([]int, n)
	ids[0] = 1 // BOS
	for i := 1; i < n; i++ {
		ids[i] = 100 + r.IntN(max(c.Vocab-100, 1))
	}
	return ids
}

// Generate streams one completion of the prompt ids and times it;
// onFirst, when not nil, runs when the first text arrives.
func (c Config) Generate(ctx context.Context, ids []int, maxTokens int, onFirst func()) (Sample, error) {
	body, _ := json.Marshal(map[string]any{"prompt": ids, "max_tokens": maxTokens, "temperature": 0,
		"stream": true, "stream_options": map[string]any{"include_usage": true}})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(c.URL, "/")+"/v1/completions", bytes.NewReader(body))
	if err != nil {
		return Sample{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	if c.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.APIKey)
	}
	s := Sample{Start: time.Now()}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return Sample{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return Sample{}, fmt.Errorf("loadgen: status %s", resp.Status)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if line == "[DONE]" {
			s.End = time.Now()
			break
		}
		var ev struct {
			Choices []struct {
				Text string `json:"text"`
			} `json:"choices"`
			Usage *struct {
				CompletionTokens int `json:"completion_tokens"`
			} `json:"usage"`
		}
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			return Sample{}, fmt.Errorf("loadgen: event %q: %w", line, err)
		}
		if s.First.IsZero() && len(ev.Choices) > 0 && ev.Choices[0].Text != "" {
			s.First = time.Now()
			if onFirst != nil {
				onFirst()
			}
		}
		if ev.Usage != nil {
			s.Tokens = ev.Usage.CompletionTokens
		}
	}
	if err := sc.Err(); err != nil {
		return Sample{}, err
	}
	if s.End.IsZero() || s.First.IsZero() {
		return Sample{}, errors.New("loadgen: the stream ended without text or [DONE]")
	}
	return s, nil
}

// Throughput is one run of clients generating at once.
type Throughput struct {
	Clients   int
	Tokens    int           // completion tokens of all clients
	Wall      time.Duration // first start to last end
	TokPerSec float64       // Tokens / Wall
	TTFT      time.Duration // mean time to first token
}

// RunThroughput starts clients generations of MaxTokens tokens after
// promptLen-token prompts at the same moment and measures them together.
func (c Config) RunThroughput(ctx context.Context, clients, promptLen int, round uint64) (Throughput, error) {
	samples := make([]Sample, clients)
	errs := make([]error, clients)
	var wg sync.WaitGroup
	for i := range clients {
		ids := c.prompt(promptLen, round<<16|uint64(i))
		wg.Go(func() { samples[i], errs[i] = c.Generate(ctx, ids, c.MaxTokens, nil) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return Throughput{}, err
	}
	t := Throughput{Clients: clients}
	first, last := samples[0].Start, samples[0].End
	var ttft time.Duration
	for _, s := range samples {
		t.Tokens += s.Tokens
		if s.Start.Before(first) {
			first = s.Start
		}
		if s.End.After(last) {
			last = s.End
		}
		ttft += s.TTFT()
	}
	t.Wall = last.Sub(first)
	t.TokPerSec = float64(t.Tokens) / t.Wall.Seconds()
	t.TTFT = ttft / time.Duration(clients)
	return t, nil
}

// TTFTUnderLoad measures the time to first token of a promptLen-token
// request on an idle server, then while busy generations decode.
func (c Config) TTFTUnderLoad(ctx context.Context, busy, promptLen, repeat int) (idle, loaded []time.Duration, err error) {
	for r := range repeat {
		s, err := c.Generate(ctx, c.prompt(promptLen, 1<<32|uint64(r)), 1, nil)
		if err != nil {
			return nil, nil, err
		}
		idle = append(idle, s.TTFT())
	}
	bctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	started := make(chan struct{}, busy)
	failed := make(chan error, busy)
	for i := range busy {
		wg.Go(func() {
			// Background decoders: short prompts, MaxTokens-long
			// generations, one after the other until stopped; the first
			// failure (other than being stopped) ends the measurement.
			once := sync.OnceFunc(func() { started <- struct{}{} })
			for n := uint64(0); bctx.Err() == nil; n++ {
				ids := c.prompt(8, 2<<32|uint64(i)<<16|n)
				if _, err := c.Generate(bctx, ids, c.MaxTokens, once); err != nil && bctx.Err() == nil {
					failed <- fmt.Errorf("loadgen: background generation: %w", err)
					return
				}
			}
		})
	}
	defer wg.Wait()
	defer stop()
	for range busy {
		select {
		case <-started:
		case err := <-failed:
			return nil, nil, err
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
	}
	time.Sleep(200 * time.Millisecond) // all of them decoding
	for r := range repeat {
		s, err := c.Generate(ctx, c.prompt(promptLen, 3<<32|uint64(r)), 1, nil)
		if err != nil {
			return nil, nil, err
		}
		loaded = append(loaded, s.TTFT())
	}
	select {
	case err := <-failed:
		return nil, nil, err
	default:
	}
	return idle, loaded, nil
}

// Stats summarises durations.
type Stats struct{ Mean, Min, Max time.Duration }

// Summarise returns the mean, minimum and maximum of ds.
func Summarise(ds []time.Duration) Stats {
	if len(ds) == 0 {
		return Stats{}
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	var sum time.Duration
	for _, d := range s {
		sum += d
	}
	return Stats{Mean: sum / time.Duration(len(s)), Min: s[0], Max: s[len(s)-1]}
}

// Ratio returns a/b, NaN when b is zero.
func Ratio(a, b float64) float64 {
	if b == 0 {
		return math.NaN()
	}
	return a / b
}
