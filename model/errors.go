package model

import (
	"errors"
	"fmt"
)

// Sentinel errors; the typed errors below wrap one of them.
var (
	// ErrMissing means a required metadata key or tensor is absent.
	ErrMissing = errors.New("missing")
	// ErrInvalid means a metadata value, tensor shape or tensor type is
	// not one the model accepts.
	ErrInvalid = errors.New("invalid")
	// ErrUnsupported means the file asks for a feature the engine does not
	// implement (another architecture, mixture of experts, YaRN, ...).
	ErrUnsupported = errors.New("unsupported")
	// ErrBatch means a Batch does not fit the model, cache or runner.
	ErrBatch = errors.New("bad batch")
)

// KeyError reports a metadata key that is missing, has the wrong type or
// holds a value out of range.
type KeyError struct {
	Key    string
	Reason string
	Err    error // ErrMissing, ErrInvalid or ErrUnsupported
}

// Error names the key and what is wrong with it.
func (e *KeyError) Error() string {
	return fmt.Sprintf("model: metadata key %s: %s", e.Key, e.Reason)
}

// Unwrap returns the sentinel the error wraps.
func (e *KeyError) Unwrap() error { return e.Err }

// TensorError reports a tensor that is missing, unexpected, or has the
// wrong shape or type.
type TensorError struct {
	Name   string
	Reason string
	Err    error // ErrMissing, ErrInvalid or ErrUnsupported
}

// Error names the tensor and what is wrong with it.
func (e *TensorError) Error() string {
	return fmt.Sprintf("model: tensor %s: %s", e.Name, e.Reason)
}

// Unwrap returns the sentinel the error wraps.
func (e *TensorError) Unwrap() error { return e.Err }

// BatchError reports a field of a Batch that does not fit.
type BatchError struct {
	Field  string // "Tokens", "Pos", "Seq", "Logits"
	Index  int    // the entry, or -1 for the batch as a whole
	Reason string
}

// Error names the field, the entry and the problem.
func (e *BatchError) Error() string {
	if e.Index < 0 {
		return fmt.Sprintf("model: batch %s: %s", e.Field, e.Reason)
	}
	return fmt.Sprintf("model: batch %s[%d]: %s", e.Field, e.Index, e.Reason)
}

// Unwrap returns ErrBatch.
func (e *BatchError) Unwrap() error { return ErrBatch }
