package toolcall_test

import (
	"encoding/json"
	"fmt"

	"github.com/lisa-llm/lisa/toolcall"
)

// A Qwen reply streamed in pieces: the text before the call is sent as
// soon as it cannot be markup, the call once it is complete.
func ExampleStream() {
	s, _ := toolcall.NewStream(toolcall.Hermes, toolcall.Options{
		Tools: []string{"get_weather"},
		NewID: func() string { return "call_1" },
	})
	for _, piece := range []string{"Let me check.\n<tool", "_call>\n{\"name\": \"get_weather\", ", "\"arguments\": {\"location\": \"Paris\"}}\n</tool_call>"} {
		ds, _ := s.Write(piece)
		for _, d := range ds {
			if d.Call != nil {
				fmt.Printf("call %d: %s %s %s\n", d.Index, d.Call.ID, d.Call.Name, d.Call.Arguments)
			} else {
				fmt.Printf("content %q\n", d.Content)
			}
		}
	}
	_, r, _ := s.Close()
	fmt.Println(r.FinishReason())
	// Output:
	// content "Let me check."
	// call 0: call_1 get_weather {"location":"Paris"}
	// tool_calls
}

// The syntax a forced call (tool_choice "required") must follow on a
// Mistral Nemo model, one call only.
func ExampleForced() {
	c, _ := toolcall.Forced(toolcall.Mistral, []toolcall.Tool{{Name: "add", Parameters: json.RawMessage(`{"type": "object", "properties": {"a": {"type": "integer"}}}`)}}, false)
	fmt.Printf("%q\n%s\n%s", c.Prefix, c.Schema, c.GBNF("calls"))
	// Output:
	// "[TOOL_CALLS]"
	// {"type":"array","items":{"type":"object","properties":{"name":{"type":"string","const":"add"},"arguments":{"type":"object","properties":{"a":{"type":"integer"}}},"id":{"type":"string","minLength":9,"maxLength":9}},"required":["name","arguments","id"],"additionalProperties":false},"minItems":1,"maxItems":1}
	// root ::= "[TOOL_CALLS]" calls
}
