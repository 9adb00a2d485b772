package broker_test

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"hash/fnv"
	"math"
	"net/http"
	"testing"

	"github.com/lisa-llm/lisa/broker"
	"github.com/lisa-llm/lisa/broker/brokertest"
	"github.com/lisa-llm/lisa/config"
	"github.com/lisa-llm/lisa/gen"
)

// embedFake adds a deterministic Embed to the fake backend: a unit
// vector of 4 values derived from the input's hash; the text "too long"
// is refused as the worker refuses an input longer than the context.
type embedFake struct{ *brokertest.Fake }

func (f embedFake) Embed(_ context.Context, text string, ids []int32) (broker.Embedding, error) {
	h := fnv.New64a()
	if text == "too long" {
		return broker.Embedding{}, gen.Errorf(gen.CodeContextLength, "input", "too long")
	}
	h.Write([]byte(text))
	for _, id := range ids {
		h.Write([]byte{byte(id), byte(id >> 8)})
	}
	s := h.Sum64()
	v := make([]float32, 4)
	var ss float64
	for i := range v {
		v[i] = float32(int8(s>>(8*i))) + 0.5
		ss += float64(v[i]) * float64(v[i])
	}
	for i := range v {
		v[i] = float32(float64(v[i]) / math.Sqrt(ss))
	}
	n := len(ids)
	if text != "" {
		n = len(text)
	}
	return broker.Embedding{Vector: v, Tokens: n}, nil
}

type embedResp struct {
	Object string `json:"object"`
	Model  string `json:"model"`
	Data   []struct {
		Object    string          `json:"object"`
		Index     int             `json:"index"`
		Embedding json.RawMessage `json:"embedding"`
	} `json:"data"`
	Usage struct {
		PromptTokens int `json:"prompt_tokens"`
		TotalTokens  int `json:"total_tokens"`
	} `json:"usage"`
}

func TestEmbeddingsEndpoint(t *testing.T) {
	on := func(c *config.Config) { c.Embeddings = true }
	ts := start(t, embedFake{newFake("x")}, testConfig(t, on))
	code, _, body := ts.do(t, "POST", "/v1/embeddings", "", `{"model":"fake-model","input":["abc","de",[5,6,7]]}`)
	if code != http.StatusOK {
		t.Fatalf("status %d: %s", code, body)
	}
	var r embedResp
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatal(err)
	}
	if r.Object != "list" || len(r.Data) != 3 || r.Usage.PromptTokens != 3+2+3 || r.Usage.TotalTokens != r.Usage.PromptTokens {
		t.Fatalf("response %s", body)
	}
	var floats [][]float32
	for i, d := range r.Data {
		var v []float32
		if err := json.Unmarshal(d.Embedding, &v); err != nil || d.Index != i || d.Object != "embedding" || len(v) != 4 {
			t.Fatalf("item %d: %s (%v)", i, body, err)
		}
		floats = append(floats, v)
	}
	if floats[0][0] == floats[1][0] && floats[0][1] == floats[1][1] {
		t.Errorf("distinct inputs, equal vectors: %v", floats)
	}
	code, _, body = ts.do(t, "POST", "/v1/embeddings", "", `{"input":["abc","de",[5,6,7]],"encoding_format":"base64","dimensions":4}`)
	if code != http.StatusOK {
		t.Fatalf("base64: status %d: %s", code, body)
	}
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatal(err)
	}
	for i, d := range r.Data {
		var s string
		if err := json.Unmarshal(d.Embedding, &s); err != nil {
			t.Fatalf("base64 item %d: %s", i, d.Embedding)
		}
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil || len(b) != 16 {
			t.Fatalf("base64 item %d: %q (%v)", i, s, err)
		}
		for k := range 4 {
			if got := math.Float32frombits(binary.LittleEndian.Uint32(b[4*k:])); got != floats[i][k] {
				t.Fatalf("base64 item %d value %d: %v, float form %v", i, k, got, floats[i][k])
			}
		}
	}
	bad := []struct {
		name, body string
		status     int
		param      string
	}{
		{"dimensions", `{"input":"a","dimensions":3}`, 400, "dimensions"},
		{"worker refusal", `{"input":["a","too long"]}`, 400, "input[1]"},
		{"unknown model", `{"input":"a","model":"gpt-x"}`, 404, "model"},
		{"unknown field", `{"input":"a","extra":1}`, 400, "extra"},
		{"id beyond the vocabulary", `{"input":[[1,1000000]]}`, 400, "input[0][1]"},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			code, _, body := ts.do(t, "POST", "/v1/embeddings", "", c.body)
			e := decodeError(t, body)
			if code != c.status || str(e.Error.Param) != c.param {
				t.Fatalf("status %d param %q, want %d %q: %s", code, str(e.Error.Param), c.status, c.param, body)
			}
		})
	}
}

func TestEmbeddingsDisabled(t *testing.T) {
	for name, b := range map[string]broker.Backend{"off": embedFake{newFake("x")}, "no embedder": newFake("x")} {
		t.Run(name, func(t *testing.T) {
			ts := start(t, b, testConfig(t, func(c *config.Config) { c.Embeddings = name != "off" }))
			code, _, body := ts.do(t, "POST", "/v1/embeddings", "", `{"input":"a"}`)
			if e := decodeError(t, body); code != http.StatusNotImplemented || str(e.Error.Code) != "embeddings_disabled" {
				t.Fatalf("status %d: %s", code, body)
			}
		})
	}
}
