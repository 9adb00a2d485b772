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
	argsAt   int    // where the arguments begin in the text
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
		c := partialCall{name: h.name, id: h.id, args: compact(text[h.argsAt:aend]), argsAt: h.argsAt, complete: ast == done}
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

// scanValue reads the JSON value at text[i]: done with its end,
// incomplete (len(text)) when the text ends inside it, malformed with the
// offset of the first byte no JSON text continues with. Everything
// before that offset is a valid prefix of a JSON value.
func scanValue(text string, i int) (int, status) {
	var sc jsonScan
	return sc.feed(text, i)
}

// maxDepth is encoding/json's nesting limit: deeper is malformed to both.
const maxDepth = 10000

// The states of a jsonScan between two bytes.
const (
	expectValue        = iota
	expectValueOrClose // after '['
	expectKeyOrClose   // after '{'
	expectKey          // after ',' in an object
	expectColon
	expectCommaOrClose
	inString  // key tells whether it is a key
	inEscape  // after '\\'
	inHex     // hex digits of \u left: hex
	inNumber  // num is where in the number grammar
	inLiteral // lit[litAt:] is left to read
)

// The places in a number.
const (
	numMinus = iota // after '-'
	numZero         // after a leading 0
	numInt          // in the integer digits
	numDot          // after '.'
	numFrac         // in the fraction digits
	numE            // after 'e'
	numESign        // after the exponent's sign
	numExp          // in the exponent digits
)

// jsonScan reads one JSON value byte by byte and can resume where the
// text ended, so that a stream reads a growing call's arguments once.
type jsonScan struct {
	stack []byte // the open containers, '{' or '['
	state int
	key   bool // the string read is an object key
	hex   int
	num   int
	lit   string
	litAt int
	begun bool
}

// feed reads text from i on (continuing what earlier calls read of the
// same value): done with the value's end, incomplete when the text ends
// first (feed may be called again with more text from len(text)), or
// malformed with the offset of the offending byte.
func (s *jsonScan) feed(text string, i int) (int, status) {
	for ; i < len(text); i++ {
		c := text[i]
		switch s.state {
		case inString:
			switch {
			case c == '"':
				if s.key {
					s.state = expectColon
					continue
				}
				if s.ended() {
					return i + 1, done
				}
			case c == '\\':
				s.state = inEscape
			case c < 0x20:
				return i, malformed
			}
			continue
		case inEscape:
			switch c {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.state = inString
			case 'u':
				s.state, s.hex = inHex, 4
			default:
				return i, malformed
			}
			continue
		case inHex:
			if !isHex(c) {
				return i, malformed
			}
			if s.hex--; s.hex == 0 {
				s.state = inString
			}
			continue
		case inLiteral:
			if c != s.lit[s.litAt] {
				return i, malformed
			}
			if s.litAt++; s.litAt == len(s.lit) && s.ended() {
				return i + 1, done
			}
			continue
		case inNumber:
			if s.number(c) {
				continue
			}
			if s.num == numMinus || s.num == numDot || s.num == numE || s.num == numESign {
				return i, malformed
			}
			// The number ended before c: c is read after the value.
			if s.ended() {
				return i, done
			}
		}
		if strings.IndexByte(spaces, c) >= 0 {
			continue
		}
		switch s.state {
		case expectValue, expectValueOrClose:
			if s.state == expectValueOrClose && c == ']' {
				s.stack = s.stack[:len(s.stack)-1]
				if s.ended() {
					return i + 1, done
				}
				continue
			}
			if s.begun && len(s.stack) == 0 {
				return i, malformed
			}
			s.begun = true
			switch {
			case c == '{' || c == '[':
				if len(s.stack) >= maxDepth {
					return i, malformed
				}
				s.stack = append(s.stack, c)
				s.state = expectKeyOrClose
				if c == '[' {
					s.state = expectValueOrClose
				}
			case c == '"':
				s.state, s.key = inString, false
			case c == '-':
				s.state, s.num = inNumber, numMinus
			case c == '0':
				s.state, s.num = inNumber, numZero
			case isDigit(c):
				s.state, s.num = inNumber, numInt
			case c == 't':
				s.state, s.lit, s.litAt = inLiteral, "true", 1
			case c == 'f':
				s.state, s.lit, s.litAt = inLiteral, "false", 1
			case c == 'n':
				s.state, s.lit, s.litAt = inLiteral, "null", 1
			default:
				return i, malformed
			}
		case expectKeyOrClose, expectKey:
			switch {
			case c == '}' && s.state == expectKeyOrClose:
				s.stack = s.stack[:len(s.stack)-1]
				if s.ended() {
					return i + 1, done
				}
			case c == '"':
				s.state, s.key = inString, true
			default:
				return i, malformed
			}
		case expectColon:
			if c != ':' {
				return i, malformed
			}
			s.state = expectValue
		case expectCommaOrClose:
			top := s.stack[len(s.stack)-1]
			switch {
			case c == ',' && top == '{':
				s.state = expectKey
			case c == ',':
				s.state = expectValue
			case c == '}' && top == '{', c == ']' && top == '[':
				s.stack = s.stack[:len(s.stack)-1]
				if s.ended() {
					return i + 1, done
				}
			default:
				return i, malformed
			}
		}
	}
	if s.state == inNumber && len(s.stack) == 0 && s.num != numMinus && s.num != numDot && s.num != numE && s.num != numESign {
		return len(text), done // a top-level number the text ends with
	}
	return len(text), incomplete
}

// ended moves past a value that just ended and reports whether it was
// the whole value.
func (s *jsonScan) ended() bool {
	if len(s.stack) == 0 {
		return true
	}
	s.state = expectCommaOrClose
	return false
}

// number reads c as part of a number and reports whether it was.
func (s *jsonScan) number(c byte) bool {
	digit := isDigit(c)
	switch s.num {
	case numMinus:
		if c == '0' {
			s.num = numZero
		} else if digit {
			s.num = numInt
		}
		return digit
	case numZero, numInt:
		switch {
		case digit && s.num == numInt:
		case c == '.':
			s.num = numDot
		case c == 'e' || c == 'E':
			s.num = numE
		default:
			return false
		}
		return true
	case numDot, numFrac:
		switch {
		case digit:
			s.num = numFrac
		case c == 'e' || c == 'E':
			if s.num == numDot {
				return false
			}
			s.num = numE
		default:
			return false
		}
		return true
	case numE:
		switch {
		case digit:
			s.num = numExp
		case c == '+' || c == '-':
			s.num = numESign
		default:
			return false
		}
		return true
	}
	// numESign, numExp
	if digit {
		s.num = numExp
	}
	return digit
}

// compact drops the white space outside strings of a valid JSON prefix:
// json.Compact's output, byte for byte, for a whole value.
func compact(s string) string {
	var b strings.Builder
	var c compactor
	c.add(&b, s)
	return b.String()
}

// compactor compacts a valid JSON prefix given in pieces.
type compactor struct {
	in, esc bool // inside a string; after its backslash
}

func (c *compactor) add(b *strings.Builder, s string) {
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case c.esc:
			c.esc = false
		case c.in && ch == '\\':
			c.esc = true
		case ch == '"':
			c.in = !c.in
		case !c.in && strings.IndexByte(spaces, ch) >= 0:
			continue
		}
		b.WriteByte(ch)
	}
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
