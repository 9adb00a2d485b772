package broker_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/lisa-llm/lisa/config"
)

// send sends a request with headers, as curl -H would, and returns the
// status, headers and body.
func (ts *testServer) send(t *testing.T, method, path, body string, headers map[string]string) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, ts.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := ts.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, b
}

// TestRequestID: every response carries x-request-id, the client's when
// sane, a fresh one otherwise, and the log line names it.
func TestRequestID(t *testing.T) {
	ts := start(t, newFake("x"), testConfig(t, nil))
	tests := []struct {
		name, method, path, body, id string
		echoed                       bool
	}{
		{"chat, client id", "POST", "/v1/chat/completions", chatBody(""), "my-req_1.2:3", true},
		{"chat, none", "POST", "/v1/chat/completions", chatBody(""), "", false},
		{"error", "POST", "/v1/chat/completions", `{}`, "abc", true},
		{"not found", "GET", "/nowhere", "", "abc", true},
		{"health", "GET", "/health", "", "", false},
		{"insane id", "GET", "/v1/models", "", "a b<script>", false},
		{"long id", "GET", "/v1/models", "", strings.Repeat("a", 129), false},
	}
	seen := map[string]bool{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := map[string]string{}
			if tt.id != "" {
				h["X-Request-Id"] = tt.id
			}
			_, hdr, _ := ts.send(t, tt.method, tt.path, tt.body, h)
			got := hdr.Get("X-Request-Id")
			switch {
			case tt.echoed && got != tt.id:
				t.Fatalf("x-request-id %q, want the client's %q", got, tt.id)
			case !tt.echoed && (!strings.HasPrefix(got, "req_") || len(got) != 36 || seen[got]):
				t.Fatalf("x-request-id %q, want a fresh generated one", got)
			}
			seen[got] = true
			if !strings.Contains(ts.Logs.String(), "request_id="+got) {
				t.Fatalf("the log does not name %s", got)
			}
		})
	}
}

// TestCORS: no origin is allowed by default; configured origins get the
// headers on responses and preflights, others a 403 preflight and no
// headers.
func TestCORS(t *testing.T) {
	const app = "https://app.example:8443"
	preflight := func(origin, method string) map[string]string {
		return map[string]string{"Origin": origin, "Access-Control-Request-Method": method,
			"Access-Control-Request-Headers": "authorization, content-type, x-stainless-os"}
	}
	tests := []struct {
		name      string
		origins   []string
		method    string
		path      string
		headers   map[string]string
		status    int
		allow     string // Access-Control-Allow-Origin, "" for none
		allowHdrs string
	}{
		{"default: no CORS", nil, "POST", "/v1/chat/completions", map[string]string{"Origin": app}, 200, "", ""},
		{"default: preflight refused", nil, "OPTIONS", "/v1/chat/completions", preflight(app, "POST"), 403, "", ""},
		{"allowed origin", []string{app}, "POST", "/v1/chat/completions", map[string]string{"Origin": app}, 200, app, ""},
		{"allowed preflight", []string{app}, "OPTIONS", "/v1/chat/completions", preflight(app, "POST"), 204, app, "authorization, content-type, x-stainless-os"},
		{"models preflight", []string{app}, "OPTIONS", "/v1/models/fake-model", preflight(app, "GET"), 204, app, "authorization, content-type, x-stainless-os"},
		{"wrong method preflight", []string{app}, "OPTIONS", "/v1/chat/completions", preflight(app, "DELETE"), 403, "", ""},
		{"other origin", []string{app}, "POST", "/v1/chat/completions", map[string]string{"Origin": "https://evil.example"}, 200, "", ""},
		{"other origin preflight", []string{app}, "OPTIONS", "/v1/chat/completions", preflight("https://evil.example", "POST"), 403, "", ""},
		{"prefix is not the origin", []string{app}, "POST", "/v1/chat/completions", map[string]string{"Origin": app + ".evil"}, 200, "", ""},
		{"any origin", []string{"*"}, "POST", "/v1/chat/completions", map[string]string{"Origin": "http://x.example"}, 200, "*", ""},
		{"error response too", []string{app}, "POST", "/v1/chat/completions", map[string]string{"Origin": app, "X-Body": "bad"}, 400, app, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := start(t, newFake("x"), testConfig(t, func(c *config.Config) { c.CORSOrigins = tt.origins }))
			body := chatBody("")
			if tt.method != "POST" {
				body = ""
			} else if tt.headers["X-Body"] != "" {
				body = `{}`
			}
			code, hdr, b := ts.send(t, tt.method, tt.path, body, tt.headers)
			if code != tt.status {
				t.Fatalf("status %d, want %d: %s", code, tt.status, b)
			}
			if got := hdr.Get("Access-Control-Allow-Origin"); got != tt.allow {
				t.Fatalf("Access-Control-Allow-Origin %q, want %q", got, tt.allow)
			}
			if got := hdr.Get("Access-Control-Allow-Headers"); got != tt.allowHdrs {
				t.Fatalf("Access-Control-Allow-Headers %q, want %q", got, tt.allowHdrs)
			}
			if tt.allow != "" && tt.method != "OPTIONS" && !strings.Contains(hdr.Get("Access-Control-Expose-Headers"), "X-Request-Id") {
				t.Fatal("x-request-id is not exposed to scripts")
			}
			if code == 403 {
				if e := decodeError(t, b); str(e.Error.Code) != "cors_forbidden" {
					t.Fatalf("403 body %s", b)
				}
			}
		})
	}
}

// TestAliases: aliases are served names too: in /v1/models, by
// /v1/models/{id}, and as the model of a request; other names stay 404.
func TestAliases(t *testing.T) {
	ts := start(t, newFake("x"), testConfig(t, func(c *config.Config) { c.ModelAliases = []string{"gpt-4o-mini", "my model"} }))
	code, _, b := ts.do(t, "GET", "/v1/models", "", "")
	var list struct {
		Data []struct{ ID, Object string } `json:"data"`
	}
	if code != 200 || json.Unmarshal(b, &list) != nil || len(list.Data) != 3 || list.Data[0].ID != "fake-model" ||
		list.Data[1].ID != "gpt-4o-mini" || list.Data[2].ID != "my model" {
		t.Fatalf("models %d %s", code, b)
	}
	tests := []struct {
		name, method, path, body string
		status                   int
	}{
		{"retrieve served", "GET", "/v1/models/fake-model", "", 200},
		{"retrieve alias", "GET", "/v1/models/gpt-4o-mini", "", 200},
		{"retrieve escaped alias", "GET", "/v1/models/my%20model", "", 200},
		{"retrieve unknown", "GET", "/v1/models/gpt-4", "", 404},
		{"chat by alias", "POST", "/v1/chat/completions", `{"model":"gpt-4o-mini","messages":[` + userX + `]}`, 200},
		{"completion by alias", "POST", "/v1/completions", `{"model":"my model","prompt":"a"}`, 200},
		{"chat by unknown", "POST", "/v1/chat/completions", `{"model":"gpt-4o","messages":[` + userX + `]}`, 404},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, b := ts.do(t, tt.method, tt.path, "", tt.body)
			if code != tt.status {
				t.Fatalf("status %d, want %d: %s", code, tt.status, b)
			}
			if code == 404 {
				if e := decodeError(t, b); str(e.Error.Code) != "model_not_found" {
					t.Fatalf("404 body %s", b)
				}
			}
			if tt.method == "GET" && code == 200 {
				var m struct{ ID, Object string }
				if json.Unmarshal(b, &m) != nil || m.Object != "model" || !strings.HasSuffix(strings.ReplaceAll(tt.path, "%20", " "), "/"+m.ID) {
					t.Fatalf("model %s", b)
				}
			}
		})
	}
}
