package gen

import (
	"encoding/json"
	"errors"
	"fmt"
)

// Code names why a request failed, from a closed list: the worker answers
// with one, package ipc refuses any other, and the broker maps each to its
// HTTP status and OpenAI error code.
type Code string

// The error codes.
const (
	// CodeContextLength: the prompt (with max_tokens, when the client set
	// it) does not fit the context.
	CodeContextLength Code = "context_length_exceeded"
	// CodeInvalidPrompt: the input cannot be made a prompt (a token id
	// outside the vocabulary, a template that fails on these messages).
	CodeInvalidPrompt Code = "invalid_prompt"
	// CodeUnsupported: the request asks for something this model (or this
	// server) cannot do, such as tools on a model without a usable
	// template.
	CodeUnsupported Code = "unsupported_for_model"
	// CodeInvalidRequest: a field is well-formed but unusable (a schema
	// or grammar that does not compile).
	CodeInvalidRequest Code = "invalid_request"
)

// Known reports whether c is on the list.
func (c Code) Known() bool {
	switch c {
	case CodeContextLength, CodeInvalidPrompt, CodeUnsupported, CodeInvalidRequest:
		return true
	}
	return false
}

// Error is a request failure the client caused or can act on: its Message
// is meant for the client (it names the request's own values, never the
// server's internals).
type Error struct {
	Code    Code
	Param   string // the request field at fault ("messages", "tools[2].function.parameters"), "" for none
	Message string
	Err     error // the cause, for the log and errors.Is; never shown to the client
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Error returns the message with its code.
func (e *Error) Error() string {
	if e.Param != "" {
		return fmt.Sprintf("%s (%s): %s", e.Code, e.Param, e.Message)
	}
	return fmt.Sprintf("%s: %s", e.Code, e.Message)
}

// Errorf builds an *Error.
func Errorf(code Code, param, format string, args ...any) *Error {
	return &Error{Code: code, Param: param, Message: fmt.Sprintf(format, args...)}
}

// AsError returns the *Error in err's chain, or nil.
func AsError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return nil
}

// CheckJSONObject checks that text is one JSON object of at most maxBytes
// bytes whose arrays and objects nest at most maxDepth deep: the shape
// check of a schema that arrives as JSON text, at every boundary it
// crosses. The error says what is wrong, for a message naming the field.
func CheckJSONObject(text string, maxBytes, maxDepth int) error {
	if len(text) > maxBytes {
		return fmt.Errorf("%d bytes, at most %d", len(text), maxBytes)
	}
	depth, inString, started := 0, false, false
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch {
		case inString && c == '\\':
			i++ // the escaped byte cannot end the string
		case inString:
			inString = c != '"'
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			if !started && c != '{' {
				return errors.New("not a JSON object")
			}
			started = true
			if depth++; depth > maxDepth {
				return fmt.Errorf("nested more than %d deep at byte %d", maxDepth, i)
			}
		case c == '}' || c == ']':
			depth--
		case !started && c != ' ' && c != '\t' && c != '\n' && c != '\r':
			return errors.New("not a JSON object")
		}
	}
	// The scan counted depth on the assumption that the text is JSON;
	// json.Valid checks that (after the scan, so a deep text is refused
	// before it is parsed in full).
	if !started || !json.Valid([]byte(text)) {
		return errors.New("not valid JSON")
	}
	return nil
}
