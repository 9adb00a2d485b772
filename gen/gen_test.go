package gen

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestCheckJSONObject(t *testing.T) {
	deep := func(n int) string { return strings.Repeat(`{"a":`, n) + "1" + strings.Repeat("}", n) }
	tests := []struct {
		name string
		text string
		ok   bool
	}{
		{"object", `{"type":"object"}`, true},
		{"spaces", " \n{ } \t", true},
		{"brackets in strings", `{"a":"[[[[{{{{\"]]"}`, true},
		{"at depth", deep(4), true},
		{"too deep", deep(5), false},
		{"deep arrays", `{"a":[[[[1]]]]}`, false},
		{"array", `[1]`, false},
		{"string", `"x"`, false},
		{"empty", ``, false},
		{"two objects", `{}{}`, false},
		{"unclosed", `{"a":1`, false},
		{"large", `{"a":"` + strings.Repeat("x", 64) + `"}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckJSONObject(tt.text, 64, 4)
			if (err == nil) != tt.ok {
				t.Fatalf("CheckJSONObject(%.40q) = %v, want ok %v", tt.text, err, tt.ok)
			}
		})
	}
}

// FuzzCheckJSONObject checks that what CheckJSONObject accepts is one JSON
// object within the limits, nested no deeper than it allows.
func FuzzCheckJSONObject(f *testing.F) {
	for _, s := range []string{`{"a":[1,{"b":"]"}]}`, `{"a":"\"{"}`, `[]`, `{`, `{"a":{"b":{"c":{}}}}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		if CheckJSONObject(text, 256, 3) != nil {
			return
		}
		var v map[string]any
		if err := json.Unmarshal([]byte(text), &v); err != nil {
			t.Fatalf("accepted %q, which is not a JSON object: %v", text, err)
		}
		if d := depth(v); d > 3 {
			t.Fatalf("accepted %q, nested %d deep", text, d)
		}
	})
}

func depth(v any) int {
	d := 0
	switch v := v.(type) {
	case map[string]any:
		for _, e := range v {
			d = max(d, depth(e))
		}
	case []any:
		for _, e := range v {
			d = max(d, depth(e))
		}
	default:
		return 0
	}
	return d + 1
}

func TestErrors(t *testing.T) {
	err := fmt.Errorf("engine: %w", Errorf(CodeContextLength, "messages", "the prompt has %d tokens", 9))
	e := AsError(err)
	if e == nil || e.Code != CodeContextLength || e.Param != "messages" || e.Message != "the prompt has 9 tokens" {
		t.Fatalf("AsError = %+v", e)
	}
	if AsError(errors.New("plain")) != nil {
		t.Fatal("a plain error has a code")
	}
	for _, c := range []Code{CodeContextLength, CodeInvalidPrompt, CodeUnsupported, CodeInvalidRequest} {
		if !c.Known() {
			t.Errorf("%s not known", c)
		}
	}
	if Code("internal").Known() || Code("").Known() {
		t.Error("a code off the list is known")
	}
}

func TestFinishReason(t *testing.T) {
	for _, f := range []FinishReason{FinishStop, FinishLength, FinishToolCalls} {
		if !f.Valid() {
			t.Errorf("%s not valid", f)
		}
	}
	if FinishReason("eos").Valid() {
		t.Error("eos valid")
	}
}

func TestConstrained(t *testing.T) {
	tests := []struct {
		r    Request
		want bool
	}{
		{Request{}, false},
		{Request{Format: Format{Type: FormatText}}, false},
		{Request{Format: Format{Type: FormatJSONObject}}, true},
		{Request{Tools: []Tool{{Name: "f"}}}, true},
		{Request{Tools: []Tool{{Name: "f"}}, ToolChoice: ToolChoice{Mode: ChoiceNone}}, false},
	}
	for i, tt := range tests {
		if got := tt.r.Constrained(); got != tt.want {
			t.Errorf("%d: Constrained = %v", i, got)
		}
	}
}

// TestChoices: n of 0 and 1 both mean one choice; choice i's seed is
// seed+i, wrapping; an end names each choice's reason, choice 0's (and
// any choice of an end without a list) being Finish.
func TestChoices(t *testing.T) {
	for _, tt := range []struct{ n, want int }{{0, 1}, {1, 1}, {3, 3}, {MaxChoices, MaxChoices}} {
		r := Request{N: tt.n}
		if got := r.Choices(); got != tt.want {
			t.Errorf("n %d: %d choices, want %d", tt.n, got, tt.want)
		}
	}
	for _, tt := range []struct {
		seed uint64
		i    int
		want uint64
	}{{5, 0, 5}, {5, 2, 7}, {1<<64 - 1, 1, 0}, {1<<64 - 2, 3, 1}} {
		if got := ChoiceSeed(tt.seed, tt.i); got != tt.want {
			t.Errorf("ChoiceSeed(%d, %d) = %d, want %d", tt.seed, tt.i, got, tt.want)
		}
	}
	one := End{Finish: FinishLength}
	many := End{Finish: FinishStop, Choices: []FinishReason{FinishStop, FinishToolCalls, FinishLength}}
	for _, tt := range []struct {
		end  End
		i    int
		want FinishReason
	}{{one, 0, FinishLength}, {many, 0, FinishStop}, {many, 1, FinishToolCalls}, {many, 2, FinishLength}} {
		if got := tt.end.Reason(tt.i); got != tt.want {
			t.Errorf("%+v choice %d: %s, want %s", tt.end, tt.i, got, tt.want)
		}
	}
}
