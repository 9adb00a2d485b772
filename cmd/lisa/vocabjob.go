package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"unicode/utf8"

	"github.com/lisa-llm/lisa/gguf"
)

// The vocabulary of `lisa gguf synth --vocab` and `lisa bench --synthetic
// --vocab` is parsed in the worker like any model; the worker cannot write
// the synthetic model (it has no writable file), so it returns the
// tokenizer.* pairs, which this side checks and rebuilds.

// maxVocabReply bounds the vocab job's reply: the largest vocabularies
// (about 260k tokens with merges and scores) take tens of MiB as JSON.
const maxVocabReply = 512 << 20

// maxVocabKVs bounds the tokenizer.* pairs accepted back.
const maxVocabKVs = 1024

// vocabKV is one tokenizer.* pair as the vocab job writes it: a scalar or
// array of numbers as the bits of each value (Bits), a string or array of
// strings as bytes (Strs: JSON strings would not keep invalid UTF-8).
type vocabKV struct {
	Key  string   `json:"key"`
	Type uint32   `json:"type"`
	Elem uint32   `json:"elem,omitempty"`
	Bits []uint64 `json:"bits,omitempty"`
	Strs [][]byte `json:"strs,omitempty"`
}

// vocabJob parses the vocabulary file and writes its tokenizer.* pairs
// as a JSON array of vocabKV.
func vocabJob(env *jobEnv) error {
	f, err := env.open()
	if err != nil {
		return err
	}
	if err := env.serving(); err != nil {
		return err
	}
	var out []vocabKV
	for _, kv := range f.KV {
		if !strings.HasPrefix(kv.Key, "tokenizer.") {
			continue
		}
		e, err := encodeVocabKV(kv)
		if err != nil {
			return err
		}
		out = append(out, e)
	}
	return json.NewEncoder(env.out).Encode(out)
}

// encodeVocabKV returns kv as a vocabKV.
func encodeVocabKV(kv gguf.KV) (vocabKV, error) {
	if !utf8.ValidString(kv.Key) {
		return vocabKV{}, fmt.Errorf("key %q is not UTF-8", kv.Key)
	}
	v := kv.Value
	e := vocabKV{Key: kv.Key, Type: uint32(v.Type())}
	add := func(x gguf.Value) error {
		if x.Type() == gguf.TypeString {
			s, _ := x.Str()
			e.Strs = append(e.Strs, []byte(s))
			return nil
		}
		b, ok := scalarBits(x)
		if !ok {
			return fmt.Errorf("key %s: a %s cannot be copied", kv.Key, x.Type())
		}
		e.Bits = append(e.Bits, b)
		return nil
	}
	if v.Type() != gguf.TypeArray {
		return e, add(v)
	}
	e.Elem = uint32(v.ArrayType())
	for i := range v.Len() {
		x, _ := v.Elem(i)
		if err := add(x); err != nil {
			return vocabKV{}, err
		}
	}
	return e, nil
}

// scalarBits returns the bits of a number or bool, as the reader keeps
// them: integers two's complement, floats IEEE.
func scalarBits(x gguf.Value) (uint64, bool) {
	switch x.Type() {
	case gguf.TypeUint8, gguf.TypeUint16, gguf.TypeUint32, gguf.TypeUint64:
		return x.Uint64()
	case gguf.TypeInt8, gguf.TypeInt16, gguf.TypeInt32, gguf.TypeInt64:
		n, ok := x.Int64()
		return uint64(n), ok
	case gguf.TypeFloat32:
		f, ok := x.Float64()
		return uint64(math.Float32bits(float32(f))), ok
	case gguf.TypeFloat64:
		f, ok := x.Float64()
		return math.Float64bits(f), ok
	case gguf.TypeBool:
		b, ok := x.Bool()
		if b {
			return 1, ok
		}
		return 0, ok
	}
	return 0, false
}

// scalarValue is the inverse of scalarBits; ok is false for a type that
// is not a number or bool, or bits out of the type's range.
func scalarValue(t gguf.ValueType, b uint64) (gguf.Value, bool) {
	fits := func(bits int, signed bool) bool {
		if signed {
			n := int64(b)
			return n == n<<(64-bits)>>(64-bits)
		}
		return b>>bits == 0
	}
	switch t {
	case gguf.TypeUint8:
		return gguf.Uint8Value(uint8(b)), fits(8, false)
	case gguf.TypeInt8:
		return gguf.Int8Value(int8(b)), fits(8, true)
	case gguf.TypeUint16:
		return gguf.Uint16Value(uint16(b)), fits(16, false)
	case gguf.TypeInt16:
		return gguf.Int16Value(int16(b)), fits(16, true)
	case gguf.TypeUint32:
		return gguf.Uint32Value(uint32(b)), fits(32, false)
	case gguf.TypeInt32:
		return gguf.Int32Value(int32(b)), fits(32, true)
	case gguf.TypeUint64:
		return gguf.Uint64Value(b), true
	case gguf.TypeInt64:
		return gguf.Int64Value(int64(b)), true
	case gguf.TypeFloat32:
		return gguf.Float32Value(math.Float32frombits(uint32(b))), fits(32, false)
	case gguf.TypeFloat64:
		return gguf.Float64Value(math.Float64frombits(b)), true
	case gguf.TypeBool:
		return gguf.BoolValue(b == 1), b <= 1
	}
	return gguf.Value{}, false
}

// decodeVocabKVs reads the vocab job's reply: only tokenizer.* keys, each
// once, scalars or flat arrays of the types the reader knows, with exactly
// the values their type holds.
func decodeVocabKVs(r io.Reader) ([]gguf.KV, error) {
	var in []vocabKV
	dec := json.NewDecoder(r)
	if err := dec.Decode(&in); err != nil {
		return nil, fmt.Errorf("vocabulary reply: %w", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("vocabulary reply: data after the pairs")
	}
	if len(in) > maxVocabKVs {
		return nil, fmt.Errorf("vocabulary reply: %d pairs, over %d", len(in), maxVocabKVs)
	}
	seen := map[string]bool{}
	kvs := make([]gguf.KV, 0, len(in))
	for i, e := range in {
		if !strings.HasPrefix(e.Key, "tokenizer.") || seen[e.Key] {
			return nil, fmt.Errorf("vocabulary reply: pair %d: key %q is not a new tokenizer.* key", i, e.Key)
		}
		seen[e.Key] = true
		v, err := e.value()
		if err != nil {
			return nil, fmt.Errorf("vocabulary reply: key %s: %w", e.Key, err)
		}
		kvs = append(kvs, gguf.KV{Key: e.Key, Value: v})
	}
	return kvs, nil
}

// value rebuilds the value e holds.
func (e vocabKV) value() (gguf.Value, error) {
	t := gguf.ValueType(e.Type)
	n := len(e.Bits) + len(e.Strs)
	switch {
	case t == gguf.TypeString && len(e.Bits) == 0 && len(e.Strs) == 1 && e.Elem == 0:
		return gguf.StringValue(string(e.Strs[0])), nil
	case t == gguf.TypeArray && gguf.ValueType(e.Elem) == gguf.TypeString && len(e.Bits) == 0:
		a := make([]string, len(e.Strs))
		for i, s := range e.Strs {
			a[i] = string(s)
		}
		return gguf.StringsValue(a), nil
	case t == gguf.TypeArray && gguf.ValueType(e.Elem) != gguf.TypeArray && len(e.Strs) == 0:
		elems := make([]gguf.Value, len(e.Bits))
		for i, b := range e.Bits {
			x, ok := scalarValue(gguf.ValueType(e.Elem), b)
			if !ok {
				return gguf.Value{}, fmt.Errorf("element %d: %#x is not a %s", i, b, gguf.ValueType(e.Elem))
			}
			elems[i] = x
		}
		return gguf.ArrayValue(gguf.ValueType(e.Elem), elems...), nil
	case n == 1 && len(e.Bits) == 1 && e.Elem == 0:
		x, ok := scalarValue(t, e.Bits[0])
		if !ok {
			return gguf.Value{}, fmt.Errorf("%#x is not a %s", e.Bits[0], t)
		}
		return x, nil
	}
	return gguf.Value{}, fmt.Errorf("type %s (element %s) with %d numbers and %d strings is not a value lisa copies",
		t, gguf.ValueType(e.Elem), len(e.Bits), len(e.Strs))
}

// loadVocabKVs parses the vocabulary file at path (in a sandboxed worker
// unless noSandbox) and returns its tokenizer.* pairs.
func loadVocabKVs(cmd, path string, noSandbox bool, stderr io.Writer) ([]gguf.KV, error) {
	var buf bytes.Buffer
	err := runJob(jobCall{cmd: cmd, job: "vocab", model: path, noSandbox: noSandbox,
		limit: func(int64) int64 { return maxVocabReply }}, &buf, stderr)
	if err != nil {
		return nil, err
	}
	return decodeVocabKVs(&buf)
}
