package broker

import (
	"fmt"
	"net/http"
	"time"

	"github.com/lisa-llm/lisa/gen"
)

// sse writes server-sent events, giving each write its own deadline so a
// client that stops reading fails the write (and cancels the generation)
// instead of holding the broker.
type sse struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
}

// send writes one unnamed event, as the chat and completion streams do.
func (e *sse) send(data []byte) error { return e.sendNamed("", data) }

// sendNamed writes one event, with an event: line when name is not
// empty (the Responses API names its events).
func (e *sse) sendNamed(name string, data []byte) error {
	if err := e.rc.SetWriteDeadline(time.Now().Add(e.timeout)); err != nil {
		return fmt.Errorf("set write deadline: %w", err)
	}
	buf := make([]byte, 0, len(data)+len(name)+16)
	if name != "" {
		buf = append(append(append(buf, "event: "...), name...), '\n')
	}
	buf = append(append(append(buf, "data: "...), data...), "\n\n"...)
	if _, err := e.w.Write(buf); err != nil {
		return err
	}
	return e.rc.Flush()
}

func (e *sse) sendJSON(v any) error {
	b, err := marshal(v)
	if err != nil {
		return err
	}
	return e.send(b)
}

// startStream begins an event stream: it waits for the generation's
// first event, then sends the headers, and returns that event and the
// stream's writer. The headers wait because the worker refuses a request
// it cannot serve (a prompt too long for the context, say) before it
// generates anything, and that refusal is a whole error response with
// its 4xx status, not an event in a stream that began with 200.
func (g *generation) startStream(w http.ResponseWriter, rc *http.ResponseController) (Event, *sse, error) {
	first, err := g.next()
	if err != nil {
		return Event{}, nil, err
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	return first, &sse{w: w, rc: rc, timeout: g.s.cfg.WriteTimeout.D()}, nil
}

// clientGone stops the generation of a client that stopped reading (a
// write to it failed with err) and returns the error that ends the
// request: 499, which the log and metrics record and nobody is sent.
func (g *generation) clientGone(err error) error {
	g.s.metrics.cancelled.Add(1)
	g.cancel()
	return &APIError{Status: 499, Type: "server_error", Code: "client_closed", Message: "client stopped reading", Err: err}
}

// stream sends the generation as server-sent events ending in [DONE]
// (its headers as startStream says).
func (g *generation) stream(w http.ResponseWriter, rc *http.ResponseController) error {
	first, out, err := g.startStream(w, rc)
	if err != nil {
		return err
	}
	n := g.req.Choices()
	for i := range n {
		var head any // a chat choice's role, a completion choice's echo
		switch {
		case g.req.chat:
			head = g.shape.roleChunk(i)
		case g.echo != "":
			head = g.shape.textChunk(i, g.echo, nil)
		}
		if head != nil {
			if err := out.sendJSON(head); err != nil {
				return g.clientGone(err)
			}
		}
	}
	if !g.req.chat && g.echo == "" {
		if err := rc.Flush(); err != nil {
			return g.clientGone(err)
		}
	}
	for ev := first; ; {
		if ev.Kind == EventText {
			chunk := g.shape.textChunk(ev.Index, ev.Text, ev.Logprobs)
			if (len(ev.ToolCalls) > 0 || ev.Reasoning != "") && g.req.chat {
				chunk = g.shape.callChunk(ev.Index, ev.Text, ev.Reasoning, ev.Logprobs, ev.ToolCalls)
			}
			if err := out.sendJSON(chunk); err != nil {
				return g.clientGone(err)
			}
			if ev, err = g.next(); err != nil {
				return err
			}
			continue
		}
		end := gen.End{Finish: ev.Finish, Choices: ev.Choices}
		for i := range n {
			if err := out.sendJSON(g.shape.finishChunk(i, end.Reason(i))); err != nil {
				return g.clientGone(err)
			}
		}
		if g.req.IncludeUsage {
			u := ev.Usage
			if u.PromptTokens == 0 {
				u.PromptTokens = g.ri.promptTokens
			}
			if err := out.sendJSON(g.shape.usageChunk(u)); err != nil {
				return g.clientGone(err)
			}
		}
		if err := out.send([]byte("[DONE]")); err != nil {
			return g.clientGone(err)
		}
		return nil
	}
}

// writeStreamError ends a stream whose headers are sent with one event in
// the OpenAI error shape (the SDKs raise it as an API error).
func writeStreamError(w http.ResponseWriter, e *APIError, timeout time.Duration) {
	if e.Status == 499 {
		return // nobody is reading
	}
	out := &sse{w: w, rc: http.NewResponseController(w), timeout: timeout}
	_ = out.sendJSON(e.body())
}
