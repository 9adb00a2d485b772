package broker

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/lisa-llm/lisa/gen"
)

// APIError is an error a handler returns to be rendered in the OpenAI
// error shape {"error":{"message","type","param","code"}}.
type APIError struct {
	Status     int    // HTTP status
	Message    string // shown to the client
	Type       string // OpenAI error type
	Param      string // the offending request field, "" for none
	Code       string // machine-readable code, "" for none
	RetryAfter int    // seconds, for 429 and 503 (0: no header)
	Err        error  // the cause, logged but never shown
}

// Error returns the message with the param it names.
func (e *APIError) Error() string {
	if e.Param != "" {
		return fmt.Sprintf("%d %s (param %s)", e.Status, e.Message, e.Param)
	}
	return fmt.Sprintf("%d %s", e.Status, e.Message)
}

// Unwrap returns the cause.
func (e *APIError) Unwrap() error { return e.Err }

// errorBody is the JSON shape of an error response.
type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func (e *APIError) body() errorBody {
	return errorBody{errorDetail{Message: e.Message, Type: e.Type, Param: optional(e.Param), Code: optional(e.Code)}}
}

// invalid is a 400 naming the offending field.
func invalid(param, format string, args ...any) *APIError {
	return &APIError{Status: http.StatusBadRequest, Type: "invalid_request_error", Param: param,
		Message: fmt.Sprintf(format, args...)}
}

// invalidCode is a 400 with a code.
func invalidCode(param, code, format string, args ...any) *APIError {
	e := invalid(param, format, args...)
	e.Code = code
	return e
}

// toAPIError turns any handler error into the APIError to render.
func toAPIError(err error) *APIError {
	var ae *APIError
	if errors.As(err, &ae) {
		return ae
	}
	if ge := gen.AsError(err); ge != nil {
		return fromGenError(ge, err)
	}
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		return &APIError{Status: http.StatusRequestEntityTooLarge, Type: "invalid_request_error",
			Code: "request_too_large", Message: fmt.Sprintf("request body larger than %d bytes", mbe.Limit), Err: err}
	case errors.Is(err, ErrFailed):
		return &APIError{Status: http.StatusServiceUnavailable, Type: "server_error", Code: "worker_failing",
			Message: "the model worker keeps failing; the server keeps restarting it, retry later", RetryAfter: 30, Err: err}
	case errors.Is(err, ErrNotReady):
		return &APIError{Status: http.StatusServiceUnavailable, Type: "server_error", Code: "model_not_ready",
			Message: "the model is not loaded yet; retry later", RetryAfter: 5, Err: err}
	case errors.Is(err, ErrWorkerFailed):
		return &APIError{Status: http.StatusBadGateway, Type: "server_error", Code: "worker_failed",
			Message: "the model worker failed during the request", Err: err}
	case errors.Is(err, context.DeadlineExceeded):
		return &APIError{Status: http.StatusGatewayTimeout, Type: "server_error", Code: "timeout",
			Message: "the request took too long", Err: err}
	case errors.Is(err, context.Canceled):
		// The client went away; nobody reads this response.
		return &APIError{Status: 499, Type: "server_error", Code: "client_closed", Message: "request cancelled", Err: err}
	}
	return &APIError{Status: http.StatusInternalServerError, Type: "server_error", Code: "internal_error",
		Message: "internal error", Err: err}
}

// fromGenError maps a failure the request caused, as the worker reported
// it, to its 400: the code is the error's own (a closed list), the message
// names the request's values.
func fromGenError(ge *gen.Error, err error) *APIError {
	code := string(ge.Code)
	if !ge.Code.Known() {
		code = string(gen.CodeInvalidRequest)
	}
	return &APIError{Status: http.StatusBadRequest, Type: "invalid_request_error", Param: ge.Param, Code: code,
		Message: ge.Message, Err: err}
}

// writeAPIError renders e as the whole response.
func writeAPIError(w http.ResponseWriter, e *APIError) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	if e.RetryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(e.RetryAfter))
	}
	status := e.Status
	if status == 499 {
		status = http.StatusServiceUnavailable
	}
	w.WriteHeader(status)
	b, _ := marshal(e.body())
	_, _ = w.Write(append(b, '\n'))
}
