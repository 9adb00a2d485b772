package chat

import (
	"errors"
	"strings"
)

// systemNeedle is the system message content the capability probe
// renders; a template that writes it supports the system role.
const systemNeedle = "<System Needle>"

// supportsSystem reports whether tmpl writes a system message's content,
// probing as llama.cpp's chat template capabilities do: a system message
// and a user message rendered, the system text looked for in the output
// (a template that raises an exception for it, as Gemma 2's does, does
// not support it). A template the interpreter cannot run counts as
// supporting it: Render then falls back to the family's Go renderer,
// which handles system messages its own way.
func supportsSystem(tmpl, fam, bos, eos string) bool {
	probe := []Message{{Role: "system", Content: systemNeedle}, {Role: "user", Content: "Hey"}}
	out, err := probeJinja(tmpl, fam, probe, bos, eos)
	if errors.Is(err, ErrUnsupported) {
		return true
	}
	return err == nil && strings.Contains(out, systemNeedle)
}

// polyfillSystem returns msgs with the system messages merged into the
// next user message when tmpl does not support the system role, as
// llama-server does: consecutive system texts joined by "\n", then "\n"
// and the user's content; before any other role, or at the end, they
// become a user message of their own. msgs is returned as it is when
// there is nothing to merge or the template supports the role.
func polyfillSystem(tmpl, fam string, msgs []Message, bos, eos string) []Message {
	has := false
	for _, m := range msgs {
		has = has || m.Role == "system"
	}
	if !has || supportsSystem(tmpl, fam, bos, eos) {
		return msgs
	}
	out := make([]Message, 0, len(msgs))
	pending := ""
	flush := func() {
		if pending != "" {
			out = append(out, Message{Role: "user", Content: pending})
			pending = ""
		}
	}
	for _, m := range msgs {
		switch {
		case m.Role == "system":
			if pending != "" {
				pending += "\n"
			}
			pending += m.Content
			continue
		case m.Role == "user" && pending != "":
			if m.Content != "" {
				m.Content = pending + "\n" + m.Content
			} else {
				m.Content = pending
			}
			pending = ""
		case m.Role != "user":
			flush()
		}
		out = append(out, m)
	}
	flush()
	return out
}
