package ipc

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
)

// Marshal renders m as a frame body: a JSON object with "type" first.
func Marshal(m Message) ([]byte, error) {
	// Required arrays go out as [], never null.
	switch v := m.(type) {
	case *Tokenized:
		if v.IDs == nil {
			c := *v
			c.IDs = []int32{}
			m = &c
		}
	case *Detokenize:
		if v.IDs == nil {
			c := *v
			c.IDs = []int32{}
			m = &c
		}
	}
	body, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("ipc: marshal %s: %w", m.Type(), err)
	}
	out := make([]byte, 0, len(body)+len(m.Type())+12)
	out = append(out, `{"type":`...)
	out = strconv.AppendQuote(out, m.Type())
	if len(body) > 2 {
		out = append(out, ',')
	}
	return append(out, body[1:]...), nil
}

// Encode marshals m and appends it to dst as one frame.
func Encode(dst []byte, m Message) ([]byte, error) {
	body, err := Marshal(m)
	if err != nil {
		return dst, err
	}
	return AppendFrame(dst, body)
}

// Write writes m to w as one frame.
func Write(w io.Writer, m Message) error {
	f, err := Encode(nil, m)
	if err != nil {
		return err
	}
	if _, err := w.Write(f); err != nil {
		return fmt.Errorf("ipc: write %s: %w", m.Type(), err)
	}
	return nil
}

// requestTypes are the messages the broker sends.
func newRequest(typ string) Message {
	switch typ {
	case TypeHello:
		return new(Hello)
	case TypeGenerate:
		return new(Generate)
	case TypeTokenize:
		return new(Tokenize)
	case TypeDetokenize:
		return new(Detokenize)
	case TypeCancel:
		return new(Cancel)
	case TypeEmbed:
		return new(Embed)
	}
	return nil
}

// newReply returns an empty message of a type the worker sends.
func newReply(typ string) Message {
	switch typ {
	case TypeProgress:
		return new(Progress)
	case TypeReady:
		return new(Ready)
	case TypeTokens:
		return new(Tokens)
	case TypeDone:
		return new(Done)
	case TypeError:
		return new(Error)
	case TypeTokenized:
		return new(Tokenized)
	case TypeDetokenized:
		return new(Detokenized)
	case TypeEmbedding:
		return new(Embedding)
	}
	return nil
}

// DecodeRequest strictly decodes a frame body the broker sent.
func DecodeRequest(body []byte) (Message, error) { return decode(body, newRequest) }

// DecodeReply strictly decodes a frame body the worker sent.
func DecodeReply(body []byte) (Message, error) { return decode(body, newReply) }

func decode(body []byte, newMsg func(string) Message) (Message, error) {
	if err := checkText(body); err != nil {
		return nil, err
	}
	m, err := strictDecode(body, newMsg)
	if err != nil {
		return nil, err
	}
	if err := m.validate(); err != nil {
		return nil, err
	}
	return m, nil
}

// Check applies the value rules decoding applies to m, so a sender can
// refuse to send a message its peer would treat as a violation.
func Check(m Message) error { return m.validate() }
