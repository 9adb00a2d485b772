package ipc

import (
	"errors"
	"fmt"
	"strconv"
)

// ErrProtocol matches every *ProtocolError with errors.Is.
var ErrProtocol = errors.New("ipc: protocol violation")

// Kind names the rule a peer broke.
type Kind int

// The kinds of protocol violation.
const (
	KindFrameSize      Kind = iota + 1 // length prefix above MaxFrame or too small for an object
	KindTruncated                      // the stream ended inside a frame
	KindBadJSON                        // the body is not well-formed JSON
	KindTrailingData                   // data follows the JSON object
	KindInvalidUTF8                    // invalid UTF-8 or an unpaired surrogate escape
	KindUnknownType                    // a "type" this direction does not carry
	KindUnknownField                   // a field the message does not have (names are case-sensitive)
	KindDuplicateField                 // a field given twice
	KindMissingField                   // a required field is absent
	KindWrongType                      // a field of the wrong JSON type, null, or a number that does not fit
	KindBadValue                       // a well-typed field with a value out of range
	KindUnknownID                      // a reply naming an id the broker never issued
	KindFinishedID                     // a reply naming an id that already saw its final reply
	KindOutOfOrder                     // a message that is not allowed at this point of the exchange
)

// String names the kind, e.g. "unknown field".
func (k Kind) String() string {
	switch k {
	case KindFrameSize:
		return "frame size"
	case KindTruncated:
		return "truncated frame"
	case KindBadJSON:
		return "bad JSON"
	case KindTrailingData:
		return "trailing data"
	case KindInvalidUTF8:
		return "invalid UTF-8"
	case KindUnknownType:
		return "unknown type"
	case KindUnknownField:
		return "unknown field"
	case KindDuplicateField:
		return "duplicate field"
	case KindMissingField:
		return "missing field"
	case KindWrongType:
		return "wrong type"
	case KindBadValue:
		return "bad value"
	case KindUnknownID:
		return "unknown id"
	case KindFinishedID:
		return "finished id"
	case KindOutOfOrder:
		return "out of order"
	}
	return "kind " + strconv.Itoa(int(k))
}

// ProtocolError is one protocol violation.
type ProtocolError struct {
	Kind   Kind
	Type   string // message type, when known
	Field  string // field path such as "usage.prompt_tokens" or "ids[3]", when known
	Offset int64  // byte offset: in the stream for frame errors, in the frame body otherwise (-1: unknown)
	Detail string // what was wrong, for the log
}

// Error renders the violation on one line.
func (e *ProtocolError) Error() string {
	s := "ipc: " + e.Kind.String()
	if e.Field != "" {
		s += " " + strconv.Quote(e.Field)
	}
	if e.Type != "" {
		s += " in " + strconv.Quote(e.Type) + " message"
	}
	if e.Offset >= 0 {
		s += " at byte " + strconv.FormatInt(e.Offset, 10)
	}
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

// Is reports whether target is ErrProtocol.
func (e *ProtocolError) Is(target error) bool { return target == ErrProtocol }

// violation builds a ProtocolError with an unknown offset.
func violation(k Kind, typ, field, format string, args ...any) *ProtocolError {
	return &ProtocolError{Kind: k, Type: typ, Field: field, Offset: -1, Detail: fmt.Sprintf(format, args...)}
}

// KindOf returns the Kind of a *ProtocolError in err's chain, or 0.
func KindOf(err error) Kind {
	var pe *ProtocolError
	if errors.As(err, &pe) {
		return pe.Kind
	}
	return 0
}
