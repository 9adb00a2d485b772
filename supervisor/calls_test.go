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
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cl := &call{kind: ipc.ReqGenerate, maxTokens: 10, maxBytes: 1000, maxCalls: maxCalls(&tt.req), wake: make(chan struct{}, 1)}
			var err error
			sent := 0
			for _, ch := range tt.chunks {
				if err = cl.onTokens(&ipc.Tokens{ID: 1, ToolCalls: ch}); err != nil {
					break
				}
				sent += len(ch)
			}
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				ev, _ := cl.take()
				if ev == nil || len(ev.ToolCalls) != sent {
					t.Fatalf("event %+v, want %d calls", ev, sent)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error %v, want one with %q", err, tt.wantErr)
			}
		})
	}
}
