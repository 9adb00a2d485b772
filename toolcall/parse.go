package toolcall

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Format is a family's tool-call syntax.
type Format string

// The formats Parse knows.
const (
	Hermes  Format = "hermes"
	Mistral Format = "mistral"
	Llama3  Format = "llama3"
	Generic Format = "generic"
)

// Limits on what a model's output may hold.
const (
	// MaxOutput is the largest output Parse and Stream read, in bytes.
	MaxOutput = 1 << 20
	// MaxCalls is the largest number of calls in one output.
	MaxCalls = 128
	// MaxName is the longest function name, in bytes (OpenAI: 64).
	MaxName = 64
)

// Errors in Result.Err (wrapped in *Error) and from Stream.Write.
var (
	ErrMalformed = errors.New("toolcall: malformed tool call")
	ErrTooLarge  = errors.New("toolcall: output too large")
)

// Error says where in the output a call was rejected and why; the text
// from Offset on is content.
type Error struct {
	Offset int
	Reason string
}

func (e *Error) Error() string {
	return fmt.Sprintf("toolcall: malformed tool call at byte %d: %s", e.Offset, e.Reason)
}

// Unwrap returns ErrMalformed.
func (e *Error) Unwrap() error { return ErrMalformed }

// Call is one function call.
type Call struct {
	// ID is the call's id, generated unless the model wrote one.
	ID string
	// Name is the function's name.
	Name string
	// Arguments is the arguments object as compact JSON text.
	Arguments string
}

// Result is a parsed output.
type Result struct {
	// Content is the text that is not a call.
	Content string
	// Calls are the calls, in order.
	Calls []Call
	// Reasoning is the reply's reasoning (ReplyStream; "" from Parse and
	// Stream).
	Reasoning string
	// Err is why a call was rejected (its text is then in Content), or
	// nil.
	Err error
}

// FinishReason is "tool_calls" when there are calls, else "stop" (the
// caller keeps "length" when the token budget ended the output).
func (r Result) FinishReason() string {
	if len(r.Calls) > 0 {
		return "tool_calls"
	}
	return "stop"
}

// Options are what the parser checks calls against.
type Options struct {
	// Tools are the names of the functions offered; a call to another
	// name is not a call. Empty accepts any valid name.
	Tools []string
	// MaxCalls is the largest number of calls accepted (1 when the
	// request said parallel_tool_calls: false); 0 means MaxCalls.
	MaxCalls int
	// NewID makes call ids; nil makes random "call_…" ids.
	NewID func() string
}

// Parse finds the calls in a whole output.
func Parse(f Format, output string, o Options) (Result, error) {
	if err := check(f, len(output)); err != nil {
		return Result{}, err
	}
	p := newParser(f, o)
	r := p.run(output, true)
	return r, nil
}

func check(f Format, n int) error {
	switch f {
	case Hermes, Mistral, Llama3, Generic:
	default:
		return fmt.Errorf("toolcall: unknown format %q", f)
	}
	if n > MaxOutput {
		return fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, n, MaxOutput)
	}
	return nil
}

// parser holds what a run needs; ids are generated once per call index
// so that re-running on a longer text keeps them.
type parser struct {
	f   Format
	o   Options
	ids []string
}

func newParser(f Format, o Options) *parser {
	if o.MaxCalls <= 0 || o.MaxCalls > MaxCalls {
		o.MaxCalls = MaxCalls
	}
	return &parser{f: f, o: o}
}

// id returns the id of call i: the model's when plausible, else a
// generated one (the same on every run).
func (p *parser) id(i int, model string) string {
	if validID(model) {
		return model
	}
	for len(p.ids) <= i {
		// NewID when given: crypto/rand, which randomID uses, is what
		// the worker's sandbox cannot run.
		var id string
		if p.o.NewID != nil {
			id = p.o.NewID()
		} else {
			id = randomID()
		}
		if p.f == Mistral {
			id = nineID(id)
		}
		p.ids = append(p.ids, id)
	}
	return p.ids[i]
}

// nineID makes a generated id one Mistral's template takes back in the
// history (nine letters and digits): the last nine of id's, padded with
// zeros. Mistral models write their id after the arguments, too late for
// a streamed call's first piece, so it is generated.
func nineID(id string) string {
	b := []byte("000000000")
	k := len(b)
	for i := len(id) - 1; i >= 0 && k > 0; i-- {
		if c := id[i]; c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' {
			k--
			b[k] = c
		}
	}
	return string(b)
}

func validID(s string) bool {
	if len(s) < 4 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

const idAlphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

func randomID() string {
	var b [24]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read does not fail
	for i := range b {
		b[i] = idAlphabet[int(b[i])%len(idAlphabet)]
	}
	return "call_" + string(b[:])
}

// markers are the texts that open calls, per format.
var markers = map[Format][]string{
	Hermes:  {"<tool_call>"},
	Mistral: {"[TOOL_CALLS]"},
	Llama3:  {"<|python_tag|>"},
}

// status of an attempt to read a call.
type status int

const (
	done       status = iota // calls read
	incomplete               // the text ends inside the call
	malformed                // not a call
	notCall                  // a JSON value that is not a call: content
)

// run parses text. With final false the text may continue: the result
// holds only what no continuation can change (content that cannot be
// the start of markup, complete calls).
func (p *parser) run(text string, final bool) Result {
	st := p.start()
	content := p.step(text, final, &st)
	r := Result{Content: content, Calls: st.calls, Err: st.err}
	if p.f == Generic && len(r.Calls) == 0 && r.Err == nil {
		r.Content = genericResponse(r.Content)
	}
	return r
}

// runState is where a parse stands: a checkpoint up to which nothing a
// continuation of the text adds can change the result.
type runState struct {
	pos    int   // bytes of text decided
	bare   bool  // a bare JSON call may open the text at pos
	broken bool  // a call was malformed: the rest is content
	err    error // why
	// calls are the calls found: the first done before pos, then those
	// of the last step past the checkpoint (found again by the next).
	calls []Call
	done  int
	// cpContent is how many bytes of the content step returns lie
	// before pos (step's content starts at the entry checkpoint).
	cpContent int
	// tail is where the markup of the call the text ends inside ends,
	// or -1: a stream reads its committed calls from there.
	tail int
}

func (p *parser) start() runState {
	// Llama 3 and the generic format write a call as a bare JSON object
	// opening the reply.
	return runState{bare: p.f == Llama3 || p.f == Generic, tail: -1}
}

// step parses text from the checkpoint st, moves st to the last
// checkpoint it passes, and returns the content from the entry
// checkpoint on. A run from the start and a run resumed from any
// checkpoint of a shorter text give the same result: a checkpoint is
// only taken where everything before it is decided (after a call, after
// text that is not a call, at the end of content that cannot begin
// markup), so a stream need not re-read what it has decided.
func (p *parser) step(text string, final bool, st *runState) string {
	var content strings.Builder
	st.cpContent, st.tail = 0, -1
	st.calls = st.calls[:st.done]
	checkpoint := func(pos int, bare bool) {
		st.pos, st.bare, st.cpContent, st.done = pos, bare, content.Len(), len(st.calls)
	}
	pos, bare := st.pos, st.bare
	if st.broken {
		content.WriteString(text[pos:])
		checkpoint(len(text), false)
		return content.String()
	}
	for pos < len(text) {
		start, end := p.findMarker(text, pos, bare)
		if start < 0 {
			if final {
				content.WriteString(text[pos:])
				checkpoint(len(text), false)
			} else if e := safeEnd(text, pos, markers[p.f], bare); e > pos {
				content.WriteString(text[pos:e])
				checkpoint(e, false)
			}
			break
		}
		seg := text[pos:start]
		calls, next, status, why := p.readCalls(text, start, end, final)
		if status == incomplete {
			// Only a partial run stops here; what follows is unknown.
			content.WriteString(strings.TrimRight(seg, spaces))
			st.tail = end
			return content.String()
		}
		if status == done && len(st.calls)+len(calls) > p.o.MaxCalls {
			status, why = malformed, fmt.Sprintf("more than %d calls", p.o.MaxCalls)
		}
		if status == malformed || status == notCall {
			// Calls whose arguments began are calls whatever follows
			// (a stream has sent them): they keep what was read, and
			// the rest of the output is content.
			if cs, stop := p.partial(text, end, p.o.MaxCalls-len(st.calls)); len(cs) > 0 {
				content.WriteString(strings.TrimRight(seg, spaces))
				for _, c := range cs {
					st.calls = append(st.calls, Call{ID: p.id(len(st.calls), c.id), Name: c.name, Arguments: c.args})
				}
				if why == "" {
					why = "the call breaks off"
				}
				content.WriteString(text[stop:])
				st.broken, st.err = true, &Error{Offset: stop, Reason: why}
				checkpoint(len(text), false)
				break
			}
		}
		if status == notCall {
			content.WriteString(text[pos:next])
			pos, bare = next, false
			checkpoint(pos, bare)
			continue
		}
		if status == malformed {
			content.WriteString(text[pos:])
			st.broken, st.err = true, &Error{Offset: start, Reason: why}
			checkpoint(len(text), false)
			break
		}
		content.WriteString(strings.TrimRight(seg, spaces))
		for _, c := range calls {
			c.ID = p.id(len(st.calls), c.ID)
			st.calls = append(st.calls, c)
		}
		pos = skipSpace(text, next)
		bare = p.f == Llama3 // Llama 3 may follow a call with another
		if bare && pos < len(text) && text[pos] == ';' {
			pos = skipSpace(text, pos+1)
		}
		if final {
			checkpoint(pos, bare)
		} else if pos < len(text) {
			// White space after a call is dropped, and a ';' may follow
			// it: decided only once something else comes.
			checkpoint(pos, bare)
		}
	}
	return content.String()
}

const spaces = " \t\r\n"

func skipSpace(s string, i int) int {
	for i < len(s) && strings.IndexByte(spaces, s[i]) >= 0 {
		i++
	}
	return i
}

// findMarker returns where the next call starts at or after pos (start,
// including the white space before it) and where its markup ends (end),
// or -1. With bare, a '{' opening the rest (after white space) starts a
// call too.
func (p *parser) findMarker(text string, pos int, bare bool) (int, int) {
	if bare {
		i := skipSpace(text, pos)
		if i < len(text) && text[i] == '{' {
			return pos, i
		}
	}
	best, bestEnd := -1, -1
	for _, m := range markers[p.f] {
		if i := strings.Index(text[pos:], m); i >= 0 && (best < 0 || pos+i < best) {
			best, bestEnd = pos+i, pos+i+len(m)
		}
	}
	if best < 0 {
		return -1, -1
	}
	start := best
	for start > pos && strings.IndexByte(spaces, text[start-1]) >= 0 {
		start--
	}
	return start, bestEnd
}

// safeEnd is how much of text[pos:] is surely content when more text may
// follow: not a tail that could begin a marker, nor the white space
// before such a tail (dropped if a call follows), nor, with bare, white
// space alone (a call may still open the reply).
func safeEnd(text string, pos int, ms []string, bare bool) int {
	end := len(text)
	for _, m := range ms {
		for k := min(len(m)-1, len(text)-pos); k > 0; k-- {
			if strings.HasSuffix(text, m[:k]) {
				end = min(end, len(text)-k)
				break
			}
		}
	}
	for end > pos && strings.IndexByte(spaces, text[end-1]) >= 0 {
		end--
	}
	if bare && end == pos {
		return pos
	}
	return end
}

// readCalls reads the call(s) whose markup spans text[start:end].
func (p *parser) readCalls(text string, start, end int, final bool) ([]Call, int, status, string) {
	switch p.f {
	case Hermes:
		return p.readHermes(text, end, final)
	case Mistral:
		return p.readMistral(text, end, final)
	case Llama3:
		// A bare call's markup ends at its brace; <|python_tag|>'s after
		// the tag.
		if end < len(text) && text[end] == '{' && !strings.HasSuffix(text[:end], "<|python_tag|>") {
			return p.readLlama(text, end, final, true)
		}
		return p.readPythonTag(text, end, final)
	}
	return p.readGeneric(text, end, final)
}

// readJSON reads one JSON value at text[i:] (after white space) that must
// open with one of opens.
func readJSON(text string, i int, opens string, final bool) (json.RawMessage, int, status, string) {
	i = skipSpace(text, i)
	if i == len(text) {
		if final {
			return nil, i, malformed, "the output ends before the call's JSON"
		}
		return nil, i, incomplete, ""
	}
	if strings.IndexByte(opens, text[i]) < 0 {
		return nil, i, malformed, fmt.Sprintf("%q where the call's JSON should start", text[i])
	}
	dec := json.NewDecoder(strings.NewReader(text[i:]))
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			if final {
				return nil, i, malformed, "the output ends inside the call's JSON"
			}
			return nil, i, incomplete, ""
		}
		return nil, i, malformed, "invalid JSON: " + err.Error()
	}
	return raw, i + int(dec.InputOffset()), done, ""
}

// call checks one call object: a name and an arguments object (or a
// string holding one), under key argKey.
func (p *parser) call(raw json.RawMessage, argKey string) (Call, string) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return Call{}, "the call is not a JSON object"
	}
	if dupKeys(raw) {
		return Call{}, "the call repeats a key"
	}
	var name string
	if err := json.Unmarshal(obj["name"], &name); err != nil || name == "" {
		return Call{}, "the call has no name"
	}
	if !validName(name) {
		return Call{}, fmt.Sprintf("bad function name %q", truncate(name))
	}
	if len(p.o.Tools) > 0 && !contains(p.o.Tools, name) {
		return Call{}, fmt.Sprintf("function %q was not offered", name)
	}
	args, ok := obj[argKey]
	if !ok {
		return Call{}, "the call has no " + argKey
	}
	var s string
	if json.Unmarshal(args, &s) == nil {
		args = json.RawMessage(s) // some models write the arguments as a JSON string
	}
	var b bytes.Buffer
	if err := json.Compact(&b, args); err != nil || b.Len() == 0 || b.Bytes()[0] != '{' {
		return Call{}, argKey + " are not a JSON object"
	}
	var id string
	if h, st := callHead(string(raw), 0); st == done {
		// A streamed call's id is sent with its first piece: only an id
		// the model wrote before the arguments can be it.
		id = h.id
	} else {
		_ = json.Unmarshal(obj["id"], &id)
	}
	return Call{ID: id, Name: name, Arguments: b.String()}, ""
}

// dupKeys reports whether the JSON object raw repeats a key (encoding/json
// would keep the last, a stream has read the first).
func dupKeys(raw json.RawMessage) bool {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return false
	}
	seen := map[string]bool{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return false
		}
		k, _ := t.(string)
		if seen[k] {
			return true
		}
		seen[k] = true
		var v json.RawMessage
		if dec.Decode(&v) != nil {
			return false
		}
	}
	return false
}

func truncate(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// validName is OpenAI's rule for function names (letters, digits, _ and
// -, at most 64), with '.' allowed for names such as Llama's built-in
// brave_search.
func validName(s string) bool {
	if s == "" || len(s) > MaxName {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

// readHermes reads {"name", "arguments"} and the closing </tool_call>
// (which may be missing at the end of the output).
func (p *parser) readHermes(text string, i int, final bool) ([]Call, int, status, string) {
	raw, next, st, why := readJSON(text, i, "{", final)
	if st != done {
		return nil, next, st, why
	}
	c, why := p.call(raw, "arguments")
	if why != "" {
		return nil, next, malformed, why
	}
	const closing = "</tool_call>"
	j := skipSpace(text, next)
	switch rest := text[j:]; {
	case strings.HasPrefix(rest, closing):
		next = j + len(closing)
	case strings.HasPrefix(closing, rest):
		// The output ends in white space or a partial closing tag.
		if !final {
			return nil, next, incomplete, ""
		}
		next = len(text)
	}
	return []Call{c}, next, done, ""
}

// readMistral reads the array after [TOOL_CALLS].
func (p *parser) readMistral(text string, i int, final bool) ([]Call, int, status, string) {
	raw, next, st, why := readJSON(text, i, "[", final)
	if st != done {
		return nil, next, st, why
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil || len(items) == 0 {
		return nil, next, malformed, "[TOOL_CALLS] is not followed by an array of calls"
	}
	calls := make([]Call, 0, len(items))
	for _, it := range items {
		c, why := p.call(it, "arguments")
		if why != "" {
			return nil, next, malformed, why
		}
		calls = append(calls, c)
	}
	return calls, next, done, ""
}

// readLlama reads {"name", "parameters"} (with an optional "type":
// "function"); when bare, a JSON object that is not a call is content.
func (p *parser) readLlama(text string, i int, final, bare bool) ([]Call, int, status, string) {
	raw, next, st, why := readJSON(text, i, "{", final)
	if st != done {
		if bare && st == malformed {
			// A reply that starts with '{' but is not JSON is text.
			return nil, len(text), notCall, ""
		}
		return nil, next, st, why
	}
	var obj map[string]json.RawMessage
	_ = json.Unmarshal(raw, &obj)
	_, hasName := obj["name"]
	_, hasParams := obj["parameters"]
	if bare && (!hasName || !hasParams) {
		return nil, next, notCall, ""
	}
	c, why := p.call(raw, "parameters")
	if why != "" {
		return nil, next, malformed, why
	}
	c.ID = ""
	return []Call{c}, next, done, ""
}

// readPythonTag reads what follows <|python_tag|>: a JSON call, or a
// built-in call name.call(key=value, ...) up to the end of the output.
func (p *parser) readPythonTag(text string, i int, final bool) ([]Call, int, status, string) {
	j := skipSpace(text, i)
	if j < len(text) && text[j] == '{' {
		return p.readLlama(text, j, final, false)
	}
	if !final {
		return nil, i, incomplete, ""
	}
	rest := strings.TrimRight(text[j:], spaces)
	dot := strings.Index(rest, ".call(")
	if dot <= 0 || !strings.HasSuffix(rest, ")") {
		return nil, i, malformed, "<|python_tag|> is not followed by a call"
	}
	name := rest[:dot]
	args, err := builtinArgs(rest[dot+len(".call(") : len(rest)-1])
	if err != "" {
		return nil, i, malformed, err
	}
	c, why := p.call(json.RawMessage(fmt.Sprintf(`{"name":%q,"parameters":%s}`, name, args)), "parameters")
	if why != "" {
		return nil, i, malformed, why
	}
	return []Call{c}, len(text), done, ""
}

// builtinArgs turns key=JSON, key=JSON into a JSON object.
func builtinArgs(s string) (string, string) {
	var b strings.Builder
	b.WriteByte('{')
	for n := 0; strings.TrimSpace(s) != ""; n++ {
		eq := strings.IndexByte(s, '=')
		if eq <= 0 {
			return "", "built-in call arguments are not key=value"
		}
		key := strings.TrimSpace(s[:eq])
		if !validName(key) {
			return "", fmt.Sprintf("bad argument name %q", truncate(key))
		}
		dec := json.NewDecoder(strings.NewReader(s[eq+1:]))
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return "", "built-in call argument " + key + ": " + err.Error()
		}
		if n > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%q:%s", key, v)
		s = strings.TrimLeft(s[eq+1+int(dec.InputOffset()):], spaces)
		if s != "" {
			if s[0] != ',' {
				return "", "built-in call arguments are not separated by commas"
			}
			s = s[1:]
		}
	}
	b.WriteByte('}')
	return b.String(), ""
}

// readGeneric reads the generic format's object: a call, calls, or a
// response (returned as notCall; run unwraps the response text).
func (p *parser) readGeneric(text string, i int, final bool) ([]Call, int, status, string) {
	raw, next, st, _ := readJSON(text, i, "{", final)
	if st == incomplete {
		return nil, next, st, ""
	}
	if st != done {
		return nil, len(text), notCall, ""
	}
	var obj map[string]json.RawMessage
	_ = json.Unmarshal(raw, &obj)
	_, hasOne := obj["tool_call"]
	_, hasMany := obj["tool_calls"]
	if hasOne && hasMany || (hasOne || hasMany) && dupKeys(raw) {
		return nil, next, malformed, "both tool_call and tool_calls, or a repeated key"
	}
	if one, ok := obj["tool_call"]; ok {
		c, why := p.call(one, "arguments")
		if why != "" {
			return nil, next, malformed, why
		}
		c.ID = ""
		return []Call{c}, next, done, ""
	}
	if many, ok := obj["tool_calls"]; ok {
		var items []json.RawMessage
		if err := json.Unmarshal(many, &items); err != nil || len(items) == 0 {
			return nil, next, malformed, "tool_calls is not a list of calls"
		}
		calls := make([]Call, 0, len(items))
		for _, it := range items {
			c, why := p.call(it, "arguments")
			if why != "" {
				return nil, next, malformed, why
			}
			calls = append(calls, c)
		}
		return calls, next, done, ""
	}
	return nil, next, notCall, ""
}

// genericResponse returns the text of a generic {"response": ...} reply
// (a non-string response as indented JSON, as llama.cpp), or s itself.
func genericResponse(s string) string {
	var obj map[string]json.RawMessage
	if json.Unmarshal([]byte(s), &obj) != nil {
		return s
	}
	resp, ok := obj["response"]
	if !ok {
		return s
	}
	var text string
	if json.Unmarshal(resp, &text) == nil {
		return text
	}
	var b bytes.Buffer
	if json.Indent(&b, resp, "", "  ") != nil {
		return s
	}
	return b.String()
}
