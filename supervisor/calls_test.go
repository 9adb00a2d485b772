package supervisor

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/lisa-llm/lisa/gen"
	"github.com/lisa-llm/lisa/ipc"
)

// TestCallToolCalls: generated tool calls must come in index order and
// within the request's count (none without tools, one without parallel
// calls), counted per choice, for a choice the request asked for; what
// passes reaches the broker's events, a run of each choice's chunks merged.
func TestCallToolCalls(t *testing.T) {
	c := func(i int) gen.CallDelta { return gen.CallDelta{Index: i, ID: "call_x", Name: "f", Arguments: "{}"} }
	type chunk struct {
		choice int
		calls  []gen.CallDelta
	}
	one := func(calls ...[]gen.CallDelta) []chunk {
		var out []chunk
		for _, cs := range calls {
			out = append(out, chunk{0, cs})
		}
		return out
	}
	tools := []gen.Tool{{Name: "f"}}
	// first and more are the pieces of a call sent as it is written.
	first := func(i int, args string) gen.CallDelta {
		return gen.CallDelta{Index: i, ID: "call_x", Name: "f", Arguments: args}
	}
	more := func(i int, args string) gen.CallDelta { return gen.CallDelta{Index: i, Arguments: args} }
	par := gen.Request{Tools: tools, ParallelToolCalls: true}
	tests := []struct {
		name     string
		req      gen.Request
		chunks   []chunk
		wantErr  string // "" for none
		wantRuns []int  // without an error: the choices of the events, in order
	}{
		{"in order", gen.Request{Tools: tools, ParallelToolCalls: true}, one([]gen.CallDelta{c(0)}, []gen.CallDelta{c(1), c(2)}), "", []int{0}},
		{"skips an index", gen.Request{Tools: tools, ParallelToolCalls: true}, one([]gen.CallDelta{c(0)}, []gen.CallDelta{c(2)}), "want 1", nil},
		{"starts past 0", gen.Request{Tools: tools, ParallelToolCalls: true}, one([]gen.CallDelta{c(1)}), "want 0", nil},
		{"second call without parallel calls", gen.Request{Tools: tools}, one([]gen.CallDelta{c(0)}, []gen.CallDelta{c(1)}), "allowing 1", nil},
		{"choice none", gen.Request{Tools: tools, ToolChoice: gen.ToolChoice{Mode: gen.ChoiceNone}}, one([]gen.CallDelta{c(0)}), "allowing 0", nil},
		{"no tools", gen.Request{}, one([]gen.CallDelta{c(0)}), "allowing 0", nil},
		{"each choice counts its own", gen.Request{Tools: tools, N: 3},
			[]chunk{{0, []gen.CallDelta{c(0)}}, {2, []gen.CallDelta{c(0)}}, {2, nil}, {1, []gen.CallDelta{c(0)}}}, "", []int{0, 2, 1}},
		{"second call of one choice", gen.Request{Tools: tools, N: 2},
			[]chunk{{1, []gen.CallDelta{c(0)}}, {1, []gen.CallDelta{c(1)}}}, "allowing 1", nil},
		{"a choice past n", gen.Request{N: 2}, []chunk{{0, nil}, {2, nil}}, "choice 2 of a request for 2", nil},
		{"a choice without n", gen.Request{}, []chunk{{1, nil}}, "choice 1 of a request for 1", nil},
		{"pieces", par, one([]gen.CallDelta{first(0, "")}, []gen.CallDelta{more(0, `{"a"`), more(0, ":1}")}, []gen.CallDelta{first(1, "{"), more(1, "}")}, []gen.CallDelta{more(1, " ")}), "", []int{0}},
		{"the last call cut off", par, one([]gen.CallDelta{first(0, "{}"), first(1, `{"a":`)}), "", []int{0}},
		{"piece of no call", par, one([]gen.CallDelta{more(0, "{}")}), "want -1", nil},
		{"piece of an earlier call", par, one([]gen.CallDelta{first(0, "{}"), first(1, "{}")}, []gen.CallDelta{more(0, " ")}), "want 1", nil},
		{"a call cut off before the next", par, one([]gen.CallDelta{first(0, `{"a":`)}, []gen.CallDelta{first(1, "{}")}), "not a JSON object", nil},
		{"pieces of two choices", gen.Request{Tools: tools, N: 2}, []chunk{{0, []gen.CallDelta{first(0, "{")}}, {1, []gen.CallDelta{first(0, "{}")}}, {0, []gen.CallDelta{more(0, "}")}}}, "", []int{0, 1, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cl := &call{kind: ipc.ReqGenerate, n: tt.req.Choices(), maxTokens: 10, maxBytes: 1000, maxCalls: maxCalls(&tt.req), wake: make(chan struct{}, 1)}
			var err error
			sent := 0
			args := map[[2]int]string{} // each choice's calls' argument pieces joined
			for _, ch := range tt.chunks {
				for _, d := range ch.calls {
					args[[2]int{ch.choice, d.Index}] += d.Arguments
				}
				if err = cl.onTokens(&ipc.Tokens{ID: 1, Index: ch.choice, Text: "x", ToolCalls: ch.calls}); err != nil {
					break
				}
				for _, d := range ch.calls {
					if d.ID != "" {
						sent++ // a call begun; later pieces join it
					}
				}
			}
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				evs := cl.take()
				var runs []int
				got := 0
				joined := map[[2]int]string{}
				for _, ev := range evs {
					runs = append(runs, ev.Index)
					for _, c := range ev.ToolCalls {
						joined[[2]int{ev.Index, c.Index}] += c.Arguments
						if c.ID != "" {
							got++
						}
					}
				}
				if !slices.Equal(runs, tt.wantRuns) || got != sent {
					t.Fatalf("events %+v: choices %v and %d calls, want %v and %d", evs, runs, got, tt.wantRuns, sent)
				}
				if !maps.Equal(joined, args) {
					t.Fatalf("arguments joined %v, want %v", joined, args)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error %v, want one with %q", err, tt.wantErr)
			}
		})
	}
}

// TestCallDoneChoices: a done must carry one finish reason per choice for
// n > 1 and none for n = 1, and count at most max_tokens per choice.
func TestCallDoneChoices(t *testing.T) {
	stop := gen.FinishStop
	tests := []struct {
		name    string
		n       int
		done    ipc.Done
		wantErr string
	}{
		{"one choice", 1, ipc.Done{FinishReason: stop, Usage: gen.Usage{CompletionTokens: 10}}, ""},
		{"one choice with a list", 1, ipc.Done{FinishReason: stop, Choices: []gen.FinishReason{stop, stop}}, "2 finish reasons"},
		{"three choices", 3, ipc.Done{FinishReason: stop, Usage: gen.Usage{CompletionTokens: 30}, Choices: []gen.FinishReason{stop, stop, stop}}, ""},
		{"three choices, two reasons", 3, ipc.Done{FinishReason: stop, Choices: []gen.FinishReason{stop, stop}}, "2 finish reasons"},
		{"three choices, no list", 3, ipc.Done{FinishReason: stop}, "0 finish reasons"},
		{"tokens past n×max_tokens", 3, ipc.Done{FinishReason: stop, Usage: gen.Usage{CompletionTokens: 31}, Choices: []gen.FinishReason{stop, stop, stop}}, "31 tokens"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cl := &call{kind: ipc.ReqGenerate, n: tt.n, maxTokens: 10, maxBytes: 1000, wake: make(chan struct{}, 1)}
			err := cl.onDone(&tt.done)
			if tt.wantErr == "" {
				evs := cl.take()
				if err != nil || len(evs) != 1 || len(evs[0].Choices) != len(tt.done.Choices) {
					t.Fatalf("error %v, events %+v", err, evs)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error %v, want one with %q", err, tt.wantErr)
			}
		})
	}
}
