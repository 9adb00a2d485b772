package toolcall

import (
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// A call's arguments stream as the model writes them. A call is
// committed once its object has given, in this order, a valid name (and
// any other string-valued keys such as Mistral's id or Llama's type) and
// then its arguments key with a value that opens an object: from there
// every byte of the arguments that keeps them a valid JSON prefix is
// certainly theirs, and is sent (compact, and never ending inside a
// UTF-8 sequence). A call whose layout differs (arguments before the
// name, as a JSON string, a built-in <|python_tag|> call) is sent whole
// once complete.
//
// A committed call stays a call whatever follows: when the output then
// breaks it (ends inside it, a syntax error, a duplicate key), the call
// keeps the arguments read up to the break, as OpenAI's call cut by the
// token budget keeps its truncated arguments, Result.Err says why, and
// the rest of the output from the break is content.

// partialCall is a committed call as far as the text goes.
type partialCall struct {
	name, id string
	args     string // compact arguments text read so far
	complete bool   // the arguments object closed
}

// partial reads the committed calls of the markup ending at text[end]
// (at most limit of them) and returns them with where the reading
// stopped: after the last whole call object, at the end of the last
// arguments read, or where the text stopped being a committed call.
func (p *parser) partial(text string, end, limit int) ([]partialCall, int) {
	var calls []partialCall
	// one reads a call object at j; it reports whether a next call may
	// follow (the object ended) and where the reading stands.
	one := func(j int, argKey string) (bool, int) {
		if len(calls) >= limit {
			return false, j
		}
		h, st := callHead(text, j)
		if st != done || h.argKey != argKey || !validName(h.name) || len(p.o.Tools) > 0 && !contains(p.o.Tools, h.name) {
			return false, j
		}
		aend, ast := scanValue(text, h.argsAt)
		c := partialCall{name: h.name, id: h.id, args: compact(text[h.argsAt:aend]), complete: ast == done}
		calls = append(calls, c)
		if !c.complete {
			return false, aend
		}
		oend, ost := scanValue(text, j)
		if ost != done {
			return false, aend
		}
		return true, oend
	}
	list := func(j int, argKey string) int {
		j = skipSpace(text, j)
		if j >= len(text) || text[j] != '[' {
			return j
		}
		for j = skipSpace(text, j+1); ; {
			ok, k := one(j, argKey)
			if !ok {
				return k
			}
			j = skipSpace(text, k)
			if j >= len(text) || text[j] != ',' {
				return k
			}
			j = skipSpace(text, j+1)
		}
	}
	switch p.f {
	case Hermes:
		_, stop := one(skipSpace(text, end), "arguments")
		return calls, stop
	case Llama3:
		_, stop := one(skipSpace(text, end), "parameters")
		return calls, stop
	case Mistral:
		return calls, list(end, "arguments")
	}
	// Generic: {"tool_call": {...}} or {"tool_calls": [...]}.
	j := skipSpace(text, end)
	if j >= len(text) || text[j] != '{' {
		return nil, end
	}
	j = skipSpace(text, j+1)
	kend, st := scanString(text, j)
	if st != done {
		return nil, end
	}
	var key string
	_ = json.Unmarshal([]byte(text[j:kend]), &key)
	j = skipSpace(text, kend)
	if j >= len(text) || text[j] != ':' {
		return nil, end
	}
	switch key {
	case "tool_call":
		_, stop := one(skipSpace(text, j+1), "arguments")
		return calls, stop
	case "tool_calls":
		return calls, list(j+1, "arguments")
	}
	return nil, end
}

// head is what a call object gives before its arguments' value.
type head struct {
	name, id string
	argKey   string
	argsAt   int // where the arguments' '{' is
}

// callHead reads the keys of the call object at text[i] up to the
// arguments' value: string values under other keys, then "arguments" or
// "parameters" with an object value. It returns done once that object
// opens, incomplete when the text ends before, malformed for any other
// layout (the call is then not streamed, only parsed whole).
func callHead(text string, i int) (head, status) {
	var h head
	if i >= len(text) {
		return h, incomplete
	}
	if text[i] != '{' {
		return h, malformed
	}
	seen := map[string]bool{}
	j := i + 1
	for {
		j = skipSpace(text, j)
		if j >= len(text) {
			return h, incomplete
		}
		kend, st := scanString(text, j)
		if st != done {
			return h, st
		}
		var key string
		if json.Unmarshal([]byte(text[j:kend]), &key) != nil || seen[key] {
			return h, malformed
		}
		seen[key] = true
		j = skipSpace(text, kend)
		if j >= len(text) {
			return h, incomplete
		}
		if text[j] != ':' {
			return h, malformed
		}
		j = skipSpace(text, j+1)
		if j >= len(text) {
			return h, incomplete
		}
		if key == "arguments" || key == "parameters" {
			if text[j] != '{' || h.name == "" {
				return h, malformed
			}
			h.argKey, h.argsAt = key, j
			return h, done
		}
		vend, st := scanString(text, j)
		if st != done {
			return h, st
		}
		var v string
		if json.Unmarshal([]byte(text[j:vend]), &v) != nil {
			return h, malformed
		}
		switch key {
		case "name":
			h.name = v
		case "id":
			h.id = v
		}
		j = skipSpace(text, vend)
		if j >= len(text) {
			return h, incomplete
		}
		if text[j] != ',' {
			return h, malformed
		}
		j++
	}
}

// scanString reads the JSON string at text[i]: done with its end,
// incomplete when the text ends inside it, malformed (with the offset of
// the bad byte) when it is not a string.
func scanString(text string, i int) (int, status) {
	if i >= len(text) {
		return i, incomplete
	}
	if text[i] != '"' {
		return i, malformed
	}
	for j := i + 1; j < len(text); j++ {
		switch c := text[j]; {
		case c == '"':
			return j + 1, done
		case c < 0x20:
			return j, malformed
		case c == '\\':
			j++
			if j >= len(text) {
				return len(text), incomplete
			}
			switch text[j] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				for k := 1; k <= 4; k++ {
					if j+k >= len(text) {
						return len(text), incomplete
					}
					if !isHex(text[j+k]) {
						return j + k, malformed
					}
				}
				j += 4
			default:
				return j, malformed
			}
		}
	}
	return len(text), incomplete
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// scanNumber reads the JSON number at text[i]; a number the text ends
// in is incomplete (more digits may follow).
func scanNumber(text string, i int) (int, status) {
	j := i
	if text[j] == '-' {
		j++
	}
	digits := func(k int) (int, status) {
		if k >= len(text) {
			return k, incomplete
		}
		if !isDigit(text[k]) {
			return k, malformed
		}
		for k < len(text) && isDigit(text[k]) {
			k++
		}
		return k, done
	}
	if j < len(text) && text[j] == '0' {
		j++
	} else {
		var st status
		if j, st = digits(j); st != done {
			return j, st
		}
	}
	if j < len(text) && text[j] == '.' {
		var st status
		if j, st = digits(j + 1); st != done {
			return j, st
		}
	}
	if j < len(text) && (text[j] == 'e' || text[j] == 'E') {
		j++
		if j < len(text) && (text[j] == '+' || text[j] == '-') {
			j++
		}
		var st status
		if j, st = digits(j); st != done {
			return j, st
		}
	}
	if j >= len(text) {
		return j, incomplete
	}
	return j, done
}

// scanValue reads the JSON value at text[i]: done with its end,
// incomplete (len(text)) when the text ends inside it, malformed with the
// offset of the first byte no JSON text continues with. Everything
// before that offset is a valid prefix of a JSON value.
func scanValue(text string, i int) (int, status) {
	var stack []byte // the open containers, '{' or '['
	const (
		expectValue        = iota
		expectValueOrClose // after '['
		expectKeyOrClose   // after '{'
		expectKey          // after ',' in an object
		expectColon
		expectCommaOrClose
	)
	state := expectValue
	for i < len(text) {
		c := text[i]
		if strings.IndexByte(spaces, c) >= 0 {
			i++
			continue
		}
		switch state {
		case expectValue, expectValueOrClose:
			if state == expectValueOrClose && c == ']' {
				stack = stack[:len(stack)-1]
				i++
				break
			}
			switch {
			case c == '{':
				stack = append(stack, '{')
				state = expectKeyOrClose
				i++
				continue
			case c == '[':
				stack = append(stack, '[')
				state = expectValueOrClose
				i++
				continue
			case c == '"':
				j, st := scanString(text, i)
				if st != done {
					return j, st
				}
				i = j
			case c == '-' || isDigit(c):
				j, st := scanNumber(text, i)
				if st == malformed || st == incomplete && len(stack) > 0 {
					return j, st
				}
				if st == incomplete {
					return j, done // a top-level number the text ends with
				}
				i = j
			default:
				lit := ""
				switch c {
				case 't':
					lit = "true"
				case 'f':
					lit = "false"
				case 'n':
					lit = "null"
				default:
					return i, malformed
				}
				for k := 0; k < len(lit); k++ {
					if i+k >= len(text) {
						return len(text), incomplete
					}
					if text[i+k] != lit[k] {
						return i + k, malformed
					}
				}
				i += len(lit)
			}
		case expectKeyOrClose, expectKey:
			if state == expectKeyOrClose && c == '}' {
				stack = stack[:len(stack)-1]
				i++
				break
			}
			j, st := scanString(text, i)
			if st != done {
				return j, st
			}
			i, state = j, expectColon
			continue
		case expectColon:
			if c != ':' {
				return i, malformed
			}
			i, state = i+1, expectValue
			continue
		case expectCommaOrClose:
			top := stack[len(stack)-1]
			switch {
			case c == ',' && top == '{':
				i, state = i+1, expectKey
				continue
			case c == ',':
				i, state = i+1, expectValue
				continue
			case c == '}' && top == '{', c == ']' && top == '[':
				stack = stack[:len(stack)-1]
				i++
			default:
				return i, malformed
			}
		}
		// A value ended.
		if len(stack) == 0 {
			return i, done
		}
		state = expectCommaOrClose
	}
	return len(text), incomplete
}

// compact drops the white space outside strings of a valid JSON prefix:
// json.Compact's output, byte for byte, for a whole value.
func compact(s string) string {
	var b strings.Builder
	in, esc := false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case esc:
			esc = false
		case in && c == '\\':
			esc = true
		case c == '"':
			in = !in
		case !in && strings.IndexByte(spaces, c) >= 0:
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// runeSafe is s without a UTF-8 sequence it may end inside of.
func runeSafe(s string) string {
	for k := 1; k <= utf8.UTFMax && k <= len(s); k++ {
		c := s[len(s)-k]
		if c < utf8.RuneSelf {
			return s // ASCII ends every sequence before it
		}
		if utf8.RuneStart(c) {
			if !utf8.FullRuneInString(s[len(s)-k:]) {
				return s[:len(s)-k]
			}
			return s
		}
	}
	return s
}
