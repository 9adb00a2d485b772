package toolcall

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// replyRef is a file of testdata/regen.sh: model outputs parsed by
// llama-server's parser for one template.
type replyRef struct {
	ReasoningFormat string `json:"reasoning_format"`
	Results         []struct {
		Tools       []json.RawMessage `json:"tools"`
		RenderedHex string            `json:"rendered_hex"`
		Parsed      []struct {
			OutputHex    string `json:"output_hex"`
			ContentHex   string `json:"content_hex"`
			ReasoningHex string `json:"reasoning_content_hex"`
			ToolCalls    []struct {
				Name      string `json:"name"`
				Arguments string `json:"arguments"`
			} `json:"tool_calls"`
			Error string `json:"error"`
		} `json:"parsed"`
	} `json:"results"`
}

func unhex(t *testing.T, s string) string {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestReplyMatchesLlamaCpp reads model outputs of gpt-oss (Harmony) and
// Qwen3 (<think> and Hermes calls) as llama-server's parser reads them,
// with its default reasoning format and with none: the same content,
// reasoning and calls (arguments compared as compact JSON: this package
// sends them compact). An output llama.cpp refuses (not Harmony at all)
// is content here, with Result.Err set.
func TestReplyMatchesLlamaCpp(t *testing.T) {
	for _, c := range []struct {
		file     string
		f        Format
		thinking Thinking
	}{
		{"gpt-oss-parse", Harmony, NoThinking},
		{"gpt-oss-parse-none", Harmony, NoThinking},
		{"qwen3-parse", Hermes, Think},
		{"qwen3-parse-none", Hermes, Think},
	} {
		t.Run(c.file, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", c.file+".json"))
			if err != nil {
				t.Fatal(err)
			}
			var ref replyRef
			if err := json.Unmarshal(data, &ref); err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, r := range ref.Results {
				o := ReplyOptions{Format: c.f, Calls: len(r.Tools) > 0, Thinking: c.thinking,
					ThinkingOpen: ThinkingOpen(unhex(t, r.RenderedHex)), KeepReasoning: ref.ReasoningFormat == "none",
					Options: Options{NewID: seqIDs()}}
				for _, p := range r.Parsed {
					n++
					out := unhex(t, p.OutputHex)
					got, err := ParseReply(out, o)
					if err != nil {
						t.Fatal(err)
					}
					if p.Error != "" {
						if got.Err == nil || got.Content != out || got.Reasoning != "" || len(got.Calls) > 0 {
							t.Errorf("%q: llama.cpp refuses it (%s), got %+v", out, p.Error, got)
						}
						continue
					}
					want := Result{Content: unhex(t, p.ContentHex), Reasoning: unhex(t, p.ReasoningHex)}
					for _, tc := range p.ToolCalls {
						var b bytes.Buffer
						if err := json.Compact(&b, []byte(tc.Arguments)); err != nil {
							t.Fatal(err)
						}
						want.Calls = append(want.Calls, Call{Name: tc.Name, Arguments: b.String()})
					}
					for i := range got.Calls {
						got.Calls[i].ID = ""
					}
					got.Err = nil
					if len(got.Calls) > 0 && o.KeepReasoning {
						// This package's call parsers drop the white space
						// next to call markup (see the package doc); with
						// none, llama.cpp keeps it before a Hermes call.
						want.Content = strings.TrimRight(want.Content, spaces)
					}
					if !reflect.DeepEqual(got, want) {
						t.Errorf("%q:\n got %+v\nwant %+v", out, got, want)
					}
				}
			}
			if n == 0 {
				t.Fatal("no parsed outputs in the reference")
			}
		})
	}
}

type replyCase struct {
	name      string
	o         ReplyOptions
	out       string
	content   string
	reasoning string
	calls     []Call // ids "" mean generated (gen0, …)
	bad       bool   // Result.Err set
}

var (
	harmonyCalls = ReplyOptions{Format: Harmony, Calls: true, Options: Options{Tools: []string{"add", "get_weather"}}}
	harmonyText  = ReplyOptions{Format: Harmony}
	thinkText    = ReplyOptions{Format: Hermes, Thinking: Think}
	thinkCalls   = ReplyOptions{Format: Hermes, Thinking: Think, Calls: true}
)

var replyCases = []replyCase{
	{name: "harmony analysis and final", o: harmonyText,
		out:       "<|channel|>analysis<|message|>Think.<|end|><|start|>assistant<|channel|>final<|message|>Answer.",
		content:   "Answer.",
		reasoning: "Think."},
	{name: "harmony final ends with end", o: harmonyText,
		out: "<|channel|>final<|message|>Answer.<|end|>", content: "Answer."},
	{name: "harmony stray commentary before final", o: harmonyText,
		out: "<|channel|>commentary to=assistant<|channel|>final<|message|>Hi", content: "Hi"},
	{name: "harmony white-space reasoning is none", o: harmonyText,
		out: "<|channel|>analysis<|message|> \n<|end|><|start|>assistant<|channel|>analysis<|message|>\t<|end|><|start|>assistant<|channel|>final<|message|>x", content: "x"},
	{name: "harmony reasoning cut off", o: harmonyText,
		out: "<|channel|>analysis<|message|>Still going", reasoning: "Still going"},
	{name: "harmony call with constraint", o: harmonyCalls,
		out:       "<|channel|>analysis<|message|>Call it.<|end|><|start|>assistant to=functions.add<|channel|>commentary <|constrain|>json<|message|>{\"a\": 1, \"b\": 2}<|call|>",
		reasoning: "Call it.",
		calls:     []Call{{Name: "add", Arguments: `{"a":1,"b":2}`}}},
	{name: "harmony recipient after the channel", o: harmonyCalls,
		out:   "<|channel|>commentary to=functions.get_weather json<|message|>{\"location\": \"Paris\"}",
		calls: []Call{{Name: "get_weather", Arguments: `{"location":"Paris"}`}}},
	{name: "harmony two calls", o: harmonyCalls,
		out:   " to=functions.add<|channel|>commentary<|message|>{\"a\":1}<|call|><|start|>assistant to=functions.add<|channel|>commentary<|message|>{\"a\":2}",
		calls: []Call{{Name: "add", Arguments: `{"a":1}`}, {Name: "add", Arguments: `{"a":2}`}}},
	{name: "harmony calls beyond the limit are dropped", o: ReplyOptions{Format: Harmony, Calls: true, Options: Options{MaxCalls: 1}},
		out:   " to=functions.add<|channel|>commentary<|message|>{\"a\":1}<|call|><|start|>assistant to=functions.add<|channel|>commentary<|message|>{\"a\":2}",
		calls: []Call{{Name: "add", Arguments: `{"a":1}`}}, bad: true},
	{name: "harmony call to a function not offered is dropped", o: harmonyCalls,
		out:     "<|channel|>analysis<|message|>r<|end|><|start|>assistant to=functions.rm<|channel|>commentary<|message|>{}<|end|><|start|>assistant<|channel|>final<|message|>ok",
		content: "ok", reasoning: "r", bad: true},
	{name: "harmony built-in tool call without tools is dropped", o: harmonyText,
		out: "<|channel|>analysis<|message|>search<|end|><|start|>assistant<|channel|>analysis to=browser.search<|message|>{\"query\":\"x\"}<|call|>", reasoning: "search"},
	{name: "harmony call while tools are off is dropped", o: harmonyText,
		out: " to=functions.add<|channel|>commentary<|message|>{\"a\":1}<|call|>"},
	{name: "harmony arguments cut off keep what was read", o: harmonyCalls,
		out:   " to=functions.add<|channel|>commentary<|message|>{\"a\": [1, 2",
		calls: []Call{{Name: "add", Arguments: `{"a":[1,2`}}, bad: true},
	{name: "harmony malformed arguments: the rest is content", o: harmonyCalls,
		out:   " to=functions.add<|channel|>commentary<|message|>{\"a\" 1}",
		calls: []Call{{Name: "add", Arguments: `{"a"`}}, content: "1}", bad: true},
	{name: "harmony arguments not an object: dropped", o: harmonyCalls,
		out: " to=functions.add<|channel|>commentary<|message|>[1]<|end|><|start|>assistant<|channel|>final<|message|>ok", content: "ok", bad: true},
	{name: "harmony plain text is content", o: harmonyText,
		out: "Hello there.", content: "Hello there.", bad: true},
	{name: "harmony unknown channel is content", o: harmonyText,
		out: "<|channel|>secret<|message|>x", content: "<|channel|>secret<|message|>x", bad: true},
	{name: "harmony text after a message is content", o: harmonyText,
		out: "<|channel|>final<|message|>a<|end|>junk", content: "ajunk", bad: true},
	{name: "harmony keep reasoning", o: ReplyOptions{Format: Harmony, KeepReasoning: true},
		out:     "<|channel|>analysis<|message|>r<|end|><|start|>assistant<|channel|>final<|message|>c",
		content: "<|channel|>analysis<|message|>r<|end|>c"},
	{name: "harmony preamble is content", o: harmonyText,
		out: "<|channel|>commentary<|message|>Let me see. <|end|><|start|>assistant<|channel|>final<|message|>Done.", content: "Let me see. Done."},

	{name: "think then content", o: thinkText,
		out: "<think>\nwhy\n</think>\n\nbecause", reasoning: "why\n", content: "because"},
	{name: "think opened by the prompt", o: ReplyOptions{Format: Hermes, Thinking: Think, ThinkingOpen: true},
		out: "why</think>\n\nbecause", reasoning: "why", content: "because"},
	{name: "think cut off", o: thinkText, out: "<think>hmm", reasoning: "hmm"},
	{name: "think absent", o: thinkText, out: "  plain <think>x</think>", content: "plain <think>x</think>"},
	{name: "think empty", o: thinkText, out: "<think>\n\n</think>\n\nx", content: "x"},
	{name: "think partial tag at the end is content", o: thinkText, out: "<thi", content: "<thi"},
	{name: "think kept with none", o: ReplyOptions{Format: Hermes, Thinking: Think, KeepReasoning: true},
		out: "<think>a</think>b", content: "<think>a</think>b"},
	{name: "think then a call", o: thinkCalls,
		out:       "<think>\nadd\n</think>\n\n<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 1}}\n</tool_call>",
		reasoning: "add\n",
		calls:     []Call{{Name: "add", Arguments: `{"a":1}`}}},
	{name: "no thinking markup", o: ReplyOptions{Format: Hermes},
		out: "<think>a</think>b", content: "<think>a</think>b"},
}

// replyAll streams pieces through a ReplyStream and joins the deltas,
// checking their shape as streamAll does.
func replyAll(t testing.TB, o ReplyOptions, pieces []string) (Result, Result) {
	t.Helper()
	s, err := NewReplyStream(o)
	if err != nil {
		t.Fatal(err)
	}
	var joined Result
	var content, reason strings.Builder
	take := func(ds []Delta) {
		for _, d := range ds {
			switch {
			case d.Call != nil:
				if d.Content != "" || d.Reasoning != "" {
					t.Fatalf("delta %+v mixes a call with text", d)
				}
				switch {
				case d.Index == len(joined.Calls) && d.Call.ID != "" && d.Call.Name != "":
					joined.Calls = append(joined.Calls, *d.Call)
				case d.Index == len(joined.Calls)-1 && d.Call.ID == "" && d.Call.Name == "" && d.Call.Arguments != "":
					joined.Calls[d.Index].Arguments += d.Call.Arguments
				default:
					t.Fatalf("call piece %+v (index %d) after %d calls", *d.Call, d.Index, len(joined.Calls))
				}
			case d.Reasoning != "" && d.Content == "":
				reason.WriteString(d.Reasoning)
			case d.Content != "" && d.Reasoning == "":
				content.WriteString(d.Content)
			default:
				t.Fatalf("delta %+v", d)
			}
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
	joined.Content, joined.Reasoning = content.String(), reason.String()
	return joined, r
}

func TestReply(t *testing.T) {
	for _, c := range replyCases {
		t.Run(c.name, func(t *testing.T) {
			o := c.o
			o.Options.NewID = seqIDs()
			r, err := ParseReply(c.out, o)
			if err != nil {
				t.Fatal(err)
			}
			want := make([]Call, len(c.calls))
			for i, call := range c.calls {
				want[i] = call
				if want[i].ID == "" {
					want[i].ID = fmt.Sprintf("gen%d", i)
				}
			}
			if r.Content != c.content || r.Reasoning != c.reasoning || !reflect.DeepEqual(r.Calls, want) && (len(r.Calls) > 0 || len(want) > 0) || (r.Err != nil) != c.bad {
				t.Fatalf("got content %q reasoning %q calls %+v err %v\nwant content %q reasoning %q calls %+v bad %v",
					r.Content, r.Reasoning, r.Calls, r.Err, c.content, c.reasoning, want, c.bad)
			}
			// Every split in two and byte-by-byte streaming agree.
			for k := 0; k <= len(c.out); k++ {
				o.Options.NewID = seqIDs()
				joined, sr := replyAll(t, o, []string{c.out[:k], c.out[k:]})
				if !reflect.DeepEqual(sr, r) || joined.Content != r.Content || joined.Reasoning != r.Reasoning || !reflect.DeepEqual(joined.Calls, r.Calls) && len(r.Calls) > 0 {
					t.Fatalf("split at %d: streamed %+v / joined %+v, want %+v", k, sr, joined, r)
				}
			}
			o.Options.NewID = seqIDs()
			if _, sr := replyAll(t, o, strings.Split(c.out, "")); !reflect.DeepEqual(sr, r) {
				t.Fatalf("byte by byte: %+v, want %+v", sr, r)
			}
		})
	}
}

// TestReplyStreamsReasoningEarly checks that reasoning and content are
// sent as they come, not held to the end: only a possible end tag is
// held back.
func TestReplyStreamsReasoningEarly(t *testing.T) {
	for _, c := range []struct {
		o             ReplyOptions
		first         string
		wantReasoning string
		wantContent   string
	}{
		{harmonyText, "<|channel|>analysis<|message|>abc<|e", "abc", ""},
		{harmonyText, "<|channel|>final<|message|>hello <", "", "hello "},
		{thinkText, "<think>\nabc</thi", "abc", ""},
		{thinkText, "<think>a</think>\n\nhi", "a", "hi"},
	} {
		s, err := NewReplyStream(c.o)
		if err != nil {
			t.Fatal(err)
		}
		ds, err := s.Write(c.first)
		if err != nil {
			t.Fatal(err)
		}
		var r, ct string
		for _, d := range ds {
			r += d.Reasoning
			ct += d.Content
		}
		if r != c.wantReasoning || ct != c.wantContent {
			t.Errorf("%q: reasoning %q content %q, want %q %q", c.first, r, ct, c.wantReasoning, c.wantContent)
		}
	}
}

// FuzzReply feeds arbitrary outputs to every reply reader: no panic,
// calls with valid names and (but a broken last one) object arguments,
// and a stream fed in arbitrary pieces agrees with ParseReply.
func FuzzReply(f *testing.F) {
	opts := []ReplyOptions{harmonyCalls, harmonyText, {Format: Harmony, KeepReasoning: true}, thinkText, thinkCalls,
		{Format: Hermes, Thinking: Think, ThinkingOpen: true}, {Format: Harmony, Calls: true, Options: Options{MaxCalls: 1}}}
	for _, c := range replyCases {
		for i, o := range opts {
			if reflect.DeepEqual(o, c.o) {
				f.Add(uint8(i), c.out, uint16(len(c.out)/2), uint8(3))
			}
		}
	}
	f.Fuzz(func(t *testing.T, oi uint8, out string, cut uint16, step uint8) {
		if len(out) > 1<<14 {
			return
		}
		o := opts[int(oi)%len(opts)]
		o.Options.NewID = seqIDs()
		whole, err := ParseReply(out, o)
		if err != nil {
			t.Fatal(err)
		}
		for i, c := range whole.Calls {
			if !validName(c.Name) {
				t.Fatalf("call %+v", c)
			}
			var obj map[string]any
			if err := json.Unmarshal([]byte(c.Arguments), &obj); err != nil && (whole.Err == nil || i < len(whole.Calls)-1) {
				t.Fatalf("arguments %q: %v", c.Arguments, err)
			}
		}
		k := int(cut) % (len(out) + 1)
		pieces := []string{out[:k]}
		n := int(step)%7 + 1
		for i := k; i < len(out); i += n {
			pieces = append(pieces, out[i:min(i+n, len(out))])
		}
		o.Options.NewID = seqIDs()
		joined, r := replyAll(t, o, pieces)
		if !reflect.DeepEqual(r, whole) || joined.Content != whole.Content || joined.Reasoning != whole.Reasoning ||
			len(whole.Calls) > 0 && !reflect.DeepEqual(joined.Calls, whole.Calls) {
			t.Fatalf("pieces %q:\nstreamed %+v\njoined %+v\nparse %+v", pieces, r, joined, whole)
		}
	})
}
