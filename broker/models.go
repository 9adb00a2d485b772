package broker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/lisa-llm/lisa/config"
	"github.com/lisa-llm/lisa/gen"
)

// NewMultiServer returns a server for the resolved configuration cfg in
// front of several models: each request goes to the model its "model"
// field names (an id or an alias), which models loads when needed. Only
// the model that request pinned serves it, and it is not evicted until
// the request ends.
func NewMultiServer(cfg *config.Config, models Models, logger *slog.Logger) (*Server, error) {
	if models == nil {
		return nil, errors.New("broker: NewMultiServer needs a model set")
	}
	s, err := NewServer(cfg, routedBackend{}, logger)
	if err != nil {
		return nil, err
	}
	s.models = models
	s.stats = modelsStats{models}
	return s, nil
}

// modelRoutes are the routes whose body names a model.
var modelRoutes = []string{"/v1/completions", "/v1/chat/completions", "/v1/embeddings", "/v1/responses", "/tokenize", "/detokenize"}

// pinKey is the context key of the model a request was routed to.
type pinKey struct{}

// pin is the model a request was routed to: its backend and the name the
// request asked for.
type pin struct {
	b    Backend
	name string
}

// pinModel routes a request of a server with several models: it reads
// the body (given back to the handler unchanged), takes its "model" and
// acquires that model, waiting for its load within model_load_timeout.
// A body that is no JSON object, or has no string "model", pins nothing:
// the route's own decoder then reports the body, or the backend that the
// model is required. The returned release, when not nil, must be called
// once the request is done.
func (s *Server) pinModel(w http.ResponseWriter, r *http.Request) (*http.Request, func(), error) {
	body, err := readBody(w, r)
	if err != nil {
		return r, nil, err
	}
	r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	name, ok := peekModel(body)
	if !ok {
		return r, nil, nil
	}
	// A load may take longer than write_timeout: the answer must still
	// be writable after the wait (generations extend the deadline again).
	load := s.cfg.ModelLoadTimeout.D()
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(load + s.cfg.WriteTimeout.D()))
	ctx, cancel := context.WithTimeout(r.Context(), load)
	defer cancel()
	b, release, err := s.models.Acquire(ctx, name)
	if err != nil {
		return r, nil, modelAPIError(name, err)
	}
	return r.WithContext(context.WithValue(r.Context(), pinKey{}, pin{b: b, name: name})), release, nil
}

// peekModel returns the body's top-level "model" string, if it has one.
func peekModel(body []byte) (string, bool) {
	fields, err := objectFields(body, "")
	if err != nil {
		return "", false
	}
	for _, f := range fields {
		if f.name == "model" {
			name, err := decString(f.raw, "model")
			return name, err == nil && name != ""
		}
	}
	return "", false
}

// modelAPIError renders a Models set's error for the client: it always
// names the model asked for.
func modelAPIError(name string, err error) error {
	var me *ModelError
	if !errors.As(err, &me) {
		return err
	}
	retry := int((me.RetryAfter + time.Second - 1) / time.Second)
	ae := &APIError{Status: http.StatusServiceUnavailable, Type: "server_error", Param: "model", RetryAfter: retry, Err: err}
	n := abbreviate(name)
	switch {
	case errors.Is(me.Kind, ErrModelNotFound):
		ae.Status, ae.Type, ae.Code, ae.RetryAfter = http.StatusNotFound, "invalid_request_error", "model_not_found", 0
		ae.Message = fmt.Sprintf("the model %q does not exist; GET /v1/models lists the models this server serves", n)
	case errors.Is(me.Kind, ErrModelLoadFailed):
		ae.Code = "model_load_failed"
		ae.Message = fmt.Sprintf("the model %q failed to load: %s", n, me.Reason)
	case errors.Is(me.Kind, ErrModelNoRoom):
		ae.Code = "model_memory_full"
		ae.Message = fmt.Sprintf("the model %q cannot be loaded now: %s; retry later", n, me.Reason)
	default:
		ae.Code = "model_loading"
		ae.Message = fmt.Sprintf("the model %q is still loading; retry later", n)
	}
	ae.RetryAfter = max(ae.RetryAfter, 0)
	return ae
}

// errModelRequired is the answer to a request that names no model on a
// server with several.
var errModelRequired = &APIError{Status: http.StatusBadRequest, Type: "invalid_request_error", Param: "model", Code: "model_required",
	Message: "model is required: this server serves several models (GET /v1/models lists them)"}

// routedBackend is the Backend of a server with several models: every
// call goes to the model pinModel pinned in the call's context. Info
// names the model as the request did (its id or the alias used), so the
// request's model check and the response's model field agree with it.
type routedBackend struct{}

func pinned(ctx context.Context) (pin, error) {
	p, ok := ctx.Value(pinKey{}).(pin)
	if !ok {
		return pin{}, errModelRequired
	}
	return p, nil
}

func (routedBackend) Info(ctx context.Context) (ModelInfo, error) {
	p, err := pinned(ctx)
	if err != nil {
		return ModelInfo{}, err
	}
	info, err := p.b.Info(ctx)
	info.Name = p.name
	return info, err
}

func (routedBackend) Generate(ctx context.Context, req gen.Request) (<-chan Event, error) {
	p, err := pinned(ctx)
	if err != nil {
		return nil, err
	}
	return p.b.Generate(ctx, req)
}

func (routedBackend) Tokenize(ctx context.Context, text string, special bool) ([]int32, error) {
	p, err := pinned(ctx)
	if err != nil {
		return nil, err
	}
	return p.b.Tokenize(ctx, text, special)
}

func (routedBackend) Detokenize(ctx context.Context, ids []int32) (string, error) {
	p, err := pinned(ctx)
	if err != nil {
		return "", err
	}
	return p.b.Detokenize(ctx, ids)
}

func (routedBackend) Embed(ctx context.Context, text string, ids []int32) (Embedding, error) {
	p, err := pinned(ctx)
	if err != nil {
		return Embedding{}, err
	}
	em, ok := p.b.(Embedder)
	if !ok {
		return Embedding{}, &APIError{Status: http.StatusBadRequest, Type: "invalid_request_error", Param: "model", Code: "unsupported_model",
			Message: fmt.Sprintf("the model %q makes no embeddings", abbreviate(p.name))}
	}
	return em.Embed(ctx, text, ids)
}

// modelsStats sums the worker figures of every model for the unlabelled
// worker metrics.
type modelsStats struct{ m Models }

func (ms modelsStats) WorkerStats() WorkerStats {
	sum := WorkerStats{Deaths: map[string]uint64{}}
	for _, st := range ms.m.Statuses() {
		w := st.Worker
		sum.Restarts += w.Restarts
		sum.BudgetSpent += w.BudgetSpent
		sum.StderrDroppedLines += w.StderrDroppedLines
		sum.StderrDroppedBytes += w.StderrDroppedBytes
		for c, n := range w.Deaths {
			sum.Deaths[c] += n
		}
	}
	return sum
}

// multiModelJSON is a /v1/models entry of a server with several models:
// OpenAI's fields, and the model's state (and why it failed to load).
type multiModelJSON struct {
	modelJSON
	Status string `json:"status"`
	Error  string `json:"error,omitempty"`
	Alias  string `json:"alias_of,omitempty"` // for an alias: the id it names
	// CtxSize and Parallel are the model's tokens per slot (absent: the
	// model's own) and generation slots, as configured for it.
	CtxSize  int `json:"ctx_size,omitempty"`
	Parallel int `json:"parallel,omitempty"`
}

// multiModels lists every model and, after each, its aliases.
func (s *Server) multiModels() []multiModelJSON {
	var out []multiModelJSON
	for _, st := range s.models.Statuses() {
		e := multiModelJSON{modelJSON: modelJSON{ID: st.ID, Object: "model", Created: s.started.Unix(), OwnedBy: "lisa"},
			Status: string(st.State), Error: st.Error, CtxSize: st.CtxSize, Parallel: st.Parallel}
		out = append(out, e)
		for _, a := range st.Aliases {
			e.ID, e.Alias = a, st.ID
			out = append(out, e)
		}
	}
	return out
}

func (s *Server) listMultiModels(w http.ResponseWriter) error {
	return writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": s.multiModels()})
}

func (s *Server) getMultiModel(w http.ResponseWriter, id string) error {
	for _, m := range s.multiModels() {
		if m.ID == id {
			return writeJSON(w, http.StatusOK, m)
		}
	}
	return modelAPIError(id, &ModelError{Model: id, Kind: ErrModelNotFound})
}

// multiHealth is /health of a server with several models: 200 while
// some model can serve (a model not loaded yet can: it loads on first
// use), 503 "loading" while none is loaded and some is loading (the
// preloads of a start), 503 "failed" when every model failed to load;
// the state of each model is listed.
func (s *Server) multiHealth(w http.ResponseWriter) error {
	type modelHealth struct {
		State    ModelState `json:"state"`
		Error    string     `json:"error,omitempty"`
		InFlight int        `json:"in_flight"`
	}
	sts := s.models.Statuses()
	models := make(map[string]modelHealth, len(sts))
	var loaded, loading, failed int
	for _, st := range sts {
		models[st.ID] = modelHealth{State: st.State, Error: st.Error, InFlight: st.InFlight}
		switch st.State {
		case ModelLoaded:
			loaded++
		case ModelLoading:
			loading++
		case ModelFailed:
			failed++
		}
	}
	status, code := "ok", http.StatusOK
	switch {
	case len(sts) > 0 && failed == len(sts):
		status, code = "failed", http.StatusServiceUnavailable
		w.Header().Set("Retry-After", "30")
	case loaded == 0 && loading > 0:
		status, code = "loading", http.StatusServiceUnavailable
		w.Header().Set("Retry-After", "5")
	}
	return writeJSON(w, code, map[string]any{"status": status, "models": models})
}
