package engine

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lisa-llm/lisa/gen"
	"github.com/lisa-llm/lisa/gguf"
	"github.com/lisa-llm/lisa/internal/shared"
	"github.com/lisa-llm/lisa/internal/splitgguf"
	"github.com/lisa-llm/lisa/ipc"
	"github.com/lisa-llm/lisa/model"
	"github.com/lisa-llm/lisa/worker"
)

// stories is the trained model the tests generate with.
const stories = "models/stories260K.gguf"

// refPrompt is one prompt of llama.cpp's reference file.
type refPrompt struct {
	Prompt        string   `json:"prompt"`
	PromptIDs     []int32  `json:"prompt_ids"`
	GeneratedIDs  []int32  `json:"generated_ids"`
	GeneratedText string   `json:"generated_text"`
	Pieces        []string `json:"generated_pieces"`
	FirstEOG      int      `json:"first_eog_gen_index"`
}

func loadRef(t *testing.T) []refPrompt {
	t.Helper()
	data, err := os.ReadFile(shared.Path(t, "ref/reference/stories260K.gguf.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Prompts []refPrompt `json:"prompts"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Prompts) < 4 {
		t.Fatalf("reference has %d prompts", len(doc.Prompts))
	}
	return doc.Prompts
}

// newEngine loads stories260K with o.
func newEngine(t *testing.T, o Options) *Engine {
	t.Helper()
	f, err := gguf.Open(filepath.Join(shared.Dir(t), stories), gguf.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(f, o)
	if err != nil {
		f.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// result is what one generation produced.
type result struct {
	chunks []gen.Chunk
	text   string
	done   gen.End
	err    error
}

func (r result) logprobs() []gen.TokenProb {
	var out []gen.TokenProb
	for _, c := range r.chunks {
		out = append(out, c.Logprobs...)
	}
	return out
}

// gen runs one generation to its end.
func runGen(ctx context.Context, e *Engine, p gen.Request) result {
	var r result
	r.done, r.err = e.Generate(ctx, p, func(c gen.Chunk) error {
		r.chunks = append(r.chunks, c)
		r.text += c.Text
		return nil
	})
	return r
}

func greedy(ids []int32, n int) gen.Request {
	return gen.Request{PromptIDs: ids, MaxTokens: n, Logprobs: true, TopLogprobs: 3}
}

func seeded(ids []int32, n int, seed uint64) gen.Request {
	return gen.Request{PromptIDs: ids, MaxTokens: n, Logprobs: true,
		Sampling: gen.Sampling{Temperature: 0.9, TopK: 40, TopP: 0.95, MinP: 0.05, Seed: seed, HasSeed: true}}
}

// wantText is llama.cpp's greedy text for p up to its first EOG token.
func wantText(p refPrompt) string {
	if p.FirstEOG < 0 {
		return p.GeneratedText
	}
	return strings.Join(p.Pieces[:p.FirstEOG], "")
}

// TestReferenceGreedy: served greedy generation says what llama.cpp says.
func TestReferenceGreedy(t *testing.T) {
	refs := loadRef(t)
	e := newEngine(t, Options{Threads: 2, Parallel: 1})
	for _, p := range refs {
		r := runGen(context.Background(), e, gen.Request{Prompt: &p.Prompt, MaxTokens: len(p.GeneratedIDs)})
		if r.err != nil {
			t.Fatalf("%q: %v", p.Prompt, r.err)
		}
		if r.text != wantText(p) {
			t.Errorf("%q:\n got %q\nwant %q", p.Prompt, r.text, wantText(p))
		}
		if r.done.Usage.PromptTokens != len(p.PromptIDs) {
			t.Errorf("%q: prompt_tokens %d, llama.cpp's prompt has %d", p.Prompt, r.done.Usage.PromptTokens, len(p.PromptIDs))
		}
		if len(r.chunks) > r.done.Usage.CompletionTokens {
			t.Errorf("%q: %d chunks for %d tokens", p.Prompt, len(r.chunks), r.done.Usage.CompletionTokens)
		}
	}
}

// concurrently runs every params at once and returns the results in order.
func concurrently(e *Engine, ps []gen.Request) []result {
	out := make([]result, len(ps))
	var wg sync.WaitGroup
	for i, p := range ps {
		wg.Go(func() { out[i] = runGen(context.Background(), e, p) })
	}
	wg.Wait()
	return out
}

// TestBatchIndependence: a request beside three others gives the same
// tokens and the same log-probabilities as alone, greedy and sampled with
// a seed.
func TestBatchIndependence(t *testing.T) {
	refs := loadRef(t)
	e := newEngine(t, Options{Threads: 2, Parallel: 4})
	var ps []gen.Request
	for i, p := range refs[:4] {
		if i%2 == 0 {
			ps = append(ps, greedy(p.PromptIDs, 40))
		} else {
			ps = append(ps, seeded(p.PromptIDs, 40, uint64(7+i)))
		}
	}
	var alone []result
	for _, p := range ps {
		alone = append(alone, runGen(context.Background(), e, p))
	}
	for round := range 2 {
		together := concurrently(e, ps)
		for i := range ps {
			a, b := alone[i], together[i]
			if a.err != nil || b.err != nil {
				t.Fatalf("request %d: %v / %v", i, a.err, b.err)
			}
			if a.text != b.text || !reflect.DeepEqual(a.logprobs(), b.logprobs()) {
				t.Errorf("round %d request %d: alone %q, beside others %q (log-probabilities equal: %v)",
					round, i, a.text, b.text, reflect.DeepEqual(a.logprobs(), b.logprobs()))
			}
		}
	}
	if !strings.HasPrefix(wantText(refs[0]), alone[0].text) || alone[0].text == "" {
		t.Errorf("greedy request 0 %q is not a prefix of llama.cpp's %q", alone[0].text, wantText(refs[0]))
	}
}

// TestJoinAndLeaveMidBatch: requests that start while others decode and
// end before them leave every output as it is alone.
func TestJoinAndLeaveMidBatch(t *testing.T) {
	refs := loadRef(t)
	e := newEngine(t, Options{Threads: 2, Parallel: 3})
	long := seeded(refs[0].PromptIDs, 60, 1)
	short := greedy(refs[1].PromptIDs, 5)
	late := greedy(refs[2].PromptIDs, 20)
	want := map[string]result{}
	for name, p := range map[string]gen.Request{"long": long, "short": short, "late": late} {
		want[name] = runGen(context.Background(), e, p)
	}
	got := map[string]result{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	run := func(name string, p gen.Request, started chan<- struct{}) {
		defer wg.Done()
		var r result
		r.done, r.err = e.Generate(context.Background(), p, func(c gen.Chunk) error {
			r.chunks = append(r.chunks, c)
			r.text += c.Text
			if started != nil && len(r.chunks) == 3 {
				close(started)
			}
			return nil
		})
		mu.Lock()
		got[name] = r
		mu.Unlock()
	}
	longStarted := make(chan struct{})
	wg.Add(1)
	go run("long", long, longStarted)
	<-longStarted
	wg.Add(1)
	run("short", short, nil) // joins while long decodes, leaves before it
	wg.Add(1)
	run("late", late, nil) // joins after short left
	wg.Wait()
	for name, w := range want {
		g := got[name]
		if g.err != nil {
			t.Fatalf("%s: %v", name, g.err)
		}
		if g.text != w.text || !reflect.DeepEqual(g.logprobs(), w.logprobs()) {
			t.Errorf("%s: alone %q, mid-batch %q", name, w.text, g.text)
		}
	}
	if got["long"].done.Usage.CompletionTokens != 60 || got["short"].done.Usage.CompletionTokens != 5 {
		t.Errorf("usage long %+v short %+v", got["long"].done.Usage, got["short"].done.Usage)
	}
}

// TestPrefixReuse: a request that continues what a slot holds computes
// only the rest, reports the reused tokens and says the same as on a fresh
// engine.
func TestPrefixReuse(t *testing.T) {
	refs := loadRef(t)
	p := refs[0]
	e := newEngine(t, Options{Threads: 2, Parallel: 2})
	first := runGen(context.Background(), e, greedy(p.PromptIDs, 20))
	if first.err != nil || first.done.Usage.CachedTokens != 0 {
		t.Fatalf("first request: %+v %v", first.done, first.err)
	}
	// The conversation grows: the prompt, 10 of the generated tokens and
	// two new ones. The slot holds the prompt and the 19 generated tokens
	// that were fed back.
	grown := append(append(append([]int32{}, p.PromptIDs...), p.GeneratedIDs[:10]...), 13, 14)
	second := runGen(context.Background(), e, greedy(grown, 10))
	if second.err != nil {
		t.Fatal(second.err)
	}
	if want := len(p.PromptIDs) + 10; second.done.Usage.CachedTokens != want {
		t.Errorf("cached tokens %d, want %d", second.done.Usage.CachedTokens, want)
	}
	// The same prompt again reuses all but its last token.
	again := runGen(context.Background(), e, greedy(grown, 10))
	if again.done.Usage.CachedTokens != len(grown)-1 {
		t.Errorf("repeated prompt: cached tokens %d, want %d", again.done.Usage.CachedTokens, len(grown)-1)
	}
	fresh := runGen(context.Background(), newEngine(t, Options{Threads: 2, Parallel: 1}), greedy(grown, 10))
	for _, r := range []result{second, again} {
		if r.text != fresh.text || !reflect.DeepEqual(r.logprobs(), fresh.logprobs()) {
			t.Errorf("with the reused prefix %q, fresh %q", r.text, fresh.text)
		}
	}
	// A different prompt goes to the other (least recently used) slot and
	// leaves this cache alone.
	other := runGen(context.Background(), e, greedy(refs[2].PromptIDs, 5))
	if other.done.Usage.CachedTokens != 0 {
		t.Errorf("unrelated prompt reused %d tokens", other.done.Usage.CachedTokens)
	}
	if r := runGen(context.Background(), e, greedy(grown, 3)); r.done.Usage.CachedTokens != len(grown)-1 {
		t.Errorf("after another request, cached tokens %d, want %d", r.done.Usage.CachedTokens, len(grown)-1)
	}
}

// TestCancel: a cancelled generation ends before its slot's next step,
// running or queued, a queued one never starts, and the slot serves the
// next request.
func TestCancel(t *testing.T) {
	refs := loadRef(t)
	e := newEngine(t, Options{Threads: 2, Parallel: 1, CtxSize: 128})
	// The scheduler stops before its third step until the gate opens.
	gate := make(chan struct{})
	var steps atomic.Int32
	e.sched.beforeStep = func() {
		if steps.Add(1) == 3 {
			<-gate
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	emitted := 0
	errc := make(chan error, 1)
	go func() {
		_, err := e.Generate(ctx, seeded(refs[0].PromptIDs, 100, 3), func(c gen.Chunk) error {
			mu.Lock()
			emitted += len(c.Logprobs)
			mu.Unlock()
			return nil
		})
		errc <- err
	}()
	// A second request waits for the only slot; cancel it while queued.
	qctx, qcancel := context.WithCancel(context.Background())
	qerr := make(chan error, 1)
	go func() { qerr <- runGen(qctx, e, greedy(refs[1].PromptIDs, 5)).err }()
	waitFor(t, "the second request to queue", func() bool {
		e.sched.mu.Lock()
		defer e.sched.mu.Unlock()
		return len(e.sched.queue) == 1 && steps.Load() == 3
	})
	qcancel()
	cancel()
	for name, c := range map[string]chan error{"queued": qerr, "running": errc} {
		select {
		case err := <-c:
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("%s request ended with %v", name, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("a cancelled %s request did not return", name)
		}
	}
	close(gate)
	// A failing emit (the broker is gone) frees the slot too.
	boom := errors.New("emit failed")
	if _, err := e.Generate(context.Background(), greedy(refs[2].PromptIDs, 30), func(gen.Chunk) error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("emit failure gave %v", err)
	}
	r := runGen(context.Background(), e, gen.Request{Prompt: &refs[2].Prompt, MaxTokens: 16})
	if r.err != nil || !strings.HasPrefix(wantText(refs[2]), r.text) || r.text == "" {
		t.Fatalf("after cancellations: %q %v, want a prefix of %q", r.text, r.err, wantText(refs[2]))
	}
	mu.Lock()
	defer mu.Unlock()
	// Steps 1 and 2 sampled a token each; step 3 may have run with the
	// cancelled request still in it; no step after.
	if emitted > 3 {
		t.Errorf("the cancelled request emitted %d tokens, want at most 3", emitted)
	}
	if n := e.sched.admitted; n != 3 {
		t.Errorf("%d generations admitted, want 3 (the cancelled queued one must not start)", n)
	}
}

// waitFor polls cond for up to 5 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}

// TestStopAcrossTokens: a stop string that spans token boundaries cuts
// the text before it, and no chunk ever carried text that was cut.
func TestStopAcrossTokens(t *testing.T) {
	refs := loadRef(t)
	p := refs[0]
	e := newEngine(t, Options{Threads: 2, Parallel: 1})
	full := wantText(p)
	// From inside " little" to inside " named" (five tokens in the
	// reference): a stop that starts inside one piece and ends inside a
	// later one.
	start := len(strings.Join(p.Pieces[:4], "")) + 2
	end := len(strings.Join(p.Pieces[:8], "")) + 3
	stop := full[start:end]
	if len(stop) < 8 {
		t.Fatalf("bad stop %q from pieces %q", stop, p.Pieces[:9])
	}
	for _, stops := range [][]string{{stop}, {"no such text", stop}, {stop, stop[:len(stop)-1] + "\x00"}} {
		var sent []string
		done, err := e.Generate(context.Background(), gen.Request{Prompt: &p.Prompt, MaxTokens: 40, Stop: stops},
			func(c gen.Chunk) error {
				sent = append(sent, c.Text)
				return nil
			})
		if err != nil {
			t.Fatal(err)
		}
		got := strings.Join(sent, "")
		if want := full[:start]; got != want || done.Finish != "stop" {
			t.Errorf("stops %q: got %q (%s), want %q (stop)", stops, got, done.Finish, want)
		}
	}
	// A stop string that never completes lets everything through at the end.
	never := p.Pieces[len(p.Pieces)-1] + "\x01"
	r := runGen(context.Background(), e, gen.Request{Prompt: &p.Prompt, MaxTokens: len(p.Pieces), Stop: []string{never}})
	if r.text != full || r.done.Finish != "length" {
		t.Errorf("incomplete stop: %q (%s), want %q", r.text, r.done.Finish, full)
	}
}

// TestStopper: the stop matcher on its own.
func TestStopper(t *testing.T) {
	tests := []struct {
		stops  []string
		pieces []string
		sent   []string // per piece
		hit    int      // index of the piece that completes a stop, -1 none
		tail   string   // flush after the last piece
	}{
		{[]string{"END"}, []string{"ab", "cE", "N", "D!"}, []string{"ab", "c", "", ""}, 3, ""},
		{[]string{"END"}, []string{"ab", "cE", "Nx"}, []string{"ab", "c", "ENx"}, -1, ""},
		{[]string{"END"}, []string{"xEN"}, []string{"x"}, -1, "EN"},
		{[]string{"aab"}, []string{"aa", "ab"}, []string{"", "a"}, 1, ""},
		{[]string{"ab", "b"}, []string{"xb"}, []string{"x"}, 0, ""},
		{[]string{""}, []string{"x"}, []string{"x"}, -1, ""},
		{nil, []string{"é", "ü"}, []string{"é", "ü"}, -1, ""},
		{[]string{"éx"}, []string{"aé", "y"}, []string{"a", "éy"}, -1, ""},
	}
	for i, tc := range tests {
		s := newStopper(tc.stops)
		hit := -1
		for j, p := range tc.pieces {
			out, h := s.push(p)
			if out != tc.sent[j] {
				t.Errorf("case %d piece %d: sent %q, want %q", i, j, out, tc.sent[j])
			}
			if h {
				hit = j
				break
			}
		}
		if hit != tc.hit {
			t.Errorf("case %d: hit at %d, want %d", i, hit, tc.hit)
		}
		if tail := s.flush(); tail != tc.tail {
			t.Errorf("case %d: tail %q, want %q", i, tail, tc.tail)
		}
	}
}

// TestContextFull: a slot whose context fills ends with "length"; a
// prompt that leaves no room is refused.
func TestContextFull(t *testing.T) {
	refs := loadRef(t)
	const ctxSize = 16
	e := newEngine(t, Options{Threads: 1, Parallel: 2, CtxSize: ctxSize})
	if got := e.Info().ContextSize; got != ctxSize {
		t.Fatalf("context size %d", got)
	}
	p := refs[1].PromptIDs // 10 tokens
	fit := greedy(p, 100)
	fit.FitContext = true
	r := runGen(context.Background(), e, fit)
	if r.err != nil {
		t.Fatal(r.err)
	}
	// Positions 0..15 hold the prompt and the fed-back tokens; the token
	// sampled from position 15 is the last.
	if want := ctxSize - len(p) + 1; r.done.Finish != "length" || r.done.Usage.CompletionTokens != want {
		t.Errorf("finish %q after %d tokens, want length after %d", r.done.Finish, r.done.Usage.CompletionTokens, want)
	}
	long := make([]int32, ctxSize)
	for i := range long {
		long[i] = p[i%len(p)]
	}
	_, err := e.Generate(context.Background(), greedy(long, 1), func(gen.Chunk) error { return nil })
	if ge := gen.AsError(err); !errors.Is(err, ErrPrompt) || ge == nil || ge.Code != gen.CodeContextLength || ge.Param != "prompt" {
		t.Errorf("prompt of %d tokens in a context of %d: %v", len(long), ctxSize, err)
	}
	// Without FitContext, max_tokens is the client's own: refused when
	// it does not fit beside the prompt.
	_, err = e.Generate(context.Background(), greedy(p, ctxSize-len(p)+1), func(gen.Chunk) error { return nil })
	if ge := gen.AsError(err); ge == nil || ge.Code != gen.CodeContextLength || ge.Param != "max_tokens" {
		t.Errorf("max_tokens past the context: %v", err)
	}
	if r := runGen(context.Background(), e, greedy(p, ctxSize-len(p))); r.err != nil || r.done.Usage.CompletionTokens != ctxSize-len(p) {
		t.Errorf("max_tokens filling the context: %v, %d tokens", r.err, r.done.Usage.CompletionTokens)
	}
}

// TestTypedRefusals: what the engine cannot serve ends with a *gen.Error
// of the right code and field, before any output.
func TestTypedRefusals(t *testing.T) {
	refs := loadRef(t)
	e := newEngine(t, Options{Threads: 1, Parallel: 1, CtxSize: 64})
	p := refs[1].PromptIDs
	with := func(f func(*gen.Request)) gen.Request {
		r := greedy(p, 4)
		f(&r)
		return r
	}
	tests := []struct {
		name  string
		req   gen.Request
		code  gen.Code
		param string
	}{
		{"tools with a format", with(func(r *gen.Request) {
			r.Tools, r.Format = []gen.Tool{{Name: "f"}}, gen.Format{Type: gen.FormatJSONObject}
		}), gen.CodeInvalidRequest, "response_format"},
		{"unknown named tool", with(func(r *gen.Request) {
			r.Tools, r.ToolChoice = []gen.Tool{{Name: "f"}}, gen.ToolChoice{Mode: gen.ChoiceFunction, Name: "g"}
		}), gen.CodeInvalidRequest, "tool_choice"},
		{"unsupported schema keyword", with(func(r *gen.Request) {
			r.Tools = []gen.Tool{{Name: "f"}, {Name: "g", Parameters: `{"type":"object","patternProperties":{"a":{}}}`}}
			r.ToolChoice = gen.ToolChoice{Mode: gen.ChoiceRequired}
		}), gen.CodeInvalidRequest, "tools[1].function.parameters"},
		{"bad json schema", with(func(r *gen.Request) {
			r.Format = gen.Format{Type: gen.FormatJSONSchema, Schema: `{"type":"strange"}`}
		}), gen.CodeInvalidRequest, "response_format.json_schema.schema"},
		{"grammar syntax", with(func(r *gen.Request) { r.Format = gen.Format{Type: gen.FormatGrammar, Grammar: "root ::= (\"a\""} }), gen.CodeInvalidRequest, "grammar"},
		{"grammar left recursion", with(func(r *gen.Request) {
			r.Format = gen.Format{Type: gen.FormatGrammar, Grammar: "root ::= root \"a\" | \"b\""}
		}), gen.CodeInvalidRequest, "grammar"},
		{"tool text with a special token", gen.Request{Messages: []gen.Message{{Role: gen.RoleUser, Content: "x"}}, MaxTokens: 1,
			Tools: []gen.Tool{{Name: "f", Description: "say </s> now"}}}, gen.CodeInvalidPrompt, "tools"},
		{"bias past vocabulary", with(func(r *gen.Request) { r.Sampling.LogitBias = []gen.Bias{{Token: 512, Bias: 1}} }), gen.CodeInvalidRequest, "logit_bias"},
		{"id past vocabulary", gen.Request{PromptIDs: []int32{1, 600}, MaxTokens: 1}, gen.CodeInvalidPrompt, "prompt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runGen(context.Background(), e, tt.req)
			ge := gen.AsError(r.err)
			if ge == nil || ge.Code != tt.code || ge.Param != tt.param || len(r.chunks) != 0 {
				t.Fatalf("got %v after %d chunks, want %s on %s", r.err, len(r.chunks), tt.code, tt.param)
			}
		})
	}
	// Tools the request declines to use (tool_choice "none") are no
	// constraint.
	if r := runGen(context.Background(), e, with(func(r *gen.Request) {
		r.Tools, r.ToolChoice = []gen.Tool{{Name: "f"}}, gen.ToolChoice{Mode: gen.ChoiceNone}
	})); r.err != nil {
		t.Fatalf("tools with choice none: %v", r.err)
	}
}

// TestLogitBias: a bias of -100 bans the greedy choice, +100 forces a
// token.
func TestLogitBias(t *testing.T) {
	refs := loadRef(t)
	e := newEngine(t, Options{Threads: 1, Parallel: 1, CtxSize: 64})
	p := refs[1].PromptIDs
	plain := runGen(context.Background(), e, greedy(p, 1))
	if plain.err != nil || len(plain.chunks) == 0 {
		t.Fatalf("plain: %v", plain.err)
	}
	first := plain.chunks[0].Logprobs[0].Token
	// llama.cpp's greedy continuation starts with the same token.
	ids := refs[1].GeneratedIDs[:1]
	if got := strings.ToValidUTF8(string(e.tok.Piece(ids[0])), "\uFFFD"); got != first {
		t.Fatalf("greedy token %q, llama.cpp's %q", first, got)
	}
	ban := greedy(p, 1)
	ban.Sampling.LogitBias = []gen.Bias{{Token: ids[0], Bias: -gen.MaxBias}}
	if r := runGen(context.Background(), e, ban); r.err != nil || r.chunks[0].Logprobs[0].Token == first {
		t.Fatalf("banned %q still chosen (%v)", first, r.err)
	}
	force := greedy(p, 3)
	force.Sampling.LogitBias = []gen.Bias{{Token: 65, Bias: gen.MaxBias}}
	r := runGen(context.Background(), e, force)
	if r.err != nil {
		t.Fatal(r.err)
	}
	want := strings.ToValidUTF8(string(e.tok.Piece(65)), "\uFFFD")
	for i, c := range r.chunks {
		if c.Logprobs[0].Token != want {
			t.Fatalf("token %d is %q, want the forced %q", i, c.Logprobs[0].Token, want)
		}
	}
}

// sp points at s.
func sp(s string) *string { return &s }

// TestBadRequests: hostile parameters get ErrPrompt, not a panic.
func TestBadRequests(t *testing.T) {
	e := newEngine(t, Options{Threads: 1, Parallel: 1, CtxSize: 64})
	for name, p := range map[string]gen.Request{
		"id beyond vocabulary": {PromptIDs: []int32{1, 512}, MaxTokens: 2},
		"negative id":          {PromptIDs: []int32{-1}, MaxTokens: 2},
		"no max tokens":        {Prompt: sp("x")},
		"bad sampling":         {Prompt: sp("x"), MaxTokens: 2, Sampling: gen.Sampling{TopK: -5, RepeatLastN: -1}},
	} {
		if _, err := e.Generate(context.Background(), p, func(gen.Chunk) error { return nil }); !errors.Is(err, ErrPrompt) {
			t.Errorf("%s: %v, want ErrPrompt", name, err)
		}
	}
	if _, err := e.Detokenize([]int32{600}); !errors.Is(err, ErrPrompt) {
		t.Errorf("detokenize beyond the vocabulary: %v", err)
	}
	ids, _ := e.Tokenize("Once upon a time", false)
	if text, err := e.Detokenize(ids); err != nil || text != "Once upon a time" {
		t.Errorf("round trip %q %v", text, err)
	}
}

// TestMemoryLimit: a configuration whose cache cannot fit is refused at
// start-up with the numbers; the estimate covers what is allocated.
func TestMemoryLimit(t *testing.T) {
	f, err := gguf.Open(filepath.Join(shared.Dir(t), stories), gguf.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	_, err = New(f, Options{Parallel: 256, CtxSize: 1 << 16, KV: model.KVF32, MemoryLimit: 64 << 20})
	if err == nil || !strings.Contains(err.Error(), "MiB") || !strings.Contains(err.Error(), "256 slots × 65536 tokens") {
		t.Fatalf("got %v, want a refusal with the numbers", err)
	}
	m, err := model.Load(f)
	if err != nil {
		t.Fatal(err)
	}
	o := Options{Parallel: 3, CtxSize: 100}
	if err := o.resolve(m.Config); err != nil {
		t.Fatal(err)
	}
	c, err := model.NewCache(m.Config, o.KV, o.Parallel, o.CtxSize)
	if err != nil {
		t.Fatal(err)
	}
	if cache, _ := o.memoryNeed(m.Config); int64(cache) != c.Bytes() {
		t.Errorf("estimated cache %v bytes, allocated %d", cache, c.Bytes())
	}
}

// TestCacheTypes: kv_type sets both halves, cache_type_k and cache_type_v
// override one each, F16 by default; unknown names are refused.
func TestCacheTypes(t *testing.T) {
	tests := []struct {
		h    ipc.Hello
		k, v model.KVType
		err  string
	}{
		{ipc.Hello{}, model.KVF16, model.KVF16, ""},
		{ipc.Hello{KVType: "f32"}, model.KVF32, model.KVF32, ""},
		{ipc.Hello{CacheTypeK: "q8_0"}, model.KVQ8_0, model.KVF16, ""},
		{ipc.Hello{CacheTypeV: "q8_0"}, model.KVF16, model.KVQ8_0, ""},
		{ipc.Hello{KVType: "q8_0", CacheTypeV: "f16"}, model.KVQ8_0, model.KVF16, ""},
		{ipc.Hello{KVType: "q4"}, 0, 0, "kv_type"},
		{ipc.Hello{CacheTypeK: "Q8_0"}, 0, 0, "cache_type_k"},
		{ipc.Hello{CacheTypeV: "bf16"}, 0, 0, "cache_type_v"},
	}
	for _, tc := range tests {
		k, v, err := cacheTypes(tc.h)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%+v: err %v, want one naming %s", tc.h, err, tc.err)
			}
			continue
		}
		if err != nil || k != tc.k || v != tc.v {
			t.Errorf("%+v: %v/%v, %v; want %v/%v", tc.h, k, v, err, tc.k, tc.v)
		}
	}
}

// TestLoad: the worker's loader reads the hello's settings.
func TestLoad(t *testing.T) {
	fh, err := os.Open(filepath.Join(shared.Dir(t), stories))
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	var reports []worker.LoadProgress
	progress := func(p worker.LoadProgress) { reports = append(reports, p) }
	eng, err := Load([]*os.File{fh}, ipc.Hello{ID: 1, Protocol: ipc.Version, CtxSize: 64, Parallel: 2, KVType: "f32", Threads: 1}, progress)
	if err != nil {
		t.Fatal(err)
	}
	defer eng.(*Engine).Close()
	if info := eng.Info(); info.ContextSize != 64 || info.VocabSize != 512 || info.Architecture != "llama" || info.Kernels == "" {
		t.Errorf("info %+v", info)
	}
	// The KV cache's bytes and types are reported (what the broker logs).
	cfg := eng.(*Engine).model.Config
	if info := eng.Info(); info.CacheTypeK != "f32" || info.CacheTypeV != "f32" ||
		info.KVCacheBytes != model.CacheBytes(cfg, model.KVF32, model.KVF32, 2, 64) || info.KVCacheBytes == 0 {
		t.Errorf("cache %d bytes of %s/%s", info.KVCacheBytes, info.CacheTypeK, info.CacheTypeV)
	}
	// A load well under a second reports only its end: every tensor.
	f := eng.(*Engine).file
	if n := len(reports); n == 0 || reports[n-1].Tensors != len(f.Tensors) || reports[n-1].TensorsTotal != len(f.Tensors) {
		t.Errorf("progress reports %+v for %d tensors", reports, len(f.Tensors))
	}
	if _, err := Load([]*os.File{fh}, ipc.Hello{KVType: "q4"}, progress); err == nil {
		t.Error("kv type q4 accepted")
	}
	for _, h := range []ipc.Hello{{CacheTypeK: "q4"}, {CacheTypeV: "bf16"}} {
		if _, err := Load([]*os.File{fh}, h, progress); err == nil {
			t.Errorf("hello %+v accepted", h)
		}
	}
	if _, err := Load([]*os.File{fh}, ipc.Hello{Parallel: MaxParallel + 1}, nil); err == nil {
		t.Error("parallel beyond the limit accepted")
	}
}

// TestLoadSplit: Load takes a split model's shards, mapped or copied into
// memory, and generates from them what it generates from the whole file;
// the first shard alone is refused with an error naming the shard missing.
func TestLoadSplit(t *testing.T) {
	whole := filepath.Join(shared.Dir(t), stories)
	paths, err := splitgguf.Write(whole, t.TempDir(), "stories", 3)
	if err != nil {
		t.Fatal(err)
	}
	open := func(paths ...string) []*os.File {
		var fhs []*os.File
		for _, p := range paths {
			fh, err := os.Open(p)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { fh.Close() })
			fhs = append(fhs, fh)
		}
		return fhs
	}
	hello := ipc.Hello{ID: 1, Protocol: ipc.Version, CtxSize: 64, Parallel: 1, KVType: "f32", Threads: 1}
	generate := func(fhs []*os.File) string {
		t.Helper()
		eng, err := Load(fhs, hello, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer eng.(*Engine).Close()
		var b strings.Builder
		req := gen.Request{Prompt: sp("Once upon a time"), MaxTokens: 16, Sampling: gen.Sampling{Temperature: 0}}
		if _, err := eng.Generate(context.Background(), req, func(c gen.Chunk) error { b.WriteString(c.Text); return nil }); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	want := generate(open(whole))
	if got := generate(open(paths...)); got != want || got == "" {
		t.Errorf("split model generates %q, the whole file %q", got, want)
	}
	for _, c := range []struct {
		name  string
		files []string
		want  string
	}{
		{"first shard alone", paths[:1], "shard 2 of 3"},
		{"shards out of order", []string{paths[0], paths[2], paths[1]}, "is shard 3"},
	} {
		_, err := Load(open(c.files...), hello, nil)
		if !errors.Is(err, gguf.ErrSplit) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want gguf.ErrSplit saying %q", c.name, err, c.want)
		}
	}
}

// fitsInMemory reports whether openModel copies f for o: whether a
// private copy of f, the KV cache and the scratch o needs fit in the
// share of the memory limit.
func fitsInMemory(f *gguf.File, o Options) bool {
	return model.CopyFits(f, o.memoryLimit(), o.planFor)
}

// TestModelInMemory: the model is copied into private memory when the
// copy fits the memory limit's share beside the cache and scratch, and
// stays mapped (not counted against RLIMIT_DATA) when it does not.
func TestModelInMemory(t *testing.T) {
	fh, err := os.Open(filepath.Join(shared.Dir(t), stories))
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	f, err := gguf.OpenFile(fh, gguf.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, err := model.Load(f)
	if err != nil {
		t.Fatal(err)
	}
	o := Options{Parallel: 2, CtxSize: 256}
	r := o
	if err := r.resolve(m.Config); err != nil {
		t.Fatal(err)
	}
	cache, scratch := r.memoryNeed(m.Config)
	need := (float64(f.FileSize) + cache + scratch) / model.MemoryShare
	for _, c := range []struct {
		limit int64
		want  bool
	}{
		{0, true},                                // no limit
		{int64(need) + 4096, true},               // just fits
		{int64(need) - int64(f.FileSize), false}, // cache and scratch fit, the copy does not
	} {
		o.MemoryLimit = c.limit
		if got := fitsInMemory(f, o); got != c.want {
			t.Errorf("limit %d (need %.0f): in memory %v, want %v", c.limit, need, got, c.want)
		}
		g, err := openModel([]*os.File{fh}, o)
		if err != nil {
			t.Fatal(err)
		}
		// The copy does not follow the file; a mapping is the file. Both
		// must hold the same tensors.
		if len(g.Tensors) != len(f.Tensors) {
			t.Errorf("limit %d: %d tensors, want %d", c.limit, len(g.Tensors), len(f.Tensors))
		}
		g.Close()
	}
}
