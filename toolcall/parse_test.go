package toolcall

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// seqIDs returns ids gen0, gen1, … so that results compare exactly.
func seqIDs() func() string {
	n := 0
	return func() string { n++; return fmt.Sprintf("gen%d", n-1) }
}

type parseCase struct {
	name    string
	f       Format
	out     string
	tools   []string
	max     int
	content string
	calls   []Call // ids "" mean generated (gen0, gen1, …)
	bad     bool   // Result.Err set
}

var parseCases = []parseCase{
	// Qwen2.5 / Qwen3 / Hermes.
	{name: "hermes one call", f: Hermes,
		out:   "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"location\": \"Paris\", \"unit\": \"celsius\"}}\n</tool_call>",
		calls: []Call{{Name: "get_weather", Arguments: `{"location":"Paris","unit":"celsius"}`}}},
	{name: "hermes text then two calls", f: Hermes,
		out:     "Let me check both.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"location\": \"Paris\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"add\", \"arguments\": {\"b\": 3, \"a\": 2}}\n</tool_call>\n",
		content: "Let me check both.",
		calls:   []Call{{Name: "get_weather", Arguments: `{"location":"Paris"}`}, {Name: "add", Arguments: `{"b":3,"a":2}`}}},
	{name: "hermes no closing tag at the end", f: Hermes,
		out:   "<tool_call>\n{\"name\": \"f\", \"arguments\": {}}",
		calls: []Call{{Name: "f", Arguments: `{}`}}},
	{name: "hermes arguments as a string", f: Hermes,
		out:   `<tool_call>{"name": "f", "arguments": "{\"x\": [1, 2]}"}</tool_call>`,
		calls: []Call{{Name: "f", Arguments: `{"x":[1,2]}`}}},
	{name: "hermes plain answer", f: Hermes, out: "The capital of France is Paris.\n", content: "The capital of France is Paris.\n"},
	{name: "hermes tag-like text is content", f: Hermes, out: "Use <tool> or <tool_calls> here", content: "Use <tool> or <tool_calls> here"},
	{name: "hermes malformed JSON before the arguments falls back to content", f: Hermes,
		out:     "Sure.\n<tool_call>\n{\"name\": \"f\" \"arguments\": {\"a\": 1}}\n</tool_call>",
		content: "Sure.\n<tool_call>\n{\"name\": \"f\" \"arguments\": {\"a\": 1}}\n</tool_call>", bad: true},
	{name: "hermes malformed arguments keep what was read", f: Hermes,
		out:     "Sure.\n<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": }\n</tool_call>",
		content: "Sure.}\n</tool_call>",
		calls:   []Call{{Name: "f", Arguments: `{"a":`}}, bad: true},
	{name: "hermes arguments cut off by the budget", f: Hermes,
		out:   "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": [1, 2",
		calls: []Call{{Name: "f", Arguments: `{"a":[1,2`}}, bad: true},
	{name: "hermes repeated arguments key keeps the first", f: Hermes,
		out:     `<tool_call>{"name": "f", "arguments": {"a": 1}, "arguments": {"b": 2}}</tool_call>`,
		content: `</tool_call>`,
		calls:   []Call{{Name: "f", Arguments: `{"a":1}`}}, bad: true},
	{name: "hermes arguments before the name come whole", f: Hermes,
		out:   `<tool_call>{"arguments": {"a": 1}, "name": "f"}</tool_call>`,
		calls: []Call{{Name: "f", Arguments: `{"a":1}`}}},
	{name: "hermes truncated call falls back to content", f: Hermes,
		out:     "<tool_call>\n{\"name\": \"f\", \"argum",
		content: "<tool_call>\n{\"name\": \"f\", \"argum", bad: true},
	{name: "hermes second call malformed keeps the first", f: Hermes,
		out:     "<tool_call>{\"name\": \"f\", \"arguments\": {}}</tool_call>\n<tool_call>{\"name\": 3}</tool_call>",
		content: "<tool_call>{\"name\": 3}</tool_call>",
		calls:   []Call{{Name: "f", Arguments: `{}`}}, bad: true},
	{name: "hermes arguments not an object", f: Hermes,
		out: `<tool_call>{"name": "f", "arguments": [1]}</tool_call>`, content: `<tool_call>{"name": "f", "arguments": [1]}</tool_call>`, bad: true},
	{name: "hermes function not offered", f: Hermes, tools: []string{"g"},
		out: `<tool_call>{"name": "f", "arguments": {}}</tool_call>`, content: `<tool_call>{"name": "f", "arguments": {}}</tool_call>`, bad: true},
	{name: "hermes bad name", f: Hermes,
		out: `<tool_call>{"name": "rm -rf", "arguments": {}}</tool_call>`, content: `<tool_call>{"name": "rm -rf", "arguments": {}}</tool_call>`, bad: true},
	{name: "hermes one call allowed", f: Hermes, max: 1,
		out:     "<tool_call>{\"name\": \"f\", \"arguments\": {}}</tool_call><tool_call>{\"name\": \"g\", \"arguments\": {}}</tool_call>",
		content: "<tool_call>{\"name\": \"g\", \"arguments\": {}}</tool_call>",
		calls:   []Call{{Name: "f", Arguments: `{}`}}, bad: true},
	{name: "hermes unicode and escapes", f: Hermes,
		out:   "<tool_call>\n{\"name\": \"say\", \"arguments\": {\"text\": \"Zürich \\\"<b>\\\" \\u00e9\"}}\n</tool_call>",
		calls: []Call{{Name: "say", Arguments: `{"text":"Zürich \"<b>\" \u00e9"}`}}},

	// Mistral Nemo.
	{name: "mistral ids after the arguments are generated", f: Mistral,
		out:   `[TOOL_CALLS][{"name": "get_weather", "arguments": {"location": "Paris"}, "id": "abc123XYZ"}, {"name": "add", "arguments": {"a": 1, "b": 2}, "id": "def456UVW"}]`,
		calls: []Call{{ID: "00000gen0", Name: "get_weather", Arguments: `{"location":"Paris"}`}, {ID: "00000gen1", Name: "add", Arguments: `{"a":1,"b":2}`}}},
	{name: "mistral id before the arguments", f: Mistral,
		out:   `[TOOL_CALLS][{"name": "f", "id": "abc123XYZ", "arguments": {"q": 1}}]`,
		calls: []Call{{ID: "abc123XYZ", Name: "f", Arguments: `{"q":1}`}}},
	{name: "mistral call without id", f: Mistral,
		out:   ` [TOOL_CALLS] [{"name": "f", "arguments": {"q": "x"}}]`,
		calls: []Call{{ID: "00000gen0", Name: "f", Arguments: `{"q":"x"}`}}},
	{name: "mistral second call not offered keeps the first", f: Mistral, tools: []string{"f"},
		out:     `[TOOL_CALLS][{"name": "f", "arguments": {"q": 1}}, {"name": "g", "arguments": {}}]`,
		content: `{"name": "g", "arguments": {}}]`,
		calls:   []Call{{ID: "00000gen0", Name: "f", Arguments: `{"q":1}`}}, bad: true},
	{name: "mistral arguments cut off", f: Mistral,
		out:   `[TOOL_CALLS][{"name": "f", "arguments": {"q": "Zü`,
		calls: []Call{{ID: "00000gen0", Name: "f", Arguments: `{"q":"Zü`}}, bad: true},
	{name: "mistral plain answer", f: Mistral, out: "Paris is the capital.", content: "Paris is the capital."},
	{name: "mistral not an array", f: Mistral, out: `[TOOL_CALLS]{"name": "f"}`, content: `[TOOL_CALLS]{"name": "f"}`, bad: true},
	{name: "mistral empty array", f: Mistral, out: `[TOOL_CALLS][]`, content: `[TOOL_CALLS][]`, bad: true},

	// Llama 3.x.
	{name: "llama bare call", f: Llama3,
		out:   `{"name": "get_weather", "parameters": {"location": "Paris", "unit": "celsius"}}`,
		calls: []Call{{Name: "get_weather", Arguments: `{"location":"Paris","unit":"celsius"}`}}},
	{name: "llama typed call", f: Llama3,
		out:   "\n{\"type\": \"function\", \"name\": \"add\", \"parameters\": {\"a\": 2, \"b\": 3}}",
		calls: []Call{{Name: "add", Arguments: `{"a":2,"b":3}`}}},
	{name: "llama python tag JSON", f: Llama3,
		out:   `<|python_tag|>{"name": "add", "parameters": {"a": 2, "b": 3}}`,
		calls: []Call{{Name: "add", Arguments: `{"a":2,"b":3}`}}},
	{name: "llama builtin call", f: Llama3,
		out:   `<|python_tag|>brave_search.call(query="weather in Paris")`,
		calls: []Call{{Name: "brave_search", Arguments: `{"query":"weather in Paris"}`}}},
	{name: "llama builtin two arguments", f: Llama3,
		out:   `<|python_tag|>wolfram_alpha.call(query="2+2", n=3)`,
		calls: []Call{{Name: "wolfram_alpha", Arguments: `{"query":"2+2","n":3}`}}},
	{name: "llama two calls separated by semicolon", f: Llama3,
		out:   `{"name": "f", "parameters": {}}; {"name": "g", "parameters": {"x": 1}}`,
		calls: []Call{{Name: "f", Arguments: `{}`}, {Name: "g", Arguments: `{"x":1}`}}},
	{name: "llama plain answer", f: Llama3, out: "Hello! How can I help?", content: "Hello! How can I help?"},
	{name: "llama JSON answer is content", f: Llama3, out: `{"answer": 42}`, content: `{"answer": 42}`},
	{name: "llama brace text is content", f: Llama3, out: `{not json} at all`, content: `{not json} at all`},
	{name: "llama text before JSON is content", f: Llama3,
		out: `I will call {"name": "f", "parameters": {}}`, content: `I will call {"name": "f", "parameters": {}}`},
	{name: "llama builtin malformed", f: Llama3, out: `<|python_tag|>print(1)`, content: `<|python_tag|>print(1)`, bad: true},

	// Generic JSON.
	{name: "generic call", f: Generic,
		out:   `{"tool_call": {"name": "add", "arguments": {"a": 1, "b": 2}}}`,
		calls: []Call{{Name: "add", Arguments: `{"a":1,"b":2}`}}},
	{name: "generic parallel calls", f: Generic,
		out:   `{"tool_calls": [{"name": "f", "arguments": {}, "id": "call1"}, {"name": "g", "id": "call2", "arguments": {"x": "y"}}]}`,
		calls: []Call{{Name: "f", Arguments: `{}`}, {ID: "call2", Name: "g", Arguments: `{"x":"y"}`}}},
	{name: "generic call and calls", f: Generic,
		out:     `{"tool_calls": [{"name": "f", "arguments": {}}], "tool_call": {"name": "g", "arguments": {}}}`,
		content: `], "tool_call": {"name": "g", "arguments": {}}}`,
		calls:   []Call{{Name: "f", Arguments: `{}`}}, bad: true},
	{name: "generic response", f: Generic, out: `{"response": "Paris is the capital.\n"}`, content: "Paris is the capital.\n"},
	{name: "generic structured response", f: Generic, out: `{"response": {"a": 1}}`, content: "{\n  \"a\": 1\n}"},
	{name: "generic free text", f: Generic, out: "just text", content: "just text"},
	{name: "generic bad call", f: Generic, out: `{"tool_call": {"name": ""}}`, content: `{"tool_call": {"name": ""}}`, bad: true},
}

func expect(c parseCase) Result {
	want := Result{Content: c.content}
	gen := 0
	for _, call := range c.calls {
		if call.ID == "" {
			call.ID = fmt.Sprintf("gen%d", gen)
			gen++
		}
		want.Calls = append(want.Calls, call)
	}
	return want
}

func TestParse(t *testing.T) {
	for _, c := range parseCases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Parse(c.f, c.out, Options{Tools: c.tools, MaxCalls: c.max, NewID: seqIDs()})
			if err != nil {
				t.Fatal(err)
			}
			if (got.Err != nil) != c.bad {
				t.Errorf("Err = %v, want error %v", got.Err, c.bad)
			}
			if got.Err != nil && !errors.Is(got.Err, ErrMalformed) {
				t.Errorf("Err = %v, not ErrMalformed", got.Err)
			}
			got.Err = nil
			if want := expect(c); !reflect.DeepEqual(got, want) {
				t.Errorf("got  %+v\nwant %+v", got, want)
			}
			wantFinish := "stop"
			if len(c.calls) > 0 {
				wantFinish = "tool_calls"
			}
			if got.FinishReason() != wantFinish {
				t.Errorf("finish reason %q, want %q", got.FinishReason(), wantFinish)
			}
		})
	}
}

// streamAll feeds pieces to a stream and returns the concatenated
// content deltas, the calls its pieces join to and the result of Close.
// A call's first piece must carry its id and name, later ones only
// argument text, in index order.
func streamAll(t testing.TB, f Format, o Options, pieces []string) (string, []Call, Result) {
	t.Helper()
	s, err := NewStream(f, o)
	if err != nil {
		t.Fatal(err)
	}
	var content strings.Builder
	var calls []Call
	take := func(ds []Delta) {
		for _, d := range ds {
			if d.Call != nil {
				switch {
				case d.Index == len(calls) && d.Call.ID != "" && d.Call.Name != "":
					calls = append(calls, *d.Call)
				case d.Index == len(calls)-1 && d.Call.ID == "" && d.Call.Name == "" && d.Call.Arguments != "":
					calls[d.Index].Arguments += d.Call.Arguments
				default:
					t.Fatalf("call piece %+v (index %d) after %d calls", *d.Call, d.Index, len(calls))
				}
				continue
			}
			if d.Content == "" {
				t.Fatal("empty content delta")
			}
			content.WriteString(d.Content)
		}
	}
	for _, p := range pieces {
		ds, err := s.Write(p)
		if err != nil {
			t.Fatal(err)
		}
		take(ds)
	}
	ds, r, err := s.Close()
	if err != nil {
		t.Fatal(err)
	}
	take(ds)
	return content.String(), calls, r
}

// TestStreamSplits checks that every split of each output into two
// pieces, and byte-by-byte feeding, stream the same content and calls as
// Parse, and that no held-back markup leaks as content on the way.
func TestStreamSplits(t *testing.T) {
	for _, c := range parseCases {
		t.Run(c.name, func(t *testing.T) {
			whole, _ := Parse(c.f, c.out, Options{Tools: c.tools, MaxCalls: c.max, NewID: seqIDs()})
			splits := [][]string{}
			for i := 0; i <= len(c.out); i++ {
				splits = append(splits, []string{c.out[:i], c.out[i:]})
			}
			var bytes []string
			for i := 0; i < len(c.out); i++ {
				bytes = append(bytes, c.out[i:i+1])
			}
			splits = append(splits, bytes)
			for _, pieces := range splits {
				content, calls, r := streamAll(t, c.f, Options{Tools: c.tools, MaxCalls: c.max, NewID: seqIDs()}, pieces)
				if content != whole.Content || !reflect.DeepEqual(calls, whole.Calls) {
					t.Fatalf("pieces %q:\nstreamed %q %+v\nparse    %q %+v", pieces, content, calls, whole.Content, whole.Calls)
				}
				if !reflect.DeepEqual(r, whole) {
					t.Fatalf("pieces %q: Close result %+v, Parse %+v", pieces, r, whole)
				}
			}
		})
	}
}

// TestStreamHoldsMarkup checks what is sent before the output ends: the
// text before a call as soon as it cannot be markup, nothing of the
// call's markup, and of a committed call its arguments so far but an
// unfinished UTF-8 sequence.
func TestStreamHoldsMarkup(t *testing.T) {
	cases := []struct {
		f      Format
		pieces []string
		sent   string // content sent before Close
		args   string // arguments sent before Close
	}{
		{Hermes, []string{"Checking", " now\n<tool", "_call>\n{\"name\": \"f\", \"arguments\""}, "Checking now", ""},
		{Hermes, []string{"<tool_call>\n{\"name\": \"f\", \"arguments\": {"}, "", "{"},
		{Hermes, []string{"<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": \"Z\xc3"}, "", `{"a":"Z`},
		{Hermes, []string{"<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": 1}} </tool"}, "", `{"a":1}`},
		{Hermes, []string{"<tool_call>{\"arguments\": {\"a\": 1}, \"name\": \"f\""}, "", ""},
		{Hermes, []string{"a <", "b"}, "a <b", ""},
		{Mistral, []string{"ok [TOOL_", "CALLS][{"}, "ok", ""},
		{Mistral, []string{"[TOOL_CALLS][{\"name\": \"f\", \"arguments\": {\"q\": 12"}, "", `{"q":12`},
		{Llama3, []string{"  ", "{\"name\": \"f\""}, "", ""},
		{Llama3, []string{"  ", "{\"name\": \"f\", \"parameters\": {\"x\":", " true"}, "", `{"x":true`},
		{Llama3, []string{"Hi", " <|python"}, "Hi", ""},
		{Generic, []string{`{"response": "hi"}`}, "", ""},
		{Generic, []string{`{"tool_call": {"name": "f", "arguments": {"a": [`}, "", `{"a":[`},
	}
	for _, c := range cases {
		s, err := NewStream(c.f, Options{})
		if err != nil {
			t.Fatal(err)
		}
		var sent, args strings.Builder
		for _, p := range c.pieces {
			ds, err := s.Write(p)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range ds {
				if d.Call != nil {
					args.WriteString(d.Call.Arguments)
				}
				sent.WriteString(d.Content)
			}
		}
		if sent.String() != c.sent || args.String() != c.args {
			t.Errorf("%s %q: sent %q and arguments %q, want %q and %q", c.f, c.pieces, sent.String(), args.String(), c.sent, c.args)
		}
	}
}

// TestStreamArgumentPieces checks that the arguments of calls in the
// layouts models write arrive in more than one piece when fed byte by
// byte, the first as soon as the arguments open.
func TestStreamArgumentPieces(t *testing.T) {
	for _, c := range parseCases {
		if len(c.calls) == 0 || c.bad || strings.Contains(c.out, `"arguments": "`) || strings.Contains(c.out, ".call(") ||
			strings.Contains(c.out, `{"arguments"`) {
			continue // no calls, or calls sent whole
		}
		s, err := NewStream(c.f, Options{Tools: c.tools, MaxCalls: c.max, NewID: seqIDs()})
		if err != nil {
			t.Fatal(err)
		}
		pieces := map[int]int{}
		for i := 0; i < len(c.out); i++ {
			ds, err := s.Write(c.out[i : i+1])
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range ds {
				if d.Call != nil {
					pieces[d.Index]++
				}
			}
		}
		for i, call := range c.calls {
			if want := min(2, len(call.Arguments)); pieces[i] < want {
				t.Errorf("%s: call %d came in %d pieces before the end, want at least %d", c.name, i, pieces[i], want)
			}
		}
	}
}

func TestLimits(t *testing.T) {
	if _, err := Parse(Hermes, strings.Repeat("a", MaxOutput+1), Options{}); !errors.Is(err, ErrTooLarge) {
		t.Errorf("huge output: %v", err)
	}
	if _, err := Parse("xml", "", Options{}); err == nil {
		t.Error("unknown format accepted")
	}
	s, _ := NewStream(Hermes, Options{})
	if _, err := s.Write(strings.Repeat("a", MaxOutput)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Write("a"); !errors.Is(err, ErrTooLarge) {
		t.Errorf("stream past the limit: %v", err)
	}
	var many strings.Builder
	for i := 0; i <= MaxCalls; i++ {
		many.WriteString(`<tool_call>{"name": "f", "arguments": {}}</tool_call>`)
	}
	r, _ := Parse(Hermes, many.String(), Options{})
	if len(r.Calls) != MaxCalls || !errors.Is(r.Err, ErrMalformed) {
		t.Errorf("%d calls, err %v; want %d and ErrMalformed", len(r.Calls), r.Err, MaxCalls)
	}
}

func TestGeneratedIDs(t *testing.T) {
	r, _ := Parse(Hermes, `<tool_call>{"name": "f", "arguments": {}}</tool_call><tool_call>{"name": "f", "arguments": {}}</tool_call>`, Options{})
	if len(r.Calls) != 2 {
		t.Fatalf("%d calls", len(r.Calls))
	}
	for _, c := range r.Calls {
		if !strings.HasPrefix(c.ID, "call_") || len(c.ID) != 29 || !validID(c.ID) {
			t.Errorf("id %q", c.ID)
		}
	}
	if r.Calls[0].ID == r.Calls[1].ID {
		t.Error("two calls share an id")
	}
}

// BenchmarkStreamContent streams a 64 KiB content reply in 4-byte
// pieces: resuming from checkpoints keeps it near linear.
func BenchmarkStreamContent(b *testing.B) {
	text := strings.Repeat("The weather in Paris is <b>sunny</b> today. ", 1500)
	for b.Loop() {
		s, _ := NewStream(Hermes, Options{})
		for i := 0; i < len(text); i += 4 {
			if _, err := s.Write(text[i:min(i+4, len(text))]); err != nil {
				b.Fatal(err)
			}
		}
		if _, _, err := s.Close(); err != nil {
			b.Fatal(err)
		}
	}
}
