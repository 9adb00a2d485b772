package broker

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/lisa-llm/lisa/gen"
)

// OpenAI's bounds on metadata: 16 pairs, keys of 64 and values of 512
// characters.
const (
	maxMetadata      = 16
	maxMetadataKey   = 64
	maxMetadataValue = 512
	maxIgnoredString = 1 << 10 // user, prompt_cache_key, safety_identifier
)

// decodeTools decodes OpenAI's tools: [{"type":"function","function":{...}}].
func decodeTools(raw json.RawMessage, param string) ([]gen.Tool, error) {
	items, err := arrayItems(raw, param)
	if err != nil {
		return nil, err
	}
	if len(items) > gen.MaxTools {
		return nil, invalid(param, "%d tools, at most %d are allowed", len(items), gen.MaxTools)
	}
	tools := make([]gen.Tool, 0, len(items))
	for i, it := range items {
		p := fmt.Sprintf("%s[%d]", param, i)
		fields, err := objectFields(it, p)
		if err != nil {
			return nil, err
		}
		var tool *gen.Tool
		for _, f := range fields {
			switch f.name {
			case "type":
				if err := expectString(f.raw, p+".type", "function"); err != nil {
					return nil, err
				}
			case "function":
				t, err := decodeFunction(f.raw, p+".function")
				if err != nil {
					return nil, err
				}
				tool = &t
			default:
				return nil, unknownField(p + "." + f.name)
			}
		}
		if tool == nil {
			return nil, invalid(p+".function", "%s.function is required", p)
		}
		tools = append(tools, *tool)
	}
	return tools, checkToolNames(tools, param)
}

// decodeFunctions decodes the deprecated functions list: the same
// definitions without the wrapper.
func decodeFunctions(raw json.RawMessage) ([]gen.Tool, error) {
	items, err := arrayItems(raw, "functions")
	if err != nil {
		return nil, err
	}
	if len(items) > gen.MaxTools {
		return nil, invalid("functions", "%d functions, at most %d are allowed", len(items), gen.MaxTools)
	}
	tools := make([]gen.Tool, 0, len(items))
	for i, it := range items {
		t, err := decodeFunction(it, fmt.Sprintf("functions[%d]", i))
		if err != nil {
			return nil, err
		}
		tools = append(tools, t)
	}
	return tools, checkToolNames(tools, "functions")
}

func checkToolNames(tools []gen.Tool, param string) error {
	seen := make(map[string]bool, len(tools))
	for i, t := range tools {
		if seen[t.Name] {
			return invalid(fmt.Sprintf("%s[%d]", param, i), "the function %q is defined twice", t.Name)
		}
		seen[t.Name] = true
	}
	return nil
}

// decodeFunction decodes one function definition: name, description,
// parameters (a JSON Schema object, kept as its JSON text), strict.
func decodeFunction(raw json.RawMessage, param string) (gen.Tool, error) {
	var t gen.Tool
	fields, err := objectFields(raw, param)
	if err != nil {
		return t, err
	}
	var haveName bool
	for _, f := range fields {
		p := param + "." + f.name
		if isNull(f.raw) && f.name != "name" {
			continue
		}
		switch f.name {
		case "name":
			if t.Name, err = decodeName(f.raw, p); err != nil {
				return t, err
			}
			haveName = true
		case "description":
			if t.Description, err = decString(f.raw, p); err == nil && len(t.Description) > gen.MaxTextBytes {
				err = invalid(p, "%s has %d bytes, at most %d", p, len(t.Description), gen.MaxTextBytes)
			}
		case "parameters":
			t.Parameters, err = decodeSchema(f.raw, p)
		case "strict":
			t.Strict, err = decBool(f.raw, p)
		default:
			return t, unknownField(p)
		}
		if err != nil {
			return t, err
		}
	}
	if !haveName {
		return t, invalid(param+".name", "%s.name is required", param)
	}
	return t, nil
}

// decodeName decodes a function name: 1 to 64 of a-z, A-Z, 0-9, _ and -
// (OpenAI's rule).
func decodeName(raw json.RawMessage, param string) (string, error) {
	s, err := decString(raw, param)
	if err != nil {
		return "", err
	}
	ok := s != "" && len(s) <= gen.MaxNameBytes
	for _, c := range []byte(s) {
		ok = ok && (c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-')
	}
	if !ok {
		return "", invalid(param, "%s must be 1 to %d letters, digits, underscores or dashes, got %q", param, gen.MaxNameBytes, abbreviate(s))
	}
	return s, nil
}

// decodeSchema checks a JSON Schema's shape (an object, bounded in size
// and nesting) and returns its JSON text; what it says is the grammar
// compiler's to judge.
func decodeSchema(raw json.RawMessage, param string) (string, error) {
	if err := gen.CheckJSONObject(string(raw), gen.MaxSchemaBytes, gen.MaxSchemaDepth); err != nil {
		return "", invalid(param, "%s must be a JSON Schema object: %v", param, err)
	}
	return string(raw), nil
}

// decodeToolChoice decodes "none", "auto", "required" or
// {"type":"function","function":{"name":...}}.
func decodeToolChoice(raw json.RawMessage) (gen.ToolChoice, error) {
	const param = "tool_choice"
	if len(raw) > 0 && raw[0] == '"' {
		s, err := decString(raw, param)
		if err != nil {
			return gen.ToolChoice{}, err
		}
		switch s {
		case gen.ChoiceNone, gen.ChoiceAuto, gen.ChoiceRequired:
			return gen.ToolChoice{Mode: s}, nil
		}
		return gen.ToolChoice{}, invalid(param, "tool_choice must be \"none\", \"auto\", \"required\" or a named function, got %q", abbreviate(s))
	}
	fields, err := objectFields(raw, param)
	if err != nil {
		return gen.ToolChoice{}, err
	}
	var c gen.ToolChoice
	for _, f := range fields {
		p := param + "." + f.name
		switch f.name {
		case "type":
			err = expectString(f.raw, p, "function")
		case "function":
			c, err = decodeNamedChoice(f.raw, p)
		default:
			return c, unknownField(p)
		}
		if err != nil {
			return c, err
		}
	}
	if c.Mode == "" {
		return c, invalid(param+".function", "tool_choice.function is required")
	}
	return c, nil
}

// decodeNamedChoice decodes {"name":...}.
func decodeNamedChoice(raw json.RawMessage, param string) (gen.ToolChoice, error) {
	fields, err := objectFields(raw, param)
	if err != nil {
		return gen.ToolChoice{}, err
	}
	c := gen.ToolChoice{Mode: gen.ChoiceFunction}
	for _, f := range fields {
		if f.name != "name" {
			return c, unknownField(param + "." + f.name)
		}
		if c.Name, err = decodeName(f.raw, param+".name"); err != nil {
			return c, err
		}
	}
	if c.Name == "" {
		return c, invalid(param+".name", "%s.name is required", param)
	}
	return c, nil
}

// decodeFunctionCall decodes the deprecated function_call: "none",
// "auto" or {"name":...}.
func decodeFunctionCall(raw json.RawMessage) (gen.ToolChoice, error) {
	if len(raw) > 0 && raw[0] == '"' {
		s, err := decString(raw, "function_call")
		if err != nil {
			return gen.ToolChoice{}, err
		}
		if s != gen.ChoiceNone && s != gen.ChoiceAuto {
			return gen.ToolChoice{}, invalid("function_call", "function_call must be \"none\", \"auto\" or {\"name\": ...}, got %q", abbreviate(s))
		}
		return gen.ToolChoice{Mode: s}, nil
	}
	return decodeNamedChoice(raw, "function_call")
}

// decodeResponseFormat decodes {"type":"text"}, {"type":"json_object"} or
// {"type":"json_schema","json_schema":{"name","description","schema","strict"}}.
func decodeResponseFormat(raw json.RawMessage) (gen.Format, error) {
	const param = "response_format"
	fields, err := objectFields(raw, param)
	if err != nil {
		return gen.Format{}, err
	}
	var f gen.Format
	var schema json.RawMessage
	for _, fl := range fields {
		p := param + "." + fl.name
		switch fl.name {
		case "type":
			if f.Type, err = decString(fl.raw, p); err != nil {
				return f, err
			}
			if f.Type != gen.FormatText && f.Type != gen.FormatJSONObject && f.Type != gen.FormatJSONSchema {
				return f, invalidCode(p, "unsupported_value", "response_format.type must be \"text\", \"json_object\" or \"json_schema\", got %q", abbreviate(f.Type))
			}
		case "json_schema":
			schema = fl.raw
		default:
			return f, unknownField(p)
		}
	}
	switch {
	case f.Type == "":
		return f, invalid(param+".type", "response_format.type is required")
	case f.Type == gen.FormatJSONSchema && schema == nil:
		return f, invalid(param+".json_schema", "response_format.json_schema is required with type \"json_schema\"")
	case f.Type != gen.FormatJSONSchema && schema != nil:
		return f, invalid(param+".json_schema", "response_format.json_schema is only allowed with type \"json_schema\"")
	case schema == nil:
		return f, nil
	}
	return f, decodeJSONSchemaFormat(schema, &f)
}

// decodeJSONSchemaFormat decodes response_format.json_schema.
func decodeJSONSchemaFormat(raw json.RawMessage, f *gen.Format) error {
	const param = "response_format.json_schema"
	fields, err := objectFields(raw, param)
	if err != nil {
		return err
	}
	var haveName bool
	for _, fl := range fields {
		p := param + "." + fl.name
		if isNull(fl.raw) && fl.name != "name" {
			continue
		}
		switch fl.name {
		case "name":
			f.Name, err = decodeName(fl.raw, p)
			haveName = true
		case "description":
			var d string
			if d, err = decString(fl.raw, p); err == nil && len(d) > gen.MaxTextBytes {
				err = invalid(p, "%s has %d bytes, at most %d", p, len(d), gen.MaxTextBytes)
			}
		case "schema":
			f.Schema, err = decodeSchema(fl.raw, p)
		case "strict":
			f.Strict, err = decBool(fl.raw, p)
		default:
			return unknownField(p)
		}
		if err != nil {
			return err
		}
	}
	if !haveName {
		return invalid(param+".name", "%s.name is required", param)
	}
	if f.Schema == "" {
		// OpenAI allows a schema-less json_schema format: any JSON object.
		f.Schema = `{"type":"object"}`
	}
	return nil
}

// decodeLogitBias decodes {"token id": bias, ...} into entries sorted by
// token; ids are checked against the vocabulary with the model.
func decodeLogitBias(raw json.RawMessage) ([]gen.Bias, error) {
	const param = "logit_bias"
	fields, err := objectFields(raw, param)
	if err != nil {
		return nil, err
	}
	if len(fields) > gen.MaxLogitBias {
		return nil, invalid(param, "logit_bias has %d entries, at most %d are allowed", len(fields), gen.MaxLogitBias)
	}
	out := make([]gen.Bias, 0, len(fields))
	for _, f := range fields {
		p := param + "." + abbreviate(f.name)
		id, err := strconv.ParseInt(f.name, 10, 32)
		if err != nil || id < 0 || strconv.FormatInt(id, 10) != f.name {
			return nil, invalid(p, "logit_bias keys must be token ids (decimal integers), got %q", abbreviate(f.name))
		}
		b, err := decFloat(f.raw, p, -gen.MaxBias, gen.MaxBias)
		if err != nil {
			return nil, err
		}
		out = append(out, gen.Bias{Token: int32(id), Bias: b})
	}
	slices.SortFunc(out, func(a, b gen.Bias) int { return int(a.Token) - int(b.Token) })
	return out, nil
}

// expectString checks that raw is the string want.
func expectString(raw json.RawMessage, param, want string) error {
	s, err := decString(raw, param)
	if err != nil {
		return err
	}
	if s != want {
		return invalidCode(param, "unsupported_value", "%s must be %q, got %q", param, want, abbreviate(s))
	}
	return nil
}

func unknownField(param string) error {
	return invalidCode(param, "unknown_parameter", "unknown field %q", abbreviate(param))
}

// ignoredField checks a field OpenAI defines that changes nothing here
// (it is about storage, billing, tracking or latency) by its type, and
// reports whether name is one. Null is handled by the caller.
func ignoredField(f field, chat bool) (bool, error) {
	var err error
	switch f.name {
	case "user", "prompt_cache_key", "safety_identifier":
		var s string
		if s, err = decString(f.raw, f.name); err == nil && len(s) > maxIgnoredString {
			err = invalid(f.name, "%s has %d bytes, at most %d", f.name, len(s), maxIgnoredString)
		}
	case "cache_prompt":
		_, err = decBool(f.raw, f.name)
	case "store":
		if !chat {
			return false, nil
		}
		_, err = decBool(f.raw, f.name)
	case "metadata":
		if !chat {
			return false, nil
		}
		err = checkMetadata(f.raw)
	case "service_tier":
		err = checkEnum(f.raw, f.name, "auto", "default", "flex", "scale", "priority")
	case "verbosity":
		if !chat {
			return false, nil
		}
		err = checkEnum(f.raw, f.name, "low", "medium", "high")
	case "prediction":
		// Predicted output only speeds generation up; the output is the
		// same without it.
		if !chat {
			return false, nil
		}
		err = checkPrediction(f.raw)
	default:
		return false, nil
	}
	return true, err
}

func checkEnum(raw json.RawMessage, param string, values ...string) error {
	s, err := decString(raw, param)
	if err != nil {
		return err
	}
	if !slices.Contains(values, s) {
		return invalid(param, "%s must be one of %s, got %q", param, strings.Join(values, ", "), abbreviate(s))
	}
	return nil
}

func checkMetadata(raw json.RawMessage) error {
	fields, err := objectFields(raw, "metadata")
	if err != nil {
		return err
	}
	if len(fields) > maxMetadata {
		return invalid("metadata", "metadata has %d pairs, at most %d", len(fields), maxMetadata)
	}
	for _, f := range fields {
		p := "metadata." + abbreviate(f.name)
		if len(f.name) > maxMetadataKey {
			return invalid(p, "metadata keys have at most %d characters", maxMetadataKey)
		}
		s, err := decString(f.raw, p)
		if err != nil {
			return err
		}
		if len(s) > maxMetadataValue {
			return invalid(p, "metadata values have at most %d characters", maxMetadataValue)
		}
	}
	return nil
}

// checkPrediction checks {"type":"content","content": string or text parts}.
func checkPrediction(raw json.RawMessage) error {
	fields, err := objectFields(raw, "prediction")
	if err != nil {
		return err
	}
	for _, f := range fields {
		p := "prediction." + f.name
		switch f.name {
		case "type":
			err = expectString(f.raw, p, "content")
		case "content":
			_, err = decodeContent(f.raw, p, false)
		default:
			return unknownField(p)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// checkModalities accepts ["text"]: audio output is not available.
func checkModalities(raw json.RawMessage) error {
	items, err := arrayItems(raw, "modalities")
	if err != nil {
		return err
	}
	for i, it := range items {
		p := fmt.Sprintf("modalities[%d]", i)
		s, err := decString(it, p)
		if err != nil {
			return err
		}
		if s != "text" {
			return invalidCode(p, "unsupported_value", "only the text modality is supported, got %q", abbreviate(s))
		}
	}
	return nil
}
