package broker

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/julienschmidt/httprouter"
	"github.com/lisa-llm/lisa/config"
)

// MaxBodyBytes is the largest request body accepted (413 beyond).
const MaxBodyBytes = 1 << 20

// Server is the broker's HTTP server: routing, authentication, limits,
// validation and the OpenAI response shapes, in front of a Backend.
type Server struct {
	cfg        *config.Config
	backend    Backend
	models     Models // a server with several models: what backend routes to (nil: one model)
	stats      Stats  // nil when the backend reports none
	log        *slog.Logger
	router     *httprouter.Router
	adm        *admission
	limiter    *rateLimiter
	authFails  *addrLimiter // failed API key checks per client address
	tracker    *connTracker
	metrics    *metrics
	tlsConfig  *tls.Config
	conns      atomic.Int64
	handshakes atomic.Int64
	started    time.Time
}

// NewServer returns a server for the resolved configuration cfg (see
// config.Config.Resolve) in front of backend. If backend also implements
// Stats, its worker figures appear in /metrics.
func NewServer(cfg *config.Config, backend Backend, logger *slog.Logger) (*Server, error) {
	if cfg == nil || backend == nil || logger == nil {
		return nil, errors.New("broker: NewServer needs a config, a backend and a logger")
	}
	tc, err := TLSConfig(cfg)
	if err != nil {
		return nil, err
	}
	s := &Server{
		cfg:       cfg,
		backend:   backend,
		log:       logger,
		adm:       newAdmission(cfg.MaxRunning, cfg.QueueSize),
		limiter:   newRateLimiter(cfg.RateLimitRPM, cfg.RateLimitBurst, time.Now),
		authFails: newAddrLimiter(cfg.AuthFailureRPM, cfg.AuthFailureBurst, maxLimitedAddrs, time.Now),
		metrics:   newMetrics(),
		tlsConfig: tc,
		started:   time.Now(),
	}
	s.tracker = newConnTracker(cfg.MaxConnections, cfg.MaxConnectionsPerAddress, cfg.UnauthIdleTimeout.D(),
		tc == nil, &s.conns, logger)
	s.stats, _ = backend.(Stats)
	s.router = s.routes()
	return s, nil
}

func (s *Server) routes() *httprouter.Router {
	r := httprouter.New()
	r.RedirectTrailingSlash = false
	r.RedirectFixedPath = false
	r.HandleOPTIONS = false
	r.GET("/v1/models", s.handle("/v1/models", true, s.listModels))
	r.GET("/v1/models/:id", s.handle("/v1/models/{id}", true, s.getModel))
	r.POST("/v1/completions", s.handle("/v1/completions", true, s.completions))
	r.POST("/v1/chat/completions", s.handle("/v1/chat/completions", true, s.chatCompletions))
	r.POST("/v1/embeddings", s.handle("/v1/embeddings", true, s.embeddings))
	r.POST("/v1/responses", s.handle("/v1/responses", true, s.responses))
	r.GET("/v1/responses/:id", s.handle("/v1/responses/{id}", true, s.getResponse))
	r.POST("/tokenize", s.handle("/tokenize", true, s.tokenize))
	r.POST("/detokenize", s.handle("/detokenize", true, s.detokenize))
	r.GET("/health", s.handle("/health", false, s.health))
	r.GET("/metrics", s.handle("/metrics", true, s.writeMetrics))
	// CORS preflights of the API routes (HandleOPTIONS is off: an
	// OPTIONS elsewhere is a 405 like any other method).
	for path, methods := range map[string]string{"/v1/models": "GET", "/v1/models/:id": "GET",
		"/v1/completions": "POST", "/v1/chat/completions": "POST", "/tokenize": "POST", "/detokenize": "POST",
		"/v1/embeddings": "POST", "/v1/responses": "POST", "/v1/responses/:id": "GET"} {
		r.OPTIONS(path, s.handle("preflight", false, s.preflight(methods)))
	}
	r.NotFound = s.plain("other", &APIError{Status: http.StatusNotFound, Type: "invalid_request_error",
		Code: "unknown_url", Message: "unknown URL"})
	r.MethodNotAllowed = s.plain("other", &APIError{Status: http.StatusMethodNotAllowed, Type: "invalid_request_error",
		Code: "method_not_allowed", Message: "method not allowed on this URL"})
	r.PanicHandler = func(w http.ResponseWriter, req *http.Request, v any) {
		s.log.Error("handler panic", "route", req.URL.Path, "panic", fmt.Sprint(v))
		writeAPIError(w, toAPIError(errors.New("panic")))
	}
	return r
}

// Handler returns the HTTP handler of every route.
func (s *Server) Handler() http.Handler { return s.router }

func (s *Server) plain(route string, e *APIError) http.Handler {
	h := s.handle(route, false, func(http.ResponseWriter, *http.Request, *reqInfo) error { return e })
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h(w, r, nil) })
}

// reqInfo collects what the request log line and the metrics need.
type reqInfo struct {
	route            string
	id               string // x-request-id
	params           httprouter.Params
	start            time.Time
	key              int // index of the API key used, -1 for none
	stream           bool
	promptTokens     int
	completionTokens int
	ttft             time.Duration
	prompt           string // only set when log_prompts is on
	// streamError, when set, ends a stream whose headers are sent in
	// the route's own event protocol (the Responses API's events)
	// instead of the chat completion error event.
	streamError func(*APIError)
}

// handler is a route's code: it returns an error instead of writing one.
type handler func(w http.ResponseWriter, r *http.Request, ri *reqInfo) error

// handle wraps h with authentication, rate limiting, error rendering,
// metrics and the request log line: the one place errors are rendered.
func (s *Server) handle(route string, auth bool, h handler) httprouter.Handle {
	return func(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
		ri := &reqInfo{route: route, start: time.Now(), key: -1, id: requestID(r), params: ps}
		w.Header().Set("X-Request-Id", ri.id)
		s.setCORS(w, r)
		sw := &statusWriter{ResponseWriter: w}
		if s.tlsConfig != nil {
			w.Header().Set("Strict-Transport-Security", hstsValue)
		}
		var err error
		if auth {
			err = s.authorize(r, ri)
			if err == nil {
				s.trustConn(r)
				err = s.rateLimit(ri)
			} else {
				err = s.authFailed(w, r, err)
			}
		}
		if err == nil && s.models != nil && slices.Contains(modelRoutes, route) {
			var release func()
			if r, release, err = s.pinModel(sw, r); release != nil {
				defer release()
			}
		}
		if err == nil {
			err = h(sw, r, ri)
		}
		status := sw.status
		var ae *APIError
		if err != nil {
			ae = toAPIError(err)
			status = ae.Status
			switch {
			case !sw.wrote:
				writeAPIError(sw, ae)
			case ri.stream && ri.streamError != nil:
				ri.streamError(ae)
			case ri.stream:
				writeStreamError(sw, ae, s.cfg.WriteTimeout.D())
			}
		}
		if status == 0 {
			status = http.StatusOK
		}
		s.metrics.request(route, status)
		s.logRequest(r, ri, status, ae)
	}
}

// authorize checks the bearer key against every configured digest in
// constant time. With no keys configured (loopback only), all pass.
func (s *Server) authorize(r *http.Request, ri *reqInfo) error {
	if len(s.cfg.Keys) == 0 {
		return nil
	}
	unauthorized := func(msg string) error {
		return &APIError{Status: http.StatusUnauthorized, Type: "invalid_request_error", Code: "invalid_api_key", Message: msg}
	}
	h := r.Header.Get("Authorization")
	scheme, key, ok := strings.Cut(h, " ")
	if h == "" || !ok || !strings.EqualFold(scheme, "Bearer") {
		return unauthorized("missing API key: send Authorization: Bearer KEY")
	}
	sum := sha256.Sum256([]byte(strings.TrimSpace(key)))
	found := -1
	for i := range s.cfg.Keys {
		if subtle.ConstantTimeCompare(sum[:], s.cfg.Keys[i][:]) == 1 {
			found = i
		}
	}
	if found < 0 {
		return unauthorized("invalid API key")
	}
	ri.key = found
	return nil
}

// trustConn marks the request's connection as authenticated: the short
// idle timeout of unauthenticated connections no longer applies to it.
func (s *Server) trustConn(r *http.Request) {
	if c, ok := r.Context().Value(connKey{}).(*trackedConn); ok {
		s.tracker.trust(c)
	}
}

// authFailed counts a failed API key check against the client's address:
// past the burst the answer is 429 instead of 401. Either way the
// connection is closed after the answer, so failing clients hold no
// kept-alive connection.
func (s *Server) authFailed(w http.ResponseWriter, r *http.Request, err error) error {
	w.Header().Set("Connection", "close")
	ok, wait := s.authFails.allow(addrKeyOf(r))
	if ok {
		return err
	}
	s.metrics.authLimited.Add(1)
	secs := int(wait/time.Second) + 1
	return &APIError{Status: http.StatusTooManyRequests, Type: "rate_limit_error", Code: "too_many_auth_failures",
		Message: fmt.Sprintf("too many failed API key checks from this address; retry in %d s", secs), RetryAfter: secs, Err: err}
}

func (s *Server) rateLimit(ri *reqInfo) error {
	ok, wait := s.limiter.allow(ri.key)
	if ok {
		return nil
	}
	secs := int(wait/time.Second) + 1
	return &APIError{Status: http.StatusTooManyRequests, Type: "rate_limit_error", Code: "rate_limit_exceeded",
		Message: fmt.Sprintf("rate limit of %d requests per minute reached; retry in %d s", s.cfg.RateLimitRPM, secs), RetryAfter: secs}
}

func (s *Server) logRequest(r *http.Request, ri *reqInfo, status int, ae *APIError) {
	attrs := []slog.Attr{
		slog.String("method", r.Method),
		slog.String("route", ri.route),
		slog.Int("status", status),
		slog.Float64("duration_ms", msec(time.Since(ri.start))),
		slog.String("remote", remoteIP(r)),
		slog.String("request_id", ri.id),
	}
	if ri.key >= 0 {
		attrs = append(attrs, slog.Int("key", ri.key))
	}
	if ri.promptTokens > 0 || ri.completionTokens > 0 {
		attrs = append(attrs, slog.Bool("stream", ri.stream), slog.Int("prompt_tokens", ri.promptTokens),
			slog.Int("completion_tokens", ri.completionTokens), slog.Float64("ttft_ms", msec(ri.ttft)))
	}
	level := slog.LevelInfo
	if ae != nil {
		attrs = append(attrs, slog.String("error", ae.Message))
		if ae.Param != "" {
			attrs = append(attrs, slog.String("param", ae.Param))
		}
		if ae.Status >= 500 && ae.Err != nil {
			attrs = append(attrs, slog.String("cause", ae.Err.Error()))
			level = slog.LevelWarn
		}
	}
	if ri.prompt != "" {
		attrs = append(attrs, slog.String("prompt", ri.prompt))
	}
	s.log.LogAttrs(r.Context(), level, "request", attrs...)
}

func msec(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func remoteIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// statusWriter records the status and whether anything was written.
type statusWriter struct {
	http.ResponseWriter
	status int
	wrote  bool
}

// WriteHeader records the status.
func (w *statusWriter) WriteHeader(code int) {
	if !w.wrote {
		w.status, w.wrote = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

// Write records an implicit 200.
func (w *statusWriter) Write(b []byte) (int, error) {
	if !w.wrote {
		w.status, w.wrote = http.StatusOK, true
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// readBody reads the whole body, at most MaxBodyBytes (413 beyond).
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	if r.ContentLength > MaxBodyBytes {
		return nil, &http.MaxBytesError{Limit: MaxBodyBytes}
	}
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, err
		}
		return nil, invalid("", "reading the request body: %v", err)
	}
	return b, nil
}

// Serve serves HTTP (or HTTPS when TLS is configured) on ln until ctx is
// done, then shuts down gracefully within shutdown_timeout. The listener
// is wrapped with the connection caps and, with TLS, the handshake caps
// (see connTracker and tlsListener).
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	var l net.Listener = trackerListener{Listener: ln, t: s.tracker}
	if s.tlsConfig != nil {
		l = newTLSListener(l, s.tlsConfig, s.cfg.MaxHandshakes, s.cfg.MaxHandshakesPerAddress, s.cfg.HandshakeTimeout.D(), &s.handshakes, s.log)
	}
	srv := &http.Server{
		Handler:           s.router,
		ReadHeaderTimeout: s.cfg.ReadHeaderTimeout.D(),
		ReadTimeout:       s.cfg.ReadTimeout.D(),
		WriteTimeout:      s.cfg.WriteTimeout.D(),
		IdleTimeout:       s.cfg.IdleTimeout.D(),
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
		TLSNextProto:      map[string]func(*http.Server, *tls.Conn, http.Handler){}, // HTTP/1.1 only
		ConnState:         s.tracker.connState,
		ConnContext:       connContext,
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(l) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownTimeout.D())
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
	}
	<-errc
	return nil
}

// ListenAndServe listens on the configured address and calls Serve.
func (s *Server) ListenAndServe(ctx context.Context) error {
	ln, err := net.Listen("tcp", s.cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen %s: %w", s.cfg.Listen, err)
	}
	attrs := []any{"addr", ln.Addr().String(), "tls", s.tlsConfig != nil, "mtls", s.cfg.TLSClientCAFile != "", "api_keys", len(s.cfg.Keys)}
	if s.models != nil {
		attrs = append(attrs, "models", len(s.models.Statuses()))
	} else {
		attrs = append(attrs, "model", s.cfg.ModelName)
	}
	s.log.Info("listening", attrs...)
	return s.Serve(ctx, ln)
}

// contextFor is the request's context bounded by d.
func contextFor(r *http.Request, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.Context(), d)
}
