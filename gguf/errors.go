package gguf

import (
	"errors"
	"fmt"
)

// Sentinel errors. Every error returned by the reader or by the typed
// accessors wraps exactly one of them.
var (
	// ErrMagic means the file does not start with "GGUF".
	ErrMagic = errors.New("gguf: bad magic")
	// ErrVersion means the GGUF version is not 2 or 3.
	ErrVersion = errors.New("gguf: unsupported version")
	// ErrTruncated means the file ends before a field it declares.
	ErrTruncated = errors.New("gguf: truncated file")
	// ErrLimit means a count or length exceeds the configured Limits.
	ErrLimit = errors.New("gguf: limit exceeded")
	// ErrLayout means the tensor table or data section is inconsistent:
	// bad alignment, dimensions, sizes, overlaps or out-of-file data.
	ErrLayout = errors.New("gguf: bad layout")
	// ErrDuplicate means a metadata key or tensor name occurs twice.
	ErrDuplicate = errors.New("gguf: duplicate name")
	// ErrType means a metadata value type or tensor type is unknown or
	// unusable, or a value is invalid for its type.
	ErrType = errors.New("gguf: bad type")
	// ErrNotFound means a metadata key or tensor is absent.
	ErrNotFound = errors.New("gguf: not found")
	// ErrValueType means a metadata value has a type other than the one
	// the caller asked for, or a value that does not fit it.
	ErrValueType = errors.New("gguf: wrong value type")
	// ErrIO means reading the underlying file failed.
	ErrIO = errors.New("gguf: read error")
)

// FormatError describes a problem found in a GGUF file: where it is (a
// byte offset, or -1 when the problem has no single place) and what is
// wrong. Unwrap returns one of the package's sentinel errors.
type FormatError struct {
	Offset int64  // byte offset of the offending field, or -1
	Msg    string // what is wrong, naming the field
	Err    error  // the sentinel (ErrTruncated, ErrLayout, ...)
}

// Error returns the message, prefixed by "gguf: offset 0x…:" when the
// offset is known.
func (e *FormatError) Error() string {
	if e.Offset < 0 {
		return "gguf: " + e.Msg
	}
	return fmt.Sprintf("gguf: offset %#x: %s", e.Offset, e.Msg)
}

// Unwrap returns the sentinel error classifying e.
func (e *FormatError) Unwrap() error { return e.Err }

// formatErr builds a *FormatError at off classified by sentinel.
func formatErr(off int64, sentinel error, format string, args ...any) *FormatError {
	return &FormatError{Offset: off, Msg: fmt.Sprintf(format, args...), Err: sentinel}
}
