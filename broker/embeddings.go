package broker

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"slices"
)

// MaxEmbedInputs bounds the inputs of one embeddings request (OpenAI's
// own limit).
const MaxEmbedInputs = 2048

// maxEmbedIDs bounds the token ids of one input (the body limit bounds
// them too; the context, checked later, is smaller still).
const maxEmbedIDs = 1 << 17

// Embedding is one input's embedding as a Backend returns it.
type Embedding struct {
	Vector []float32 // unit length
	Tokens int       // tokens the input took
}

// Embedder is a Backend that also makes embeddings; POST /v1/embeddings
// needs one (and the embeddings setting).
type Embedder interface {
	// Embed returns the embedding of one input: text, tokenized by the
	// worker, or token ids (when text is empty). An input the model
	// cannot embed fails with a *gen.Error.
	Embed(ctx context.Context, text string, ids []int32) (Embedding, error)
}

// embedInput is one input: text, or token ids.
type embedInput struct {
	text string
	ids  []int32
}

// embedRequest is the body of POST /v1/embeddings.
type embedRequest struct {
	model      string
	inputs     []embedInput
	base64     bool
	dimensions int // 0: not given
}

func decodeEmbedRequest(body []byte) (*embedRequest, error) {
	fields, err := objectFields(body, "")
	if err != nil {
		return nil, err
	}
	req := &embedRequest{}
	var haveInput bool
	for _, f := range fields {
		if isNull(f.raw) && f.name != "input" {
			continue
		}
		switch f.name {
		case "input":
			req.inputs, err = decodeEmbedInput(f.raw)
			haveInput = true
		case "model":
			req.model, err = decString(f.raw, f.name)
		case "encoding_format":
			var enc string
			if enc, err = decString(f.raw, f.name); err == nil {
				switch enc {
				case "float":
				case "base64":
					req.base64 = true
				default:
					err = invalid(f.name, "encoding_format must be \"float\" or \"base64\", got %q", abbreviate(enc))
				}
			}
		case "dimensions":
			var d int64
			d, err = decInt(f.raw, f.name, 1, math.MaxInt32)
			req.dimensions = int(d)
		case "user":
			_, err = decString(f.raw, f.name)
		default:
			err = invalidCode(f.name, "unknown_parameter", "unknown field %q", f.name)
		}
		if err != nil {
			return nil, err
		}
	}
	if !haveInput {
		return nil, invalid("input", "input is required")
	}
	return req, nil
}

// decodeEmbedInput reads input: a string, an array of strings, an array
// of token ids or an array of arrays of token ids, none of them empty.
func decodeEmbedInput(raw json.RawMessage) ([]embedInput, error) {
	const param = "input"
	if len(raw) > 0 && raw[0] == '"' {
		s, err := decString(raw, param)
		if err != nil {
			return nil, err
		}
		if s == "" {
			return nil, invalid(param, "input must not be an empty string")
		}
		return []embedInput{{text: s}}, nil
	}
	if len(raw) == 0 || raw[0] != '[' {
		return nil, invalid(param, "input must be a string, an array of strings, an array of token ids or an array of arrays of token ids")
	}
	items, err := arrayItems(raw, param)
	if err != nil {
		return nil, err
	}
	if len(items) == 0 {
		return nil, invalid(param, "input must not be an empty array")
	}
	switch c := items[0]; {
	case len(c) > 0 && (c[0] == '-' || c[0] >= '0' && c[0] <= '9'):
		ids, err := decodeEmbedIDs(items, param)
		if err != nil {
			return nil, err
		}
		return []embedInput{{ids: ids}}, nil
	}
	if len(items) > MaxEmbedInputs {
		return nil, invalid(param, "input has %d items, at most %d", len(items), MaxEmbedInputs)
	}
	out := make([]embedInput, len(items))
	for i, it := range items {
		p := fmt.Sprintf("%s[%d]", param, i)
		if len(it) > 0 && it[0] == '[' {
			sub, err := arrayItems(it, p)
			if err != nil {
				return nil, err
			}
			if out[i].ids, err = decodeEmbedIDs(sub, p); err != nil {
				return nil, err
			}
			continue
		}
		s, err := decString(it, p)
		if err != nil {
			return nil, invalid(p, "%s must be a string or an array of token ids", p)
		}
		if s == "" {
			return nil, invalid(p, "%s must not be an empty string", p)
		}
		out[i].text = s
	}
	return out, nil
}

// decodeEmbedIDs reads a non-empty array of token ids.
func decodeEmbedIDs(items []json.RawMessage, param string) ([]int32, error) {
	if len(items) == 0 {
		return nil, invalid(param, "%s must not be an empty array", param)
	}
	if len(items) > maxEmbedIDs {
		return nil, invalid(param, "%s has %d token ids, at most %d", param, len(items), maxEmbedIDs)
	}
	ids := make([]int32, len(items))
	for i, it := range items {
		p := fmt.Sprintf("%s[%d]", param, i)
		v, err := decInt(it, p, 0, math.MaxInt32)
		if err != nil {
			return nil, err
		}
		ids[i] = int32(v)
	}
	return ids, nil
}

type embeddingJSON struct {
	Object    string `json:"object"`
	Index     int    `json:"index"`
	Embedding any    `json:"embedding"` // []float32, or a base64 string of little-endian float32s
}

type embedUsageJSON struct {
	PromptTokens int `json:"prompt_tokens"`
	TotalTokens  int `json:"total_tokens"`
}

type embedResponseJSON struct {
	Object string          `json:"object"`
	Data   []embeddingJSON `json:"data"`
	Model  string          `json:"model"`
	Usage  embedUsageJSON  `json:"usage"`
}

// embeddings answers POST /v1/embeddings: one worker call per input, in a
// single queue slot.
func (s *Server) embeddings(w http.ResponseWriter, r *http.Request, ri *reqInfo) error {
	em, ok := s.backend.(Embedder)
	if !s.cfg.Embeddings || !ok {
		return &APIError{Status: http.StatusNotImplemented, Type: "invalid_request_error", Code: "embeddings_disabled",
			Message: "this server does not serve embeddings; start it with --embeddings (key embeddings)"}
	}
	body, err := readBody(w, r)
	if err != nil {
		return err
	}
	req, err := decodeEmbedRequest(body)
	if err != nil {
		return err
	}
	info, err := s.modelInfo(r.Context())
	if err != nil {
		return err
	}
	if name := s.servedName(info); req.model != "" && req.model != name && !slices.Contains(s.cfg.ModelAliases, req.model) {
		return &APIError{Status: http.StatusNotFound, Type: "invalid_request_error", Param: "model", Code: "model_not_found",
			Message: fmt.Sprintf("the model %q does not exist; this server serves %q", abbreviate(req.model), name)}
	}
	for i, in := range req.inputs {
		for j, id := range in.ids {
			if int(id) >= info.VocabSize {
				return invalid(fmt.Sprintf("input[%d][%d]", i, j), "token id %d is not below the vocabulary size %d", id, info.VocabSize)
			}
		}
		if n := len(in.ids); n > info.ContextSize {
			return invalidCode(fmt.Sprintf("input[%d]", i), "context_length_exceeded", "input %d has %d tokens; the context holds %d", i, n, info.ContextSize)
		}
	}
	return s.workerCall(w, r, func() error {
		ctx, cancel := context.WithTimeout(r.Context(), s.cfg.RequestTimeout.D())
		defer cancel()
		resp := embedResponseJSON{Object: "list", Model: s.servedName(info), Data: make([]embeddingJSON, 0, len(req.inputs))}
		dim := 0
		for i, in := range req.inputs {
			e, err := em.Embed(ctx, in.text, in.ids)
			if err != nil {
				return withInputParam(err, i)
			}
			if i == 0 {
				dim = len(e.Vector)
				if req.dimensions != 0 && req.dimensions != dim {
					return invalidCode("dimensions", "unsupported_value", "dimensions must be %d, the model's embedding size (embeddings are not shortened)", dim)
				}
			} else if len(e.Vector) != dim {
				return fmt.Errorf("%w: embeddings of %d and %d values", ErrWorkerFailed, dim, len(e.Vector))
			}
			resp.Usage.PromptTokens += e.Tokens
			var v any = e.Vector
			if req.base64 {
				v = base64Floats(e.Vector)
			}
			resp.Data = append(resp.Data, embeddingJSON{Object: "embedding", Index: i, Embedding: v})
		}
		resp.Usage.TotalTokens = resp.Usage.PromptTokens
		ri.promptTokens = resp.Usage.PromptTokens
		return writeJSON(w, http.StatusOK, resp)
	})
}

// withInputParam names input i in a request error that names the input
// as a whole.
func withInputParam(err error, i int) error {
	ae := toAPIError(err)
	if ae.Status == http.StatusBadRequest && (ae.Param == "input" || ae.Param == "prompt" || ae.Param == "") {
		c := *ae
		c.Param = fmt.Sprintf("input[%d]", i)
		return &c
	}
	return err
}

// base64Floats encodes v as OpenAI's base64 embeddings: little-endian
// float32 values.
func base64Floats(v []float32) string {
	b := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
	}
	return base64.StdEncoding.EncodeToString(b)
}
