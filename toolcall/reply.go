package toolcall

import (
	"fmt"
	"strings"
)

// A reply is a model's whole answer: reasoning, content and calls. The
// reasoning formats follow llama-server's default (--reasoning-format
// auto/deepseek), checked against its parser (testdata/regen.sh):
//
//   - Think: Qwen3, QwQ and DeepSeek-R1 templates. White space opening
//     the reply is dropped; a reply that then opens with <think> has the
//     text up to </think> as its reasoning (one "\n" after <think> and up
//     to two after </think> are part of the tags, as Qwen3's template
//     writes them), the rest is content, in which a later <think> is
//     plain text. When the prompt already opened the block (the template
//     ends its generation prompt with <think>), the reply starts inside
//     it. Calls are read from the content in the template's call format.
//   - Harmony: gpt-oss. The reply is a sequence of messages, the first
//     after the generation prompt's "<|start|>assistant", each later one
//     after "<|end|><|start|>assistant": a header (an optional recipient
//     " to=functions.NAME" before or after "<|channel|>CHANNEL", an
//     optional content type, "<|message|>") and a body up to <|end|>.
//     The analysis channel is reasoning (several blocks are joined as
//     they come), commentary without recipient (a preamble) and final
//     are content; a message to an offered function is a call, its body
//     the JSON arguments (streamed as the other formats' are). A message
//     to any other recipient (a built-in tool, a function not offered,
//     any call while tools are off) is dropped, as llama.cpp drops it.
//     A stray "<|channel|>commentary" (with " to=assistant") before the
//     real channel, which gpt-oss sometimes writes, is skipped.
//
// Reasoning that is only white space is no reasoning. With KeepReasoning
// (--reasoning-format none) Think replies are not split, and Harmony's
// analysis messages stay in the content as written (header, body and
// <|end|>). Output that breaks the Harmony structure (text where a header
// must be, a header that does not parse) is content from there on, and
// Result.Err says where, as for malformed calls: llama.cpp fails such a
// request, a fallback keeps the reply readable.

// Harmony is OpenAI's Harmony format of gpt-oss: channels, and calls
// addressed to functions.NAME (see ReplyStream). Parse and Stream do not
// take it: a Harmony reply is read by a ReplyStream.
const Harmony Format = "harmony"

// Thinking is how a template's model marks its reasoning, for the formats
// other than Harmony.
type Thinking int

// The reasoning markups.
const (
	NoThinking Thinking = iota // no reasoning markup: everything is content
	Think                      // <think>…</think> opening the reply
)

// DetectThinking reports the reasoning markup of a chat template: Think
// when its text writes both <think> and </think> (and it is not a Harmony
// template, whose channels carry the reasoning).
func DetectThinking(tmpl string) Thinking {
	if !strings.Contains(tmpl, "<|channel|>") && strings.Contains(tmpl, "<think>") && strings.Contains(tmpl, "</think>") {
		return Think
	}
	return NoThinking
}

// ThinkingOpen reports whether a rendered prompt ends inside a <think>
// block (a template whose generation prompt opens it): the reply then
// starts with reasoning.
func ThinkingOpen(prompt string) bool {
	p := strings.TrimRight(prompt, spaces)
	return strings.HasSuffix(p, "<think>")
}

// ReplyOptions say how to read a reply.
type ReplyOptions struct {
	// Format is the call syntax; Harmony reads the whole reply's
	// channels (calls, reasoning and content).
	Format Format
	// Calls says whether calls are read (the request offers tools and
	// tool_choice is not none); without, a reply is content and
	// reasoning only.
	Calls bool
	// Thinking is the reasoning markup of formats other than Harmony.
	Thinking Thinking
	// ThinkingOpen says the prompt ended inside a <think> block.
	ThinkingOpen bool
	// KeepReasoning leaves the reasoning in the content as the model
	// wrote it (reasoning_format none).
	KeepReasoning bool
	// Options check the calls.
	Options Options
}

// ReplyStream reads a reply as it is generated, as Stream does, adding
// its reasoning: a Delta with Reasoning text. Its deltas and result
// do not depend on how the output is split into writes.
type ReplyStream struct {
	o      ReplyOptions
	n      int // bytes written
	closed bool
	think  *thinkSplit // Think: the reasoning splitter, or nil
	calls  *Stream     // the call parser of the content, or nil
	h      *harmony    // Harmony, or nil
	// content and reasoning sent, without a call parser or Harmony
	content strings.Builder
	reason  reasoning
}

// NewReplyStream starts reading a reply.
func NewReplyStream(o ReplyOptions) (*ReplyStream, error) {
	s := &ReplyStream{o: o}
	if o.Format == Harmony {
		s.h = newHarmony(o)
		return s, nil
	}
	if o.Calls {
		var err error
		if s.calls, err = NewStream(o.Format, o.Options); err != nil {
			return nil, err
		}
	}
	if o.Thinking == Think {
		s.think = &thinkSplit{keep: o.KeepReasoning}
		if o.ThinkingOpen && !o.KeepReasoning {
			s.think.state = thinkReason
		}
	}
	return s, nil
}

// ParseReply reads a whole reply: the same result as a ReplyStream given
// output in any pieces.
func ParseReply(output string, o ReplyOptions) (Result, error) {
	s, err := NewReplyStream(o)
	if err != nil {
		return Result{}, err
	}
	if _, err := s.Write(output); err != nil {
		return Result{}, err
	}
	_, r, err := s.Close()
	return r, err
}

// Write adds generated text and returns what is now certain.
func (s *ReplyStream) Write(text string) ([]Delta, error) {
	if s.closed {
		return nil, fmt.Errorf("toolcall: write after close")
	}
	if s.n+len(text) > MaxOutput {
		return nil, fmt.Errorf("%w: more than %d bytes", ErrTooLarge, MaxOutput)
	}
	s.n += len(text)
	if s.h != nil {
		return s.h.write(text, false), nil
	}
	return s.split(text, false)
}

// Close ends the reply and returns the last deltas and the whole result.
func (s *ReplyStream) Close() ([]Delta, Result, error) {
	if s.closed {
		return nil, Result{}, fmt.Errorf("toolcall: closed twice")
	}
	s.closed = true
	if s.h != nil {
		out := s.h.write("", true)
		return out, s.h.result(), nil
	}
	out, err := s.split("", true)
	if err != nil {
		return nil, Result{}, err
	}
	var r Result
	if s.calls != nil {
		var more []Delta
		more, r, err = s.calls.Close()
		if err != nil {
			return nil, Result{}, err
		}
		out = append(out, more...)
	} else {
		r.Content = s.content.String()
	}
	r.Reasoning = s.reason.all.String()
	return out, r, nil
}

// split runs text through the reasoning splitter and its content through
// the call parser.
func (s *ReplyStream) split(text string, final bool) ([]Delta, error) {
	reason, content := "", text
	if s.think != nil {
		reason, content = s.think.write(text, final)
	}
	var out []Delta
	if r := s.reason.add(reason, final); r != "" {
		out = append(out, Delta{Reasoning: r})
	}
	if s.calls != nil {
		if content == "" {
			return out, nil
		}
		more, err := s.calls.Write(content)
		if err != nil {
			return nil, err
		}
		return append(out, more...), nil
	}
	if content != "" {
		s.content.WriteString(content)
		out = append(out, Delta{Content: content})
	}
	return out, nil
}

// reasoning holds reasoning back while it is only white space (llama.cpp
// drops reasoning that is), and keeps all it sent.
type reasoning struct {
	held string
	seen bool // non-white-space reasoning was sent
	all  strings.Builder
}

// add takes more reasoning and returns what to send.
func (r *reasoning) add(s string, final bool) string {
	if !r.seen {
		r.held += s
		if strings.Trim(r.held, spaces) == "" {
			if final {
				r.held = ""
			}
			return ""
		}
		s, r.held, r.seen = r.held, "", true
	}
	r.all.WriteString(s)
	return s
}

// The states of a thinkSplit.
const (
	thinkStart  = iota // before the reply's first non-space byte
	thinkOpened        // after <think>: one "\n" may follow
	thinkReason        // in the reasoning
	thinkClosed        // after </think>: up to two "\n" may follow
	thinkContent
)

// thinkSplit splits a Think reply into reasoning and content. With keep
// (reasoning_format none) it only drops the white space opening the
// reply, as llama.cpp's parser of such templates does with none.
type thinkSplit struct {
	keep  bool
	state int
	pend  string // undecided bytes
	nl    int    // "\n" dropped after </think>
}

// write takes more of the reply and returns the reasoning and content
// now certain.
func (t *thinkSplit) write(text string, final bool) (string, string) {
	t.pend += text
	var reason strings.Builder
	for {
		switch t.state {
		case thinkStart:
			s := strings.TrimLeft(t.pend, spaces)
			switch {
			case t.keep && s != "":
			case strings.HasPrefix(s, "<think>"):
				t.pend, t.state = s[len("<think>"):], thinkOpened
				continue
			case s == "" || strings.HasPrefix("<think>", s) && !final:
				if final {
					t.pend = ""
				} else {
					t.pend = s // the dropped white space stays dropped
				}
				return reason.String(), ""
			}
			t.pend, t.state = s, thinkContent
		case thinkOpened:
			if t.pend == "" && !final {
				return reason.String(), ""
			}
			t.pend = strings.TrimPrefix(t.pend, "\n")
			t.state = thinkReason
		case thinkReason:
			if i := strings.Index(t.pend, "</think>"); i >= 0 {
				reason.WriteString(t.pend[:i])
				t.pend, t.state = t.pend[i+len("</think>"):], thinkClosed
				continue
			}
			keep := 0
			if !final {
				keep = partialSuffix(t.pend, "</think>")
			}
			reason.WriteString(t.pend[:len(t.pend)-keep])
			t.pend = t.pend[len(t.pend)-keep:]
			return reason.String(), ""
		case thinkClosed:
			for t.nl < 2 && strings.HasPrefix(t.pend, "\n") {
				t.pend, t.nl = t.pend[1:], t.nl+1
			}
			if t.nl < 2 && t.pend == "" && !final {
				return reason.String(), ""
			}
			t.state = thinkContent
		default:
			c := t.pend
			t.pend = ""
			return reason.String(), c
		}
	}
}

// partialSuffix is the length of the longest end of s that begins marker
// (shorter than it): bytes that may still become marker.
func partialSuffix(s, marker string) int {
	for k := min(len(marker)-1, len(s)); k > 0; k-- {
		if strings.HasPrefix(marker, s[len(s)-k:]) {
			return k
		}
	}
	return 0
}
