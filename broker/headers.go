package broker

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"slices"
	"strings"
)

// maxRequestID bounds a client's x-request-id the server echoes.
const maxRequestID = 128

// requestID is the client's x-request-id when it is sane (1 to 128 of
// letters, digits and ._:-), else a fresh random one: every response
// carries one, and the log line names it.
func requestID(r *http.Request) string {
	if id := r.Header.Get("X-Request-Id"); id != "" && len(id) <= maxRequestID && !strings.ContainsFunc(id, func(c rune) bool {
		return !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == ':' || c == '-')
	}) {
		return id
	}
	var b [16]byte
	_, _ = rand.Read(b[:])
	return "req_" + hex.EncodeToString(b[:])
}

// corsOrigin returns the value of Access-Control-Allow-Origin for the
// request's Origin, or "" when the origin is not configured (or there is
// none). Origins match exactly, as browsers send them.
func (s *Server) corsOrigin(r *http.Request) string {
	origin := r.Header.Get("Origin")
	if origin == "" || len(s.cfg.CORSOrigins) == 0 {
		return ""
	}
	if slices.Contains(s.cfg.CORSOrigins, "*") {
		return "*"
	}
	if slices.Contains(s.cfg.CORSOrigins, origin) {
		return origin
	}
	return ""
}

// setCORS adds the CORS headers of an actual request from an allowed
// origin: the origin, and the headers a browser script may read.
// A preflight sets its own.
func (s *Server) setCORS(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodOptions {
		return
	}
	if len(s.cfg.CORSOrigins) > 0 {
		w.Header().Add("Vary", "Origin")
	}
	if allow := s.corsOrigin(r); allow != "" {
		h := w.Header()
		h.Set("Access-Control-Allow-Origin", allow)
		h.Set("Access-Control-Expose-Headers", "X-Request-Id, Retry-After")
	}
}

// maxPreflightHeaders bounds the Access-Control-Request-Headers echoed.
const maxPreflightHeaders = 2048

// preflight answers a CORS preflight (OPTIONS) for an API route: 204 with
// the methods and the requested headers allowed when the origin is
// configured, else 403. It needs no API key: browsers send none with a
// preflight; the actual request is authenticated as any other.
func (s *Server) preflight(methods string) handler {
	return func(w http.ResponseWriter, r *http.Request, _ *reqInfo) error {
		allow := s.corsOrigin(r)
		method := r.Header.Get("Access-Control-Request-Method")
		if allow == "" || !strings.Contains(methods, method) || method == "" {
			return &APIError{Status: http.StatusForbidden, Type: "invalid_request_error", Code: "cors_forbidden",
				Message: "cross-origin requests from this origin are not allowed (configure cors_origins)"}
		}
		h := w.Header()
		h.Set("Access-Control-Allow-Origin", allow)
		h.Set("Access-Control-Allow-Methods", methods+", OPTIONS")
		if req := r.Header.Get("Access-Control-Request-Headers"); req != "" {
			if len(req) > maxPreflightHeaders || strings.ContainsFunc(req, func(c rune) bool {
				return !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == ',' || c == ' ')
			}) {
				return invalid("Access-Control-Request-Headers", "the requested headers are not a list of header names")
			}
			h.Set("Access-Control-Allow-Headers", req)
		}
		h.Set("Access-Control-Max-Age", "600")
		h.Add("Vary", "Origin, Access-Control-Request-Method, Access-Control-Request-Headers")
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
}
