package chat

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Options are what a model's chat template sees besides the messages.
type Options struct {
	// AddGenerationPrompt ends the prompt with the opening of an
	// assistant turn.
	AddGenerationPrompt bool
	// BOS and EOS are the texts of the model's BOS and EOS tokens
	// ("<s>" and "</s>" when empty).
	BOS, EOS string
	// Now is the time the template's strftime_now reads (Llama 3.x
	// templates print the day); llama-server passes the current time.
	// The zero time leaves strftime_now undefined, so such templates
	// fall back to the date they carry.
	Now time.Time
	// Tools are the functions the model may call, given to the template
	// as its tools variable, as llama-server gives them: a template that
	// does not show tools renders the plain conversation, as in the
	// current llama.cpp. Only a family rendered in Go gets them in a
	// system message with llama.cpp's generic JSON call format (see
	// polyfill).
	Tools []Tool
	// ReasoningEffort is the template's reasoning_effort (gpt-oss writes
	// "Reasoning: high"; "" leaves it undefined, its default medium), as
	// llama-server gives a request's reasoning_effort.
	ReasoningEffort string
}

// Render renders msgs with a model's chat template as llama-server does
// by default: the template's own Jinja, run by this package's
// interpreter, with strftime_now reading o.Now. A template the
// interpreter does not support (ErrUnsupported: tuple assignments,
// includes, …) is rendered as its family when Detect recognises one,
// as llama.cpp's built-in renderer (Apply) does; a family name or ""
// given as tmpl is rendered by Apply directly.
func Render(tmpl string, msgs []Message, o Options) (string, error) {
	fam := Detect(tmpl)
	if _, ok := renderers[fam]; ok && (tmpl == fam || fam == Plain) {
		return applyFamily(tmpl, msgs, o)
	}
	if err := check(tmpl, msgs); err != nil {
		return "", err
	}
	bos, eos := defaults(o.BOS, o.EOS)
	msgs = polyfillSystem(tmpl, fam, msgs, bos, eos)
	out, err := applyJinjaAt(tmpl, fam, msgs, o.Tools, o.AddGenerationPrompt, bos, eos, o.Now, o.ReasoningEffort)
	if err != nil && errors.Is(err, ErrUnsupported) {
		if _, ok := renderers[fam]; ok {
			return applyFamily(tmpl, msgs, o)
		}
	}
	return out, err
}

// applyFamily renders a family in Go, with tools, tool calls and tool
// responses written as plain messages (a Go renderer shows none of
// them).
func applyFamily(tmpl string, msgs []Message, o Options) (string, error) {
	if err := check(tmpl, msgs); err != nil {
		return "", err
	}
	if needsToolHandling(msgs, o.Tools) {
		var err error
		if msgs, err = polyfill(msgs, o.Tools, toolCaps{}, true); err != nil {
			return "", err
		}
	}
	return Apply(tmpl, msgs, o.AddGenerationPrompt, o.BOS, o.EOS)
}

// strftime formats t as C's strftime does for the conversions chat
// templates use; any other conversion is an error (a template is
// untrusted input, and a silently wrong date would change the prompt).
func strftime(format string, t time.Time) (string, error) {
	if len(format) > 256 {
		return "", fmt.Errorf("%w: strftime format of %d bytes", ErrTooLarge, len(format))
	}
	var b strings.Builder
	for i := 0; i < len(format); i++ {
		c := format[i]
		if c != '%' {
			b.WriteByte(c)
			continue
		}
		i++
		if i == len(format) {
			return "", fmt.Errorf("%w: strftime format %q ends in %%", ErrTemplate, format)
		}
		switch format[i] {
		case 'd':
			fmt.Fprintf(&b, "%02d", t.Day())
		case 'e':
			fmt.Fprintf(&b, "%2d", t.Day())
		case 'm':
			fmt.Fprintf(&b, "%02d", int(t.Month()))
		case 'Y':
			fmt.Fprintf(&b, "%d", t.Year())
		case 'y':
			fmt.Fprintf(&b, "%02d", t.Year()%100)
		case 'b', 'h':
			b.WriteString(t.Month().String()[:3])
		case 'B':
			b.WriteString(t.Month().String())
		case 'a':
			b.WriteString(t.Weekday().String()[:3])
		case 'A':
			b.WriteString(t.Weekday().String())
		case 'H':
			fmt.Fprintf(&b, "%02d", t.Hour())
		case 'I':
			fmt.Fprintf(&b, "%02d", (t.Hour()+11)%12+1)
		case 'p':
			b.WriteString(map[bool]string{true: "PM", false: "AM"}[t.Hour() >= 12])
		case 'M':
			fmt.Fprintf(&b, "%02d", t.Minute())
		case 'S':
			fmt.Fprintf(&b, "%02d", t.Second())
		case 'j':
			fmt.Fprintf(&b, "%03d", t.YearDay())
		case 'F':
			b.WriteString(t.Format("2006-01-02"))
		case 'T':
			b.WriteString(t.Format("15:04:05"))
		case '%':
			b.WriteByte('%')
		default:
			return "", fmt.Errorf("%w: strftime conversion %%%c", ErrUnsupported, format[i])
		}
	}
	return b.String(), nil
}
