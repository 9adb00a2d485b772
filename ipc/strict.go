package ipc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"
)

// A struct field is required when its ipc tag says so: `ipc:"required"`.
// Pointer fields are optional; null is refused everywhere. Messages are
// flat structs of strings, booleans, numbers, structs, pointers and slices.

// checkText reports invalid UTF-8 in body, or a \u escape that leaves a
// UTF-16 surrogate unpaired (encoding/json would turn either into U+FFFD
// without a word).
func checkText(body []byte) error {
	if !utf8.Valid(body) {
		off := 0
		for off < len(body) {
			r, n := utf8.DecodeRune(body[off:])
			if r == utf8.RuneError && n <= 1 {
				break
			}
			off += n
		}
		return &ProtocolError{Kind: KindInvalidUTF8, Offset: int64(off), Detail: "invalid UTF-8 byte sequence"}
	}
	inString := false
	for i := 0; i < len(body); i++ {
		c := body[i]
		switch {
		case c == '"':
			inString = !inString
		case c == '\\' && inString && i+1 < len(body):
			i++
			if body[i] != 'u' {
				continue
			}
			u, ok := hex4(body, i+1)
			if !ok {
				continue // the JSON scanner reports the syntax error
			}
			switch {
			case u >= 0xDC00 && u <= 0xDFFF:
				return &ProtocolError{Kind: KindInvalidUTF8, Offset: int64(i - 1), Detail: "unpaired low surrogate escape"}
			case u >= 0xD800 && u <= 0xDBFF:
				lo, ok := uint16(0), i+6 < len(body) && body[i+5] == '\\' && body[i+6] == 'u'
				if ok {
					lo, ok = hex4(body, i+7)
				}
				if !ok || lo < 0xDC00 || lo > 0xDFFF {
					return &ProtocolError{Kind: KindInvalidUTF8, Offset: int64(i - 1), Detail: "unpaired high surrogate escape"}
				}
				i += 10
			default:
				i += 4
			}
		}
	}
	return nil
}

// hex4 parses the four hex digits at b[i:i+4].
func hex4(b []byte, i int) (uint16, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	v, err := strconv.ParseUint(string(b[i:i+4]), 16, 16)
	return uint16(v), err == nil
}

// walker decodes a JSON body into a Go value token by token, checking
// every rule as it goes: one pass, and nothing is allocated for a value
// before its JSON has been read.
type walker struct {
	dec *json.Decoder
	typ string // message type, for errors
}

// strictDecode decodes body, an object whose first member is "type", into
// the message newMsg returns for that type.
func strictDecode(body []byte, newMsg func(string) Message) (Message, error) {
	w := &walker{dec: json.NewDecoder(bytes.NewReader(body))}
	w.dec.UseNumber()
	tok, err := w.token("")
	if err != nil {
		return nil, err
	}
	if tok != json.Delim('{') {
		return nil, w.wrong("", "object", tok)
	}
	typ, err := w.typeMember()
	if err != nil {
		return nil, err
	}
	m := newMsg(typ)
	if m == nil {
		return nil, violation(KindUnknownType, "", "type", "%.32q is not a message this side receives", typ)
	}
	w.typ = typ
	if err := w.object(reflect.ValueOf(m).Elem(), ""); err != nil {
		return nil, err
	}
	if _, err := w.dec.Token(); err != io.EOF {
		return nil, &ProtocolError{Kind: KindTrailingData, Type: typ, Offset: w.dec.InputOffset(), Detail: "data after the JSON object"}
	}
	return m, nil
}

// typeMember reads the object's first member, which must be "type".
func (w *walker) typeMember() (string, error) {
	off := w.dec.InputOffset()
	if !w.dec.More() {
		return "", &ProtocolError{Kind: KindMissingField, Field: "type", Offset: off, Detail: "empty object"}
	}
	tok, err := w.token("")
	if err != nil {
		return "", err
	}
	if key, _ := tok.(string); key != "type" {
		return "", &ProtocolError{Kind: KindMissingField, Field: "type", Offset: off,
			Detail: fmt.Sprintf("the first member is %.32q, not \"type\"", key)}
	}
	if tok, err = w.token("type"); err != nil {
		return "", err
	}
	typ, ok := tok.(string)
	if !ok {
		return "", w.wrong("type", "string", tok)
	}
	return typ, nil
}

// token reads the next token, turning syntax errors into ProtocolErrors.
func (w *walker) token(path string) (json.Token, error) {
	off := w.dec.InputOffset()
	tok, err := w.dec.Token()
	if err == nil {
		return tok, nil
	}
	var se *json.SyntaxError
	switch {
	case errors.As(err, &se):
		off = se.Offset
	case err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF):
		err = errors.New("unexpected end of JSON input")
	}
	return nil, &ProtocolError{Kind: KindBadJSON, Type: w.typ, Field: path, Offset: off, Detail: err.Error()}
}

func (w *walker) wrong(path, want string, tok json.Token) error {
	got := "null"
	switch tok := tok.(type) {
	case json.Delim:
		got = "delimiter " + tok.String()
	case string:
		got = "string"
	case bool:
		got = "boolean"
	case json.Number:
		got = "number " + string(tok)
	}
	if len(got) > 40 {
		got = got[:40] + "…"
	}
	return &ProtocolError{Kind: KindWrongType, Type: w.typ, Field: path, Offset: w.dec.InputOffset(),
		Detail: "want " + want + ", got " + got}
}

// value decodes the value that starts with tok into v.
func (w *walker) value(tok json.Token, v reflect.Value, path string) error {
	if v.Kind() == reflect.Pointer {
		if tok == nil {
			return w.wrong(path, v.Type().Elem().Kind().String(), tok)
		}
		v.Set(reflect.New(v.Type().Elem()))
		v = v.Elem()
	}
	switch v.Kind() {
	case reflect.Struct:
		if tok != json.Delim('{') {
			return w.wrong(path, "object", tok)
		}
		return w.object(v, path)
	case reflect.Slice:
		if tok != json.Delim('[') {
			return w.wrong(path, "array", tok)
		}
		return w.array(v, path)
	case reflect.String:
		s, ok := tok.(string)
		if !ok {
			return w.wrong(path, "string", tok)
		}
		v.SetString(s)
	case reflect.Bool:
		b, ok := tok.(bool)
		if !ok {
			return w.wrong(path, "boolean", tok)
		}
		v.SetBool(b)
	default:
		return w.number(tok, v, path)
	}
	return nil
}

// number decodes a JSON number into an integer or float v, which it must fit.
func (w *walker) number(tok json.Token, v reflect.Value, path string) error {
	n, ok := tok.(json.Number)
	bits := v.Type().Bits()
	switch v.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		i, err := strconv.ParseInt(string(n), 10, bits)
		if !ok || err != nil {
			return w.wrong(path, "integer of "+strconv.Itoa(bits)+" bits", tok)
		}
		v.SetInt(i)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		u, err := strconv.ParseUint(string(n), 10, bits)
		if !ok || err != nil {
			return w.wrong(path, "unsigned integer of "+strconv.Itoa(bits)+" bits", tok)
		}
		v.SetUint(u)
	case reflect.Float32, reflect.Float64:
		f, err := strconv.ParseFloat(string(n), bits)
		if !ok || err != nil {
			return w.wrong(path, "number that fits float"+strconv.Itoa(bits), tok)
		}
		v.SetFloat(f)
	default:
		return &ProtocolError{Kind: KindWrongType, Type: w.typ, Field: path, Offset: -1, Detail: "unsupported Go type " + v.Type().String()}
	}
	return nil
}

// array decodes the elements of an array into slice v, after its '['.
func (w *walker) array(v reflect.Value, path string) error {
	s := reflect.MakeSlice(v.Type(), 0, 0)
	for i := 0; w.dec.More(); i++ {
		p := path + "[" + strconv.Itoa(i) + "]"
		tok, err := w.token(p)
		if err != nil {
			return err
		}
		e := reflect.New(v.Type().Elem()).Elem()
		if err := w.value(tok, e, p); err != nil {
			return err
		}
		s = reflect.Append(s, e)
	}
	v.Set(s)
	_, err := w.token(path) // the closing ']'
	return err
}

// fieldInfo describes one JSON field of a struct.
type fieldInfo struct {
	index    int
	name     string
	typ      reflect.Type
	required bool
	seen     bool
}

// fields lists the JSON fields of struct type t in order and by exact name.
func fields(t reflect.Type) ([]*fieldInfo, map[string]*fieldInfo) {
	var list []*fieldInfo
	m := make(map[string]*fieldInfo, t.NumField())
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !f.IsExported() || name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		fi := &fieldInfo{index: i, name: name, typ: f.Type, required: f.Tag.Get("ipc") == "required"}
		list = append(list, fi)
		m[name] = fi
	}
	return list, m
}

// object decodes the members of an object into struct v, after its '{'
// (and, at the top, after its "type" member).
func (w *walker) object(v reflect.Value, path string) error {
	list, fs := fields(v.Type())
	for w.dec.More() {
		off := w.dec.InputOffset()
		tok, err := w.token(path)
		if err != nil {
			return err
		}
		key, _ := tok.(string)
		p := key
		if path != "" {
			p = path + "." + key
		}
		fi := fs[key]
		switch {
		case fi == nil:
			k := KindUnknownField
			if key == "type" && path == "" {
				k = KindDuplicateField
			}
			return &ProtocolError{Kind: k, Type: w.typ, Field: limitField(p), Offset: off}
		case fi.seen:
			return &ProtocolError{Kind: KindDuplicateField, Type: w.typ, Field: p, Offset: off}
		}
		fi.seen = true
		vtok, err := w.token(p)
		if err != nil {
			return err
		}
		if err := w.value(vtok, v.Field(fi.index), p); err != nil {
			return err
		}
	}
	if _, err := w.token(path); err != nil { // the closing '}'
		return err
	}
	for _, fi := range list {
		if fi.required && !fi.seen {
			p := fi.name
			if path != "" {
				p = path + "." + fi.name
			}
			return &ProtocolError{Kind: KindMissingField, Type: w.typ, Field: p, Offset: w.dec.InputOffset()}
		}
	}
	return nil
}

// limitField shortens a hostile field name for the log.
func limitField(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}
