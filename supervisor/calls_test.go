package supervisor

import (
	"strings"
	"testing"

	"github.com/lisa-llm/lisa/gen"
	"github.com/lisa-llm/lisa/ipc"
)

// TestCallToolCalls: generated tool calls must come in index order and
// within the request's count (none without tools, one without parallel
// calls); what passes reaches the broker's event.
func TestCallToolCalls(t *testing.T) {
	c := func(i int) gen.CallDelta { return gen.CallDelta{Index: i, ID: "call_x", Name: "f", Arguments: "{}"} }
	// first and more are the pieces of a call sent as it is written.
	first := func(i int, args string) gen.CallDelta {
		return gen.CallDelta{Index: i, ID: "call_x", Name: "f", Arguments: args}
	}
	more := func(i int, args string) gen.CallDelta { return gen.CallDelta{Index: i, Arguments: args} }
	tools := gen.Request{Tools: []gen.Tool{{Name: "f"}}, ParallelToolCalls: true}
	tests := []struct {
		name    string
		req     gen.Request
		chunks  [][]gen.CallDelta
		wantErr string // "" for none
	}{
		{"in order", gen.Request{Tools: []gen.Tool{{Name: "f"}}, ParallelToolCalls: true}, [][]gen.CallDelta{{c(0)}, {c(1), c(2)}}, ""},
		{"skips an index", gen.Request{Tools: []gen.Tool{{Name: "f"}}, ParallelToolCalls: true}, [][]gen.CallDelta{{c(0)}, {c(2)}}, "want 1"},
		{"starts past 0", gen.Request{Tools: []gen.Tool{{Name: "f"}}, ParallelToolCalls: true}, [][]gen.CallDelta{{c(1)}}, "want 0"},
		{"second call without parallel calls", gen.Request{Tools: []gen.Tool{{Name: "f"}}}, [][]gen.CallDelta{{c(0)}, {c(1)}}, "allowing 1"},
		{"choice none", gen.Request{Tools: []gen.Tool{{Name: "f"}}, ToolChoice: gen.ToolChoice{Mode: gen.ChoiceNone}}, [][]gen.CallDelta{{c(0)}}, "allowing 0"},
		{"no tools", gen.Request{}, [][]gen.CallDelta{{c(0)}}, "allowing 0"},
		{"pieces", tools, [][]gen.CallDelta{{first(0, "")}, {more(0, `{"a"`), more(0, ":1}")}, {first(1, "{"), more(1, "}")}, {more(1, " ")}}, ""},
		{"the last call cut off", tools, [][]gen.CallDelta{{first(0, "{}"), first(1, `{"a":`)}}, ""},
		{"piece of no call", tools, [][]gen.CallDelta{{more(0, "{}")}}, "want -1"},
		{"piece of an earlier call", tools, [][]gen.CallDelta{{first(0, "{}"), first(1, "{}")}, {more(0, " ")}}, "want 1"},
		{"a call cut off before the next", tools, [][]gen.CallDelta{{first(0, `{"a":`)}, {first(1, "{}")}}, "not a JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cl := &call{kind: ipc.ReqGenerate, maxTokens: 10, maxBytes: 1000, maxCalls: maxCalls(&tt.req), wake: make(chan struct{}, 1)}
			var err error
			sent := 0
			args := map[int]string{} // each call's argument pieces joined
			for _, ch := range tt.chunks {
				for _, d := range ch {
					args[d.Index] += d.Arguments
				}
				if err = cl.onTokens(&ipc.Tokens{ID: 1, ToolCalls: ch}); err != nil {
					break
				}
				for _, d := range ch {
					if d.ID != "" {
						sent++ // a call begun; later pieces join it
					}
				}
			}
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				ev, _ := cl.take()
				if ev == nil || len(ev.ToolCalls) != sent {
					t.Fatalf("event %+v, want %d calls", ev, sent)
				}
				for _, c := range ev.ToolCalls {
					if c.ID == "" || c.Arguments != args[c.Index] {
						t.Errorf("call %+v, want id and arguments %q", c, args[c.Index])
					}
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error %v, want one with %q", err, tt.wantErr)
			}
		})
	}
}
