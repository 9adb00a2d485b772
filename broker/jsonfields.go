package broker

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"strconv"
	"unicode/utf8"
)

// field is one key of a JSON object with its raw value.
type field struct {
	name string
	raw  json.RawMessage
}

// isNull reports whether raw is the JSON null, which every optional field
// treats as absent.
func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

// objectFields splits one JSON object into its fields, in order. It
// refuses anything but an object, duplicate keys and trailing data. param
// names the object in errors ("" for the request body).
func objectFields(data []byte, param string) ([]field, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return nil, syntaxError(param, dec, err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, invalid(param, "%s must be a JSON object", describe(param))
	}
	var fields []field
	seen := make(map[string]bool)
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, syntaxError(param, dec, err)
		}
		name, _ := tok.(string)
		if !utf8.ValidString(name) {
			return nil, invalid(param, "a key of %s is not valid UTF-8", describe(param))
		}
		full := join(param, name)
		if seen[name] {
			return nil, invalid(full, "duplicate field %q", full)
		}
		seen[name] = true
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, syntaxError(full, dec, err)
		}
		fields = append(fields, field{name, raw})
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return nil, syntaxError(param, dec, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, invalid(param, "data after the JSON object at byte %d", dec.InputOffset())
	}
	return fields, nil
}

func describe(param string) string {
	if param == "" {
		return "the request body"
	}
	return param
}

func join(parent, name string) string {
	if parent == "" {
		return name
	}
	return parent + "." + name
}

func syntaxError(param string, dec *json.Decoder, err error) error {
	return invalidCode(param, "invalid_json", "invalid JSON at byte %d: %v", dec.InputOffset(), err)
}

// arrayItems splits a JSON array into its raw items.
func arrayItems(raw json.RawMessage, param string) ([]json.RawMessage, error) {
	if len(raw) == 0 || raw[0] != '[' {
		return nil, invalid(param, "%s must be an array", param)
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, invalid(param, "%s must be an array: %v", param, err)
	}
	return items, nil
}

func decString(raw json.RawMessage, param string) (string, error) {
	if len(raw) == 0 || raw[0] != '"' {
		return "", invalid(param, "%s must be a string", param)
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", invalid(param, "%s must be a string: %v", param, err)
	}
	if !utf8.Valid(raw) {
		return "", invalid(param, "%s is not valid UTF-8", param)
	}
	return s, nil
}

func decBool(raw json.RawMessage, param string) (bool, error) {
	switch string(raw) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, invalid(param, "%s must be true or false", param)
}

// decInt parses an integer in [lo, hi]; fractions and exponents are refused.
func decInt(raw json.RawMessage, param string, lo, hi int64) (int64, error) {
	n, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil {
		return 0, invalid(param, "%s must be an integer", param)
	}
	if n < lo || n > hi {
		return 0, invalid(param, "%s must be between %d and %d, got %d", param, lo, hi, n)
	}
	return n, nil
}

// decFloat parses a number in [lo, hi].
func decFloat(raw json.RawMessage, param string, lo, hi float64) (float32, error) {
	if len(raw) == 0 || !(raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9') {
		return 0, invalid(param, "%s must be a number", param)
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, invalid(param, "%s must be a finite number", param)
	}
	if f < lo || f > hi {
		return 0, invalid(param, "%s must be between %g and %g, got %g", param, lo, hi, f)
	}
	return float32(f), nil
}
