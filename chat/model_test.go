package chat

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestStrftime(t *testing.T) {
	at := time.Date(2025, time.January, 5, 14, 7, 9, 0, time.UTC)
	tests := []struct {
		format, want string
		err          error
	}{
		{"%d %b %Y", "05 Jan 2025", nil},
		{"%e %B %y", " 5 January 25", nil},
		{"%A %a %j", "Sunday Sun 005", nil},
		{"%H:%M:%S %I %p", "14:07:09 02 PM", nil},
		{"%F %T %%", "2025-01-05 14:07:09 %", nil},
		{"%Q", "", ErrUnsupported},
		{"50%", "", ErrTemplate},
		{strings.Repeat("%d", 200), "", ErrTooLarge},
	}
	for _, tc := range tests {
		got, err := strftime(tc.format, at)
		if tc.err != nil {
			if !errors.Is(err, tc.err) {
				t.Errorf("%q: error %v, want %v", tc.format, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%q: %q, %v; want %q", tc.format, got, err, tc.want)
		}
	}
}

// TestRender checks Render's choice of renderer: the template's Jinja
// with the clock, the family's Go renderer when the interpreter refuses
// the template, Apply for a family name.
func TestRender(t *testing.T) {
	msgs := []Message{{Role: "user", Content: "Hi"}}
	at := time.Date(2025, time.March, 2, 0, 0, 0, 0, time.UTC)
	dated := `{% if strftime_now is defined %}{{ strftime_now("%d %b %Y") }}{% else %}no clock{% endif %}|{{ messages[0].content }}`
	// A ChatML template the interpreter refuses (an include) still renders,
	// as its family.
	refused := `{% include 'x' %}<|im_start|>{{ messages[0].content }}`
	tests := []struct {
		name, tmpl string
		now        time.Time
		want       string
	}{
		{"jinja with a clock", dated, at, "02 Mar 2025|Hi"},
		{"jinja without a clock", dated, time.Time{}, "no clock|Hi"},
		{"family name", "chatml", at, "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"},
		{"refused template of a known family", refused, at, "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"},
	}
	for _, tc := range tests {
		got, err := Render(tc.tmpl, msgs, Options{AddGenerationPrompt: true, Now: tc.now})
		if err != nil || got != tc.want {
			t.Errorf("%s: %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
	if _, err := Render(`{% include 'x' %}unknown family`, msgs, Options{}); !errors.Is(err, ErrUnsupported) {
		t.Errorf("a refused template of no family: %v, want ErrUnsupported", err)
	}
}
