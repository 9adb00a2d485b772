package broker

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"unicode/utf8"
)

// maxPieces bounds the tokens /tokenize describes one by one (with_pieces).
const maxPieces = 4096

// marshal encodes v as JSON without HTML escaping (model text such as
// "</s>" stays readable); the result has no trailing newline.
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

func writeJSON(w http.ResponseWriter, status int, v any) error {
	b, err := marshal(v)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, err = w.Write(append(b, '\n'))
	return err
}

type modelJSON struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

type modelListJSON struct {
	Object string      `json:"object"`
	Data   []modelJSON `json:"data"`
}

// modelNames are the names the model answers to: its served name, then
// the configured aliases.
func (s *Server) modelNames(r *http.Request) ([]string, error) {
	name := s.cfg.ModelName
	if name == "" {
		info, err := s.modelInfo(r.Context())
		if err != nil {
			return nil, err
		}
		name = info.Name
	}
	return append([]string{name}, s.cfg.ModelAliases...), nil
}

func (s *Server) listModels(w http.ResponseWriter, r *http.Request, _ *reqInfo) error {
	if s.models != nil {
		return s.listMultiModels(w)
	}
	names, err := s.modelNames(r)
	if err != nil {
		return err
	}
	list := modelListJSON{Object: "list"}
	for _, n := range names {
		list.Data = append(list.Data, modelJSON{ID: n, Object: "model", Created: s.started.Unix(), OwnedBy: "lisa"})
	}
	return writeJSON(w, http.StatusOK, list)
}

// getModel answers GET /v1/models/{id} for the served name or an alias.
func (s *Server) getModel(w http.ResponseWriter, r *http.Request, ri *reqInfo) error {
	id := ri.params.ByName("id")
	if s.models != nil {
		return s.getMultiModel(w, id)
	}
	names, err := s.modelNames(r)
	if err != nil {
		return err
	}
	if !slices.Contains(names, id) {
		return &APIError{Status: http.StatusNotFound, Type: "invalid_request_error", Param: "model", Code: "model_not_found",
			Message: fmt.Sprintf("the model %q does not exist; this server serves %q", abbreviate(id), names[0])}
	}
	return writeJSON(w, http.StatusOK, modelJSON{ID: id, Object: "model", Created: s.started.Unix(), OwnedBy: "lisa"})
}

func (s *Server) health(w http.ResponseWriter, r *http.Request, _ *reqInfo) error {
	if s.models != nil {
		return s.multiHealth(w)
	}
	_, err := s.modelInfo(r.Context())
	switch {
	case err == nil:
		return writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	case errors.Is(err, ErrFailed):
		reason := "the model worker keeps failing"
		var r interface{ Reason() string }
		if errors.As(err, &r) {
			reason = r.Reason()
		}
		w.Header().Set("Retry-After", "30")
		return writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "failed", "reason": reason})
	case errors.Is(err, ErrNotReady):
		w.Header().Set("Retry-After", "5")
		return writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "loading"})
	}
	s.log.Warn("health check failed", "err", err)
	return writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "error", "error": "the model worker is not available"})
}

func (s *Server) writeMetrics(w http.ResponseWriter, r *http.Request, _ *reqInfo) error {
	queued, running := s.adm.depth()
	g := gauges{queued: queued, running: running, conns: int(s.conns.Load()), handshakes: int(s.handshakes.Load()),
		evicted: s.tracker.evicted.Load(), refused: s.tracker.refused.Load()}
	if s.stats != nil {
		g.worker = s.stats.WorkerStats()
	}
	var statuses []ModelStatus
	if s.models != nil {
		statuses = s.models.Statuses()
		for _, st := range statuses {
			g.ready = g.ready || st.State == ModelLoaded
		}
	} else {
		_, err := s.modelInfo(r.Context())
		g.ready = err == nil
	}
	var buf bytes.Buffer
	s.metrics.write(&buf, g)
	if s.models != nil {
		writeModelMetrics(&buf, statuses, s.cfg.ModelsMemoryBytes)
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	_, err := w.Write(buf.Bytes())
	return err
}

// tokenizeRequest is the body of POST /tokenize (llama.cpp's shape).
// parse_special defaults to false: text stays text unless asked.
// add_special (adding BOS) is refused when true: the backend tokenizes
// text only.
type tokenizeRequest struct {
	model        string // with several models, routes the request (pinModel); else checked
	content      string
	parseSpecial bool
	withPieces   bool
}

func decodeTokenizeRequest(body []byte) (*tokenizeRequest, error) {
	fields, err := objectFields(body, "")
	if err != nil {
		return nil, err
	}
	req := &tokenizeRequest{}
	var haveContent bool
	for _, f := range fields {
		if isNull(f.raw) {
			continue
		}
		switch f.name {
		case "content":
			req.content, err = decString(f.raw, f.name)
			haveContent = true
		case "add_special":
			var add bool
			if add, err = decBool(f.raw, f.name); err == nil && add {
				err = invalidCode(f.name, "unsupported_value", "add_special: true is not supported; the tokens of the text alone are returned")
			}
		case "model":
			req.model, err = decString(f.raw, f.name)
		case "parse_special":
			req.parseSpecial, err = decBool(f.raw, f.name)
		case "with_pieces":
			req.withPieces, err = decBool(f.raw, f.name)
		default:
			err = invalidCode(f.name, "unknown_parameter", "unknown field %q", f.name)
		}
		if err != nil {
			return nil, err
		}
	}
	if !haveContent {
		return nil, invalid("content", "content is required")
	}
	return req, nil
}

// checkModelName checks the optional model field of /tokenize and
// /detokenize: with one model it must be a name of the model; with
// several, pinModel has routed the request by it already.
func (s *Server) checkModelName(r *http.Request, name string) error {
	if name == "" || s.models != nil {
		return nil
	}
	names, err := s.modelNames(r)
	if err != nil {
		return err
	}
	if !slices.Contains(names, name) {
		return &APIError{Status: http.StatusNotFound, Type: "invalid_request_error", Param: "model", Code: "model_not_found",
			Message: fmt.Sprintf("the model %q does not exist; this server serves %q", abbreviate(name), names[0])}
	}
	return nil
}

type pieceJSON struct {
	ID    int32 `json:"id"`
	Piece any   `json:"piece"` // a string, or the bytes when not valid UTF-8
}

// workerCall runs a tokenizer call in a queue slot, like a generation.
func (s *Server) workerCall(w http.ResponseWriter, r *http.Request, f func() error) error {
	s.extendDeadlines(w)
	release, err := s.admit(r.Context())
	if err != nil {
		return err
	}
	defer release()
	return f()
}

func (s *Server) tokenize(w http.ResponseWriter, r *http.Request, _ *reqInfo) error {
	body, err := readBody(w, r)
	if err != nil {
		return err
	}
	req, err := decodeTokenizeRequest(body)
	if err != nil {
		return err
	}
	if err := s.checkModelName(r, req.model); err != nil {
		return err
	}
	var ids []int32
	var pieces []pieceJSON
	err = s.workerCall(w, r, func() error {
		ctx, cancel := contextFor(r, s.cfg.RequestTimeout.D())
		defer cancel()
		if ids, err = s.backend.Tokenize(ctx, req.content, req.parseSpecial); err != nil || !req.withPieces {
			return err
		}
		if len(ids) > maxPieces {
			return invalid("with_pieces", "with_pieces is limited to %d tokens, the content has %d", maxPieces, len(ids))
		}
		for _, id := range ids {
			text, err := s.backend.Detokenize(ctx, []int32{id})
			if err != nil {
				return err
			}
			var piece any = text
			if !utf8.ValidString(text) {
				piece = bytesOf(text)
			}
			pieces = append(pieces, pieceJSON{ID: id, Piece: piece})
		}
		return nil
	})
	if err != nil {
		return err
	}
	if req.withPieces {
		return writeJSON(w, http.StatusOK, map[string]any{"tokens": pieces})
	}
	if ids == nil {
		ids = []int32{}
	}
	return writeJSON(w, http.StatusOK, map[string]any{"tokens": ids})
}

func (s *Server) detokenize(w http.ResponseWriter, r *http.Request, _ *reqInfo) error {
	body, err := readBody(w, r)
	if err != nil {
		return err
	}
	fields, err := objectFields(body, "")
	if err != nil {
		return err
	}
	var ids []int32
	for _, f := range fields {
		if f.name == "model" && !isNull(f.raw) {
			name, err := decString(f.raw, f.name)
			if err == nil {
				err = s.checkModelName(r, name)
			}
			if err != nil {
				return err
			}
			continue
		}
		if f.name != "tokens" {
			return invalidCode(f.name, "unknown_parameter", "unknown field %q", f.name)
		}
		items, err := arrayItems(f.raw, "tokens")
		if err != nil {
			return err
		}
		if ids, err = decodeIDs(items, "tokens"); err != nil {
			return err
		}
	}
	if ids == nil {
		return invalid("tokens", "tokens is required")
	}
	info, err := s.modelInfo(r.Context())
	if err != nil {
		return err
	}
	for i, id := range ids {
		if int(id) >= info.VocabSize {
			return invalid(fmt.Sprintf("tokens[%d]", i), "token id %d is not below the vocabulary size %d", id, info.VocabSize)
		}
	}
	var text string
	err = s.workerCall(w, r, func() error {
		ctx, cancel := contextFor(r, s.cfg.RequestTimeout.D())
		defer cancel()
		text, err = s.backend.Detokenize(ctx, ids)
		return err
	})
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, map[string]string{"content": text})
}
