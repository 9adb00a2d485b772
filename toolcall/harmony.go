package toolcall

import (
	"fmt"
	"strings"
)

// Harmony's markup (the texts of gpt-oss's special tokens).
const (
	hStart     = "<|start|>assistant"
	hChannel   = "<|channel|>"
	hMessage   = "<|message|>"
	hEnd       = "<|end|>"
	hCall      = "<|call|>"
	hConstrain = "<|constrain|>"
	hTo        = " to="
)

// errHeader is why a reply that breaks the Harmony structure is content
// from there on (one reason whatever the split of the output: a stream
// may see the break before the header ends).
const errHeader = "no Harmony message header where a message must begin"

// maxHeader bounds a Harmony message header, in bytes: a longer one is
// not a header (the recipient is a function name of at most MaxName).
const maxHeader = 256

// The states of a harmony reader.
const (
	hHeader    = iota // at a message's header
	hBody             // in a message's body
	hArgsOpen         // before a call's arguments
	hArgs             // in a call's arguments
	hAfterCall        // after a call's arguments: <|call|> may follow
	hNext             // after <|end|>: the next message or the end
	hRest             // the rest is content
)

// What a message body is.
const (
	bodyReasoning = iota
	bodyContent
	bodyDrop // a message to a recipient that is not an offered function
)

// harmony reads a Harmony reply incrementally: pos only moves past bytes
// that no continuation can change the meaning of, so a reply split
// anywhere reads the same.
type harmony struct {
	o     ReplyOptions
	p     *parser // the calls' checks and ids
	buf   strings.Builder
	pos   int
	state int
	body  int
	raw   bool // the body is an analysis message kept as content
	// the call being read
	scan    jsonScan
	comp    compactor
	args    strings.Builder
	sent    int // bytes of args sent
	calls   []Call
	content strings.Builder
	reason  reasoning
	err     error
}

func newHarmony(o ReplyOptions) *harmony {
	return &harmony{o: o, p: newParser(Harmony, o.Options)}
}

// fail records the first reason the structure broke.
func (h *harmony) fail(at int, format string, args ...any) {
	if h.err == nil {
		h.err = &Error{Offset: at, Reason: fmt.Sprintf(format, args...)}
	}
}

// result is the whole reply read.
func (h *harmony) result() Result {
	return Result{Content: h.content.String(), Calls: h.calls, Reasoning: h.reason.all.String(), Err: h.err}
}

// write reads text (and with final, the end of the reply) and returns
// the deltas it decides.
func (h *harmony) write(text string, final bool) []Delta {
	h.buf.WriteString(text)
	all := h.buf.String()
	var out []Delta
	sendContent := func(s string) {
		if s == "" {
			return
		}
		h.content.WriteString(s)
		if n := len(out); n > 0 && out[n-1].Call == nil && out[n-1].Reasoning == "" {
			out[n-1].Content += s
			return
		}
		out = append(out, Delta{Content: s})
	}
	sendReasoning := func(s string, final bool) {
		if s = h.reason.add(s, final); s == "" {
			return
		}
		if n := len(out); n > 0 && out[n-1].Reasoning != "" {
			out[n-1].Reasoning += s
			return
		}
		out = append(out, Delta{Reasoning: s})
	}
	for {
		rest := all[h.pos:]
		switch h.state {
		case hHeader:
			i := strings.Index(rest, hMessage)
			if i < 0 || i > maxHeader {
				if !final && len(rest) <= maxHeader && headerPrefix(rest) {
					sendReasoning("", final)
					return out
				}
				h.fail(h.pos, errHeader)
				h.state = hRest
				continue
			}
			channel, recipient, ok := parseHeader(rest[:i])
			if !ok {
				h.fail(h.pos, errHeader)
				h.state = hRest
				continue
			}
			head := rest[:i+len(hMessage)]
			h.pos += len(head)
			h.raw = false
			switch {
			case recipient != "":
				name, isFunc := strings.CutPrefix(recipient, "functions.")
				callable := h.o.Calls && isFunc && validName(name) && (channel == "commentary" || channel == "analysis") &&
					(len(h.o.Options.Tools) == 0 || contains(h.o.Options.Tools, name))
				if callable && len(h.calls) < h.p.o.MaxCalls {
					h.calls = append(h.calls, Call{ID: h.p.id(len(h.calls), ""), Name: name})
					h.state = hArgsOpen
					continue
				}
				if callable {
					h.fail(h.pos, "more than %d calls", h.p.o.MaxCalls)
				} else if h.o.Calls {
					h.fail(h.pos, "a message to %q, which is not an offered function", truncate(recipient))
				}
				h.body, h.state = bodyDrop, hBody
			case channel == "analysis" && h.o.KeepReasoning:
				sendContent(head)
				h.body, h.state, h.raw = bodyContent, hBody, true
			case channel == "analysis":
				h.body, h.state = bodyReasoning, hBody
			case channel == "commentary" || channel == "final":
				h.body, h.state = bodyContent, hBody
			default:
				h.pos -= len(head)
				h.fail(h.pos, errHeader)
				h.state = hRest
			}
		case hBody:
			body, end := rest, false
			if i := strings.Index(rest, hEnd); i >= 0 {
				body, end = rest[:i], true
			} else if !final {
				body = rest[:len(rest)-partialSuffix(rest, hEnd)]
			}
			h.pos += len(body)
			switch h.body {
			case bodyReasoning:
				sendReasoning(body, final && !end)
			case bodyContent:
				sendContent(body)
			}
			if !end {
				sendReasoning("", final)
				return out
			}
			h.pos += len(hEnd)
			if h.raw {
				sendContent(hEnd)
			}
			h.state = hNext
		case hArgsOpen:
			t := strings.TrimLeft(rest, spaces)
			h.pos += len(rest) - len(t)
			switch {
			case t == "" && !final:
				sendReasoning("", final)
				return out
			case strings.HasPrefix(t, "{"):
				i := len(h.calls) - 1
				h.scan, h.comp, h.sent = jsonScan{}, compactor{}, 0
				h.args.Reset()
				out = append(out, Delta{Call: &Call{ID: h.calls[i].ID, Name: h.calls[i].Name}, Index: i})
				h.state = hArgs
			default:
				// Not a call after all: its header was certain, so the
				// message is dropped rather than shown.
				h.fail(h.pos, "the arguments of a call to %q are not a JSON object", h.calls[len(h.calls)-1].Name)
				h.calls = h.calls[:len(h.calls)-1]
				h.body, h.state = bodyDrop, hBody
			}
		case hArgs:
			end, st := h.scan.feed(all, h.pos)
			h.comp.add(&h.args, all[h.pos:end])
			h.pos = end
			i := len(h.calls) - 1
			args := h.args.String()
			if st == incomplete && !final {
				args = runeSafe(args)
			}
			if len(args) > h.sent {
				out = append(out, Delta{Call: &Call{Arguments: args[h.sent:]}, Index: i})
				h.sent = len(args)
			}
			h.calls[i].Arguments = args
			switch st {
			case incomplete:
				if !final {
					sendReasoning("", final)
					return out
				}
				h.fail(h.pos, "the reply ends inside the arguments of a call")
				h.state = hRest
			case malformed:
				h.fail(h.pos, "the arguments of a call are not valid JSON")
				h.state = hRest
			default:
				h.state = hAfterCall
			}
		case hAfterCall:
			t := strings.TrimLeft(rest, spaces)
			h.pos += len(rest) - len(t)
			switch {
			case strings.HasPrefix(t, hCall):
				h.pos += len(hCall)
				h.state = hNext
			case strings.HasPrefix(hCall, t) && !final:
				sendReasoning("", final)
				return out
			default:
				h.state = hNext
			}
		case hNext:
			switch {
			case strings.HasPrefix(rest, hStart):
				h.pos += len(hStart)
				h.state = hHeader
			case rest == "" && final:
				sendReasoning("", final)
				return out
			case strings.HasPrefix(hStart, rest) && !final:
				sendReasoning("", final)
				return out
			default:
				h.fail(h.pos, "text after a Harmony message where a message must start")
				h.state = hRest
			}
		default: // hRest
			h.pos = len(all)
			sendContent(rest)
			sendReasoning("", final)
			return out
		}
	}
}

// headerPrefix reports whether s may still grow into a message header.
func headerPrefix(s string) bool {
	for _, m := range []string{hChannel, hTo} {
		if strings.HasPrefix(s, m) || strings.HasPrefix(m, s) {
			return true
		}
	}
	return false
}

// parseHeader reads a message header (the text before <|message|>): its
// channel and recipient ("" when none).
func parseHeader(h string) (channel, recipient string, ok bool) {
	r1 := ""
	if strings.HasPrefix(h, hTo) {
		j := strings.Index(h, hChannel)
		if j < 0 {
			return "", "", false
		}
		r1, h = h[len(hTo):j], h[j:]
	}
	h, ok = strings.CutPrefix(h, hChannel)
	if !ok {
		return "", "", false
	}
	// gpt-oss sometimes writes a stray commentary channel first.
	if t, stray := strings.CutPrefix(h, "commentary"); stray {
		t = strings.TrimPrefix(t, " to=assistant")
		if t, again := strings.CutPrefix(t, hChannel); again {
			h = t
		}
	}
	n := 0
	for n < len(h) && h[n] >= 'a' && h[n] <= 'z' {
		n++
	}
	channel, h = h[:n], h[n:]
	r2 := ""
	if t, to := strings.CutPrefix(h, hTo); to {
		j := strings.IndexAny(t, " <")
		if j < 0 {
			j = len(t)
		}
		r2, h = t[:j], t[j:]
	}
	if channel == "" || r1 != "" && r2 != "" {
		return "", "", false
	}
	recipient = r1 + r2
	if strings.ContainsAny(recipient, " <>|\n") || len(recipient) > maxHeader/2 {
		return "", "", false
	}
	// the content type: " json", " <|constrain|>json", "<|constrain|>json"
	h = strings.TrimPrefix(h, " ")
	h = strings.TrimPrefix(h, hConstrain)
	for i := 0; i < len(h); i++ {
		c := h[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return "", "", false
		}
	}
	return channel, recipient, true
}
