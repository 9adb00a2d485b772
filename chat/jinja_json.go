package chat

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// dict is the interpreter's dict: keys in insertion order, as Python and
// llama.cpp's Jinja runtime keep them. The order is visible: tool
// schemas go through tojson, and a model was trained on its parameters
// in the order the client wrote them.
type dict struct {
	keys []string
	m    map[string]any
}

func newDict(n int) *dict {
	return &dict{keys: make([]string, 0, n), m: make(map[string]any, n)}
}

// set adds k at the end, or replaces its value in place.
func (d *dict) set(k string, v any) {
	if _, ok := d.m[k]; !ok {
		d.keys = append(d.keys, k)
	}
	d.m[k] = v
}

// jsonFormat is how tojson lays out a value: llama.cpp's defaults are no
// indentation, ", " between items and ": " after keys; with an indent the
// item separator becomes ",".
type jsonFormat struct {
	indent          int // < 0: one line
	itemSep, keySep string
	ensureASCII     bool
	// nlohmann writes floats as nlohmann::json's dump does (shortest
	// round trip, ".0" on integral values) instead of as tojson does.
	nlohmann bool
	maxSize  int
}

// tojsonFilter is the tojson filter with llama.cpp's keyword arguments
// indent, separators and ensure_ascii (sort_keys is refused there too).
func tojsonFilter(v any, args []any, kw map[string]any) (any, error) {
	arg := func(name string, pos int) any {
		if x, ok := kw[name]; ok {
			return x
		}
		if pos < len(args) {
			return args[pos]
		}
		return undefined{}
	}
	f := jsonFormat{indent: -1, keySep: ": ", maxSize: MaxOutput}
	if n, ok := arg("indent", 1).(int64); ok {
		if n > 64 {
			return nil, fmt.Errorf("tojson indent %d", n)
		}
		f.indent = int(n)
	}
	if truthy(arg("sort_keys", 3)) {
		return nil, &UnsupportedError{Construct: "tojson(sort_keys=true)"}
	}
	f.ensureASCII = truthy(arg("ensure_ascii", 0))
	f.itemSep = ", "
	if f.indent >= 0 {
		f.itemSep = ","
	}
	if seps, ok := arg("separators", 2).([]any); ok {
		if len(seps) > 0 {
			f.itemSep = str(seps[0])
		}
		if len(seps) > 1 {
			f.keySep = str(seps[1])
		}
	}
	var b strings.Builder
	if err := f.write(&b, v, 0); err != nil {
		return nil, err
	}
	return b.String(), nil
}

// toJSON renders v as tojson does with no arguments.
func toJSON(v any) (string, error) {
	f := jsonFormat{indent: -1, itemSep: ", ", keySep: ": ", maxSize: MaxOutput}
	var b strings.Builder
	err := f.write(&b, v, 0)
	return b.String(), err
}

func (f *jsonFormat) write(b *strings.Builder, v any, lvl int) error {
	if lvl > maxValueDepth {
		return fmt.Errorf("value nested deeper than %d", maxValueDepth)
	}
	if b.Len() > f.maxSize {
		return fmt.Errorf("%w: JSON of more than %d bytes", ErrTooLarge, f.maxSize)
	}
	nl := func(l int) {
		if f.indent >= 0 {
			b.WriteByte('\n')
			b.WriteString(strings.Repeat(" ", max(f.indent, 0)*l))
		}
	}
	switch x := v.(type) {
	case nil, undefined:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(x))
	case int64:
		b.WriteString(strconv.FormatInt(x, 10))
	case float64:
		if f.nlohmann {
			s := strconv.FormatFloat(x, 'g', -1, 64)
			if !strings.ContainsAny(s, ".eIN") {
				s += ".0"
			}
			b.WriteString(s)
			break
		}
		// C++'s default stream formatting, as llama.cpp's tojson writes
		// floats.
		b.WriteString(strconv.FormatFloat(x, 'g', 6, 64))
	case string:
		f.writeString(b, x)
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			nl(lvl + 1)
			if err := f.write(b, e, lvl+1); err != nil {
				return err
			}
			if i < len(x)-1 {
				b.WriteString(f.itemSep)
			}
		}
		if len(x) > 0 {
			nl(lvl)
		}
		b.WriteByte(']')
	case *dict:
		b.WriteByte('{')
		for i, k := range x.keys {
			nl(lvl + 1)
			f.writeString(b, k)
			b.WriteString(f.keySep)
			if err := f.write(b, x.m[k], lvl+1); err != nil {
				return err
			}
			if i < len(x.keys)-1 {
				b.WriteString(f.itemSep)
			}
		}
		if len(x.keys) > 0 {
			nl(lvl)
		}
		b.WriteByte('}')
	default:
		b.WriteString("null")
	}
	return nil
}

// writeString quotes s as llama.cpp's tojson does: only the quote, the
// backslash and control characters are escaped (not <, > or &, unlike
// encoding/json), other bytes are copied; with ensure_ascii every
// non-ASCII character becomes a \u escape of four hex digits (a UTF-16
// surrogate pair above U+FFFF), bad UTF-8 \ufffd.
func (f *jsonFormat) writeString(b *strings.Builder, s string) {
	b.WriteByte('"')
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '"':
			b.WriteString(`\"`)
		case c == '\\':
			b.WriteString(`\\`)
		case c == '\b':
			b.WriteString(`\b`)
		case c == '\f':
			b.WriteString(`\f`)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\r':
			b.WriteString(`\r`)
		case c == '\t':
			b.WriteString(`\t`)
		case c < 0x20:
			fmt.Fprintf(b, `\u%04x`, c)
		case c >= 0x80 && f.ensureASCII:
			r, n := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && n <= 1 {
				b.WriteString(`\ufffd`)
				i++
				continue
			}
			if r > 0xffff {
				r -= 0x10000
				fmt.Fprintf(b, `\u%04x\u%04x`, 0xd800+(r>>10)&0x3ff, 0xdc00+r&0x3ff)
			} else {
				fmt.Fprintf(b, `\u%04x`, r)
			}
			i += n
			continue
		default:
			b.WriteByte(c)
		}
		i++
	}
	b.WriteByte('"')
}

// Limits on JSON values given to templates (tool definitions, tool-call
// arguments): client input.
const (
	// MaxJSONDepth is the deepest nesting of arrays and objects.
	MaxJSONDepth = 32
)

// ErrJSON reports a JSON value a template cannot be given.
var ErrJSON = errors.New("chat: invalid JSON")

// fromJSON decodes one JSON value into interpreter values, keeping the
// order of object keys (a later duplicate key replaces the value in the
// first one's place, as nlohmann's ordered_json does). Integers without
// fraction or exponent become int64 and other numbers float64, as
// llama.cpp's JSON parser types them.
func fromJSON(data []byte) (any, error) {
	if len(data) > MaxOutput {
		return nil, fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, len(data), MaxOutput)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := decodeValue(dec, 0)
	if err != nil {
		return nil, fmt.Errorf("%w at offset %d: %v", ErrJSON, dec.InputOffset(), err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%w at offset %d: data after the value", ErrJSON, dec.InputOffset())
	}
	return v, nil
}

func decodeValue(dec *json.Decoder, depth int) (any, error) {
	if depth > MaxJSONDepth {
		return nil, fmt.Errorf("nested deeper than %d", MaxJSONDepth)
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '[':
			list := []any{}
			for dec.More() {
				e, err := decodeValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				list = append(list, e)
			}
			_, err := dec.Token()
			return list, err
		case '{':
			d := newDict(4)
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k, _ := kt.(string)
				e, err := decodeValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				d.set(k, e)
			}
			_, err := dec.Token()
			return d, err
		}
		return nil, fmt.Errorf("unexpected %v", t)
	case json.Number:
		s := t.String()
		if !strings.ContainsAny(s, ".eE") {
			if n, err := strconv.ParseInt(s, 10, 64); err == nil {
				return n, nil
			}
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, fmt.Errorf("number %q: %w", s, err)
		}
		return f, nil
	case string, bool, nil:
		return t, nil
	}
	return nil, fmt.Errorf("unexpected token %v", tok)
}
