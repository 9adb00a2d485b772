package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lisa-llm/lisa/internal/shared"
)

// get fetches path and returns the status and body.
func (s *server) get(t *testing.T, path string) (int, string) {
	t.Helper()
	resp, err := http.Get(s.url + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// TestServeModelsDir runs lisa serve --models-dir on a directory of two
// real models, a broken one and hostile entries, each model in its own
// sandboxed worker, with a budget that holds one worker at a time.
func TestServeModelsDir(t *testing.T) {
	dir := t.TempDir()
	copyFile(t, shared.Path(t, "models/stories260K.gguf"), filepath.Join(dir, "stories260K.gguf"), 0o644)
	copyFile(t, shared.Path(t, "models/llama-2-tiny-random.gguf"), filepath.Join(dir, "llama-2-tiny-random.gguf"), 0o644)
	for name, body := range map[string]string{"broken.gguf": "this is no GGUF file", ".hidden.gguf": "x", "bad name.gguf": "x", "notes.txt": "x"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	outside := filepath.Join(t.TempDir(), "secret.gguf")
	copyFile(t, shared.Path(t, "models/stories260K.gguf"), outside, 0o644)
	if err := os.Symlink(outside, filepath.Join(dir, "outside.gguf")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "sub.gguf"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfgFile := filepath.Join(t.TempDir(), "lisa.yaml")
	if err := os.WriteFile(cfgFile, []byte("models_dir: "+dir+"\nmodels:\n  - {name: stories260K, aliases: [tiny-story]}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// 256 MiB per worker, a budget of 300 MB: one model at a time.
	s := startServer(t, []string{"--config", cfgFile, "--memory-limit-bytes", "268435456", "--models-memory-bytes", "300000000"},
		nil, t.TempDir(), 30*time.Second)

	status, body := s.get(t, "/v1/models")
	var list struct {
		Data []struct{ ID, Status, Error string }
	}
	if err := json.Unmarshal([]byte(body), &list); status != 200 || err != nil {
		t.Fatalf("/v1/models: %d %v %s", status, err, body)
	}
	var ids []string
	for _, d := range list.Data {
		ids = append(ids, d.ID)
	}
	if got, want := strings.Join(ids, " "), "broken llama-2-tiny-random stories260K tiny-story"; got != want {
		t.Errorf("/v1/models lists %q, want %q", got, want)
	}
	logs := s.logs.String()
	for _, skipped := range []string{`"file":"outside.gguf","why":"a symbolic link to outside models_dir"`, `"file":"sub.gguf","why":"not a regular file"`, `"file":"bad name.gguf"`} {
		if !strings.Contains(logs, skipped) {
			t.Errorf("the log does not say %s was skipped", skipped)
		}
	}

	ask := func(model string) (int, map[string]any) {
		return s.post(t, "/v1/completions", map[string]any{"model": model, "prompt": "Once upon a time", "max_tokens": 8, "temperature": 0})
	}
	texts := map[string]string{}
	for _, model := range []string{"stories260K", "llama-2-tiny-random", "tiny-story"} {
		status, out := ask(model)
		if status != 200 {
			t.Fatalf("%s: %d %v", model, status, out)
		}
		text, _, usage := completion(t, out)
		if out["model"] != model || text == "" || usage["completion_tokens"] == nil {
			t.Errorf("%s answered %v", model, out)
		}
		texts[model] = text
	}
	// The alias is the same model, loaded again after its eviction: the
	// same greedy text.
	if texts["tiny-story"] != texts["stories260K"] || texts["stories260K"] == texts["llama-2-tiny-random"] {
		t.Errorf("texts %q: want the alias to match stories260K and the other model to differ", texts)
	}

	// The broken file is reported by name; the others keep working, and
	// it evicted nothing (stories260K, loaded, was evicted once only: by
	// llama-2-tiny-random).
	status, out := ask("broken")
	e, _ := out["error"].(map[string]any)
	if msg, _ := e["message"].(string); status != http.StatusServiceUnavailable || e["code"] != "model_load_failed" || !strings.Contains(msg, `"broken"`) {
		t.Errorf("broken: %d %v", status, out)
	}
	if status, out := ask("stories260K"); status != 200 {
		t.Errorf("stories260K after the broken load: %d %v", status, out)
	}
	if status, out := ask("outside"); status != http.StatusNotFound {
		t.Errorf("the model behind the link out of the directory: %d %v, want 404", status, out)
	}
	_, body = s.get(t, "/v1/models")
	if !strings.Contains(body, `"id":"broken","object":"model"`) || !strings.Contains(body, `"status":"failed","error":"`) {
		t.Errorf("/v1/models does not report the broken model: %s", body)
	}
	if status, body := s.get(t, "/health"); status != 200 || !strings.Contains(body, `"broken":{"state":"failed"`) {
		t.Errorf("/health: %d %s", status, body)
	}
	_, metrics := s.get(t, "/metrics")
	for _, want := range []string{
		`lisa_model_generations_total{model="stories260K"} 3`, `lisa_model_generations_total{model="llama-2-tiny-random"} 1`,
		`lisa_model_load_failures_total{model="broken"} 1`, `lisa_model_evictions_total{model="stories260K"} 1`,
		`lisa_model_loaded{model="stories260K"} 1`, `lisa_model_loaded{model="llama-2-tiny-random"} 0`,
		"lisa_models_memory_bytes 268435456",
	} {
		if !strings.Contains(metrics, want+"\n") {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if !strings.Contains(s.logs.String(), `"msg":"model evicted to make room","model":"stories260K"`) ||
		!strings.Contains(s.logs.String(), `"msg":"worker stopped","model_id":"stories260K","reason":"model evicted to make room"`) {
		t.Error("no eviction logged, or its worker's stop line gives another reason")
	}
}

// metricValue returns the value of the sample name{labels} in a /metrics
// text ("" when absent).
func metricValue(metrics, sample string) string {
	for line := range strings.Lines(metrics) {
		if v, ok := strings.CutPrefix(strings.TrimSuffix(line, "\n"), sample+" "); ok {
			return v
		}
	}
	return ""
}

// TestServeModelsBrokenFileKeepsWorkingModel runs lisa serve with a
// budget for one worker, a working model and a truncated copy of it: the
// truncated file's requests are answered with the typed load error,
// evict nothing and start no serving worker, again and again, until the
// file changes; fixed, it loads, and the model it evicts comes back.
// stories260K also has its own ctx_size and parallel.
func TestServeModelsBrokenFileKeepsWorkingModel(t *testing.T) {
	dir := t.TempDir()
	good := shared.Path(t, "models/stories260K.gguf")
	copyFile(t, good, filepath.Join(dir, "stories260K.gguf"), 0o644)
	data, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	broken := filepath.Join(dir, "broken.gguf")
	if err := os.WriteFile(broken, data[:len(data)-4096], 0o644); err != nil {
		t.Fatal(err)
	}
	cfgFile := filepath.Join(t.TempDir(), "lisa.yaml")
	if err := os.WriteFile(cfgFile, []byte("models_dir: "+dir+"\nmodels:\n  - {name: stories260K, ctx_size: 128, parallel: 2}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// 256 MiB per worker, a budget of 300 MB: one model at a time.
	s := startServer(t, []string{"--config", cfgFile, "--memory-limit-bytes", "268435456", "--models-memory-bytes", "300000000"},
		nil, t.TempDir(), 30*time.Second)
	ask := func(model string, n int) (int, map[string]any) {
		return s.post(t, "/v1/completions", map[string]any{"model": model, "prompt": "Once upon a time", "max_tokens": 4, "temperature": 0, "n": n})
	}
	if status, out := ask("stories260K", 1); status != 200 {
		t.Fatalf("stories260K: %d %v", status, out)
	}
	// The model's own settings: 2 slots, 128 tokens per slot.
	if status, out := ask("stories260K", 3); status != http.StatusBadRequest {
		t.Errorf("n=3 on a model of 2 slots: %d %v, want 400", status, out)
	}
	_, body := s.get(t, "/v1/models")
	if !strings.Contains(body, `"id":"stories260K","object":"model"`) || !strings.Contains(body, `"ctx_size":128,"parallel":2`) {
		t.Errorf("/v1/models does not show stories260K's ctx_size and parallel: %s", body)
	}

	for _, tc := range []struct {
		name     string
		fix      func() // what happens to broken.gguf first
		requests int    // sent at once
		works    bool
	}{
		{"first request", nil, 1, false},
		{"again", nil, 1, false},
		{"concurrently", nil, 3, false},
		{"touched, still truncated", func() {
			now := time.Now().Add(time.Second)
			if err := os.Chtimes(broken, now, now); err != nil {
				t.Fatal(err)
			}
		}, 1, false},
		{"replaced by a whole file", func() {
			tmp := filepath.Join(dir, ".fixed")
			copyFile(t, good, tmp, 0o644)
			if err := os.Rename(tmp, broken); err != nil {
				t.Fatal(err)
			}
		}, 1, true},
	} {
		if tc.fix != nil {
			tc.fix()
		}
		type answer struct {
			status int
			out    map[string]any
			err    error
		}
		answers := make(chan answer, tc.requests)
		for range tc.requests {
			go func() {
				var a answer
				resp, err := http.Post(s.url+"/v1/completions", "application/json",
					strings.NewReader(`{"model":"broken","prompt":"Once upon a time","max_tokens":4,"temperature":0}`))
				if err == nil {
					a.status = resp.StatusCode
					err = json.NewDecoder(resp.Body).Decode(&a.out)
					resp.Body.Close()
				}
				a.err = err
				answers <- a
			}()
		}
		for range tc.requests {
			a := <-answers
			if a.err != nil {
				t.Fatalf("%s: %v", tc.name, a.err)
			}
			if tc.works {
				if a.status != 200 {
					t.Errorf("%s: %d %v", tc.name, a.status, a.out)
				}
				continue
			}
			e, _ := a.out["error"].(map[string]any)
			msg, _ := e["message"].(string)
			if a.status != http.StatusServiceUnavailable || e["code"] != "model_load_failed" || !strings.Contains(msg, `the model "broken" failed to load`) ||
				!strings.Contains(msg, "ends beyond the file") || strings.Contains(msg, dir) {
				t.Errorf("%s: %d %v, want the typed load error naming the truncation (and no path)", tc.name, a.status, a.out)
			}
		}
		_, metrics := s.get(t, "/metrics")
		if !tc.works {
			// Nothing was evicted, and stories260K still serves from its
			// first worker.
			for sample, want := range map[string]string{
				`lisa_model_loaded{model="stories260K"}`: "1", `lisa_model_evictions_total{model="stories260K"}`: "0",
				`lisa_model_loads_total{model="stories260K"}`: "1", `lisa_model_loads_total{model="broken"}`: "0",
			} {
				if got := metricValue(metrics, sample); got != want {
					t.Errorf("%s: %s is %q, want %s", tc.name, sample, got, want)
				}
			}
			if status, out := ask("stories260K", 1); status != 200 {
				t.Errorf("%s: stories260K: %d %v", tc.name, status, out)
			}
		}
	}
	// One check per version of the file (two truncated, one whole), and
	// one serving worker, for the whole file.
	logs := s.logs.String()
	if got := strings.Count(logs, `"msg":"model failed to load","model":"broken","stage":"check"`); got != 2 {
		t.Errorf("%d failed checks of broken logged, want 2 (one per version of the file)", got)
	}
	if got := strings.Count(logs, `"msg":"loading model","model":"broken"`); got != 1 {
		t.Errorf("%d serving workers started for broken, want 1", got)
	}
	// The whole file evicted stories260K; it comes back.
	if status, out := ask("stories260K", 1); status != 200 {
		t.Errorf("stories260K after its eviction: %d %v", status, out)
	}
	_, metrics := s.get(t, "/metrics")
	for sample, want := range map[string]string{
		`lisa_model_evictions_total{model="stories260K"}`: "1", `lisa_model_loads_total{model="stories260K"}`: "2",
		`lisa_model_load_failures_total{model="broken"}`: "2", `lisa_model_loaded{model="broken"}`: "0",
	} {
		if got := metricValue(metrics, sample); got != want {
			t.Errorf("at the end: %s is %q, want %s", sample, got, want)
		}
	}
}
