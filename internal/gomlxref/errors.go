package gomlxref

import (
	"errors"
	"fmt"
)

// Sentinel errors; every error Load and Forward return wraps one of them.
var (
	// ErrMissing means a required metadata key or tensor is absent.
	ErrMissing = errors.New("gomlxref: missing")
	// ErrInvalid means a metadata value, tensor shape or token is out of
	// range, or the hyperparameters contradict each other.
	ErrInvalid = errors.New("gomlxref: invalid")
	// ErrUnsupported means the file asks for something the reference does
	// not compute (another architecture, another RoPE scaling, experts).
	ErrUnsupported = errors.New("gomlxref: unsupported")
	// ErrGraph means gomlx failed to build or run the graph.
	ErrGraph = errors.New("gomlxref: graph")
)

// Error names the metadata key, tensor or input at fault and what is
// wrong with it.
type Error struct {
	What   string // a metadata key, tensor name or "tokens"
	Reason string
	Err    error // one of the sentinels
}

// Error returns "gomlxref: <what>: <reason>".
func (e *Error) Error() string { return fmt.Sprintf("gomlxref: %s: %s", e.What, e.Reason) }

// Unwrap returns the sentinel the error wraps.
func (e *Error) Unwrap() error { return e.Err }

// fail returns an *Error.
func fail(sentinel error, what, format string, args ...any) *Error {
	return &Error{What: what, Reason: fmt.Sprintf(format, args...), Err: sentinel}
}
