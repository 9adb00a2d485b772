package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lisa-llm/lisa/model/synth"
)

// TestParseServeArgs checks the positional model and llama-server's
// flags become the configuration flags config.Parse knows.
func TestParseServeArgs(t *testing.T) {
	tests := []struct {
		name  string
		args  []string
		want  []string // the args for config.Parse
		host  string
		port  string
		webui bool
		check bool
		notes int
		err   string
	}{
		{name: "positional model", args: []string{"m.gguf"}, want: []string{"--model", "m.gguf"}},
		{name: "model after flags", args: []string{"--parallel", "2", "m.gguf"}, want: []string{"--parallel", "2", "--model", "m.gguf"}},
		{name: "model before flags", args: []string{"m.gguf", "--log-level=debug", "--sandbox-enabled"},
			want: []string{"--log-level=debug", "--sandbox-enabled", "--model", "m.gguf"}},
		{name: "after --", args: []string{"--", "-odd.gguf"}, want: []string{"--model", "-odd.gguf"}},
		{name: "llama-server forms", args: []string{"-m", "m.gguf", "-c", "4096", "-np", "2", "-t=3", "-ctk", "q8_0", "-ctv=q8_0"},
			want: []string{"-m", "m.gguf", "--ctx-size", "4096", "--parallel", "2", "--threads", "3", "--cache-type-k", "q8_0", "--cache-type-v", "q8_0"}},
		{name: "host and port", args: []string{"m.gguf", "--host", "0.0.0.0", "--port=9000"}, want: []string{"--model", "m.gguf"},
			host: "0.0.0.0", port: "9000"},
		{name: "ngl", args: []string{"m.gguf", "-ngl", "99", "--n-gpu-layers=10"}, want: []string{"--model", "m.gguf"}, notes: 2},
		{name: "alias", args: []string{"m.gguf", "--alias", "gpt-4o"}, want: []string{"--alias", "gpt-4o", "--model", "m.gguf"}},
		{name: "alias list", args: []string{"a.gguf", "-a", "x, y"}, want: []string{"--alias", "x", "--alias", "y", "--model", "a.gguf"}},
		{name: "webui and check", args: []string{"m.gguf", "--webui", "--check-config=true"}, want: []string{"--model", "m.gguf"},
			webui: true, check: true},
		{name: "webui off", args: []string{"m.gguf", "--webui=false"}, want: []string{"--model", "m.gguf"}},
		{name: "two models", args: []string{"a.gguf", "b.gguf"}, err: `unexpected argument "b.gguf"`},
		{name: "model twice", args: []string{"a.gguf", "-m", "b.gguf"}, err: "given twice"},
		{name: "listen and port", args: []string{"a.gguf", "--listen", "127.0.0.1:1", "--port", "2"}, err: "not both"},
		{name: "alias missing", args: []string{"a.gguf", "--alias"}, err: "needs an argument"},
		{name: "plain key", args: []string{"a.gguf", "--api-key", "s3cret-value"}, err: "lisa hash-key"},
		{name: "unknown", args: []string{"a.gguf", "--ctx-sise", "3"}, err: "not defined: -ctx-sise"},
		{name: "value missing", args: []string{"a.gguf", "--port"}, err: "needs an argument"},
		{name: "bad bool", args: []string{"a.gguf", "--webui=maybe"}, err: "want true or false"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sa, err := parseServeArgs(tt.args)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err %v, want %q", err, tt.err)
				}
				if strings.Contains(err.Error(), "s3cret") {
					t.Fatalf("the error echoes the key: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(sa.args, tt.want) || sa.host != tt.host || sa.port != tt.port || sa.webui != tt.webui ||
				sa.checkConfig != tt.check || len(sa.notes) != tt.notes {
				t.Fatalf("got %+v, want args %q host %q port %q webui %v check %v notes %d",
					sa, tt.want, tt.host, tt.port, tt.webui, tt.check, tt.notes)
			}
		})
	}
}

// TestServeListenMerge checks --host and --port replace only their part
// of the address the file or the default gives.
func TestServeListenMerge(t *testing.T) {
	dir := t.TempDir()
	cfgFile := filepath.Join(dir, "lisa.yaml")
	if err := os.WriteFile(cfgFile, []byte("model: m.gguf\nlisten: 127.0.0.2:7000\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"m.gguf", "--port", "9000"}, "127.0.0.1:9000"},
		{[]string{"m.gguf", "--host", "::1"}, "[::1]:8080"},
		{[]string{"--config", cfgFile, "--port", "9001"}, "127.0.0.2:9001"},
		{[]string{"--config", cfgFile, "--host", "localhost"}, "localhost:7000"},
	}
	for _, tt := range tests {
		sa, err := parseServeArgs(tt.args)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := parseServeConfig(sa)
		if err != nil {
			t.Fatalf("%v: %v", tt.args, err)
		}
		if cfg.Listen != tt.want {
			t.Errorf("%v: listen %q, want %q", tt.args, cfg.Listen, tt.want)
		}
	}
	// Off loopback without keys is refused, as with --listen.
	sa, err := parseServeArgs([]string{"m.gguf", "--host", "0.0.0.0"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := parseServeConfig(sa); err == nil || !strings.Contains(err.Error(), "loopback") {
		t.Errorf("--host 0.0.0.0 without keys: %v", err)
	}
}

// TestCheckConfig checks lisa serve --check-config validates without
// starting: the resolved configuration on stdout, errors as usage errors.
func TestCheckConfig(t *testing.T) {
	tests := []struct {
		args []string
		code int
		out  []string
		err  string
	}{
		{[]string{"nonexistent.gguf", "--check-config", "-c", "2048", "--port", "9100"}, 0,
			[]string{`"model": "nonexistent.gguf"`, `"ctx_size": 2048`, `"listen": "127.0.0.1:9100"`, "configuration ok"}, ""},
		{[]string{"--check-config"}, 2, nil, "no model"},
		{[]string{"m.gguf", "--check-config", "--listen", "0.0.0.0:80"}, 2, nil, "loopback"},
		{[]string{"m.gguf", "--check-config", "--log-level", "loud"}, 2, nil, "log_level"},
	}
	for _, tt := range tests {
		var so, se bytes.Buffer
		code := run(append([]string{"serve"}, tt.args...), &so, &se)
		if code != tt.code || !strings.Contains(se.String(), tt.err) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", tt.args, code, se.String(), tt.code, tt.err)
			continue
		}
		for _, w := range tt.out {
			if !strings.Contains(so.String(), w) {
				t.Errorf("%v: stdout lacks %q:\n%s", tt.args, w, so.String())
			}
		}
		if tt.code == 0 {
			var m map[string]any
			js, _, _ := strings.Cut(so.String(), "\nconfiguration ok")
			if err := json.Unmarshal([]byte(js), &m); err != nil {
				t.Errorf("%v: stdout is not the configuration as JSON: %v", tt.args, err)
			}
		}
	}
}

// TestModelCheck runs the model check in process on a synthetic model
// (its training context known) and on files that are no model.
func TestModelCheck(t *testing.T) {
	dir := t.TempDir()
	shape, ok := synth.Lookup("qwen3-tiny")
	if !ok {
		t.Fatal("no qwen3-tiny shape")
	}
	good := filepath.Join(dir, "tiny.gguf")
	if _, err := synth.WriteFile(good, synth.Options{Shape: shape, Type: synth.F32, Seed: 1}); err != nil {
		t.Fatal(err)
	}
	text := filepath.Join(dir, "text.gguf")
	if err := os.WriteFile(text, []byte("hello, not a model\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	info, err := checkModel(good, false, nil, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if info.Architecture != "qwen3" || info.NCtxTrain != uint64(shape.NCtx) {
		t.Errorf("info %+v, want qwen3 and %d", info, shape.NCtx)
	}
	_, err = checkModel(text, false, nil, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "magic") {
		t.Errorf("text file: %v, want the magic error", err)
	}
	if _, err := checkModel(filepath.Join(dir, "nope.gguf"), false, nil, &bytes.Buffer{}); err == nil {
		t.Error("a missing file passed")
	}
}

// TestModelCheckPlan checks the model check's memory plan: the KV cache
// grows with the slots and the context, ctx_size 0 is the model's own, and
// settings the memory cap cannot hold, or out of range, fail the check
// with the serving worker's error.
func TestModelCheckPlan(t *testing.T) {
	shape, ok := synth.Lookup("qwen3-tiny")
	if !ok {
		t.Fatal("no qwen3-tiny shape")
	}
	good := filepath.Join(t.TempDir(), "tiny.gguf")
	if _, err := synth.WriteFile(good, synth.Options{Shape: shape, Type: synth.F32, Seed: 1}); err != nil {
		t.Fatal(err)
	}
	base, err := checkModel(good, false, &modelPlan{CtxSize: 64, Parallel: 1}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if base.CtxSize != 64 || base.Parallel != 1 || base.KVCacheBytes <= 0 || base.ScratchBytes <= 0 {
		t.Fatalf("plan %+v", base)
	}
	for _, tc := range []struct {
		name    string
		plan    modelPlan
		kvTimes int64  // the KV cache, in units of base's
		ctx     int    // the resolved ctx_size
		err     string // the check's error
	}{
		{"two slots", modelPlan{CtxSize: 64, Parallel: 2}, 2, 64, ""},
		{"four times the context", modelPlan{CtxSize: 256, Parallel: 1}, 4, 256, ""},
		{"q8_0 keys and values", modelPlan{CtxSize: 64, Parallel: 1, CacheTypeK: "q8_0", CacheTypeV: "q8_0"}, 0, 64, ""},
		{"the model's context", modelPlan{Parallel: 1}, 0, min(shape.NCtx, 4096), ""},
		{"over the memory cap", modelPlan{CtxSize: 1 << 16, Parallel: 256, MemoryLimit: 64 << 20}, 0, 0, "lower parallel or ctx_size"},
		{"parallel out of range", modelPlan{CtxSize: 64, Parallel: 1000}, 0, 0, "parallel 1000"},
		{"bad cache type", modelPlan{CtxSize: 64, Parallel: 1, CacheTypeK: "q3"}, 0, 0, "cache_type_k"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			info, err := checkModel(good, false, &tc.plan, &bytes.Buffer{})
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if info.CtxSize != tc.ctx {
				t.Errorf("ctx_size %d, want %d", info.CtxSize, tc.ctx)
			}
			if tc.kvTimes > 0 && info.KVCacheBytes != tc.kvTimes*base.KVCacheBytes {
				t.Errorf("KV cache %d bytes, want %d × %d", info.KVCacheBytes, tc.kvTimes, base.KVCacheBytes)
			}
			if tc.plan.CacheTypeK == "q8_0" && !(info.KVCacheBytes < base.KVCacheBytes*6/10) {
				t.Errorf("q8_0 KV cache %d bytes, want about 53%% of f16's %d", info.KVCacheBytes, base.KVCacheBytes)
			}
		})
	}
}

// TestCtxWarning checks the warning is given exactly past the training
// context.
func TestCtxWarning(t *testing.T) {
	tests := []struct {
		ctx   int
		train uint64
		warn  bool
	}{
		{0, 2048, false}, {2048, 2048, false}, {2049, 2048, true}, {100000, 40960, true}, {4096, 0, false},
	}
	for _, tt := range tests {
		w := ctxWarning(tt.ctx, tt.train)
		if (w != "") != tt.warn {
			t.Errorf("ctx %d train %d: %q, want warning %v", tt.ctx, tt.train, w, tt.warn)
		}
	}
}

// TestDecodeModelInfo checks the model check's reply is taken only in
// its one shape.
func TestDecodeModelInfo(t *testing.T) {
	tests := []struct {
		reply string
		ok    bool
	}{
		{`{"architecture":"llama","n_ctx_train":2048}` + "\n", true},
		{`{"architecture":"qwen3"}`, true},
		{`{"architecture":"qwen3","ctx_size":4096,"parallel":4,"kv_cache_bytes":1048576,"scratch_bytes":65536}`, true},
		{`{"architecture":"qwen3","kv_cache_bytes":-1}`, false},
		{`{"architecture":"qwen3","scratch_bytes":1125899906842625}`, false},
		{`{"architecture":"qwen3","parallel":-4}`, false},
		{`{"architecture":"qwen3","kv_cache_bytes":1e3}`, false},
		{`{"architecture":"llama","n_ctx_train":-1}`, false},
		{`{"architecture":"llama","extra":1}`, false},
		{`{"architecture":""}`, false},
		{`{"architecture":"ll\u001bama"}`, false},
		{`{"architecture":"` + strings.Repeat("a", 65) + `"}`, false},
		{`{"architecture":"llama"} {"architecture":"x"}`, false},
		{`[1]`, false},
		{``, false},
	}
	for _, tt := range tests {
		_, err := decodeModelInfo([]byte(tt.reply))
		if (err == nil) != tt.ok {
			t.Errorf("%q: err %v, want ok %v", tt.reply, err, tt.ok)
		}
	}
}

// FuzzDecodeModelInfo feeds the model check's reply decoder hostile
// replies: an error or a reply within the bounds, never a panic.
func FuzzDecodeModelInfo(f *testing.F) {
	f.Add([]byte(`{"architecture":"llama","n_ctx_train":2048}`))
	f.Add([]byte(`{"architecture":"qwen3","n_ctx_train":18446744073709551615}`))
	f.Add([]byte(`{"architecture":"\u00e9"}`))
	f.Add([]byte(`{"architecture":"llama","ctx_size":4096,"parallel":4,"kv_cache_bytes":1048576,"scratch_bytes":65536}`))
	f.Fuzz(func(t *testing.T, reply []byte) {
		info, err := decodeModelInfo(reply)
		if err != nil {
			return
		}
		if info.Architecture == "" || len(info.Architecture) > 64 || !isPrintableASCII(info.Architecture) {
			t.Fatalf("accepted architecture %q", info.Architecture)
		}
		for _, n := range []int64{int64(info.CtxSize), int64(info.Parallel), info.KVCacheBytes, info.ScratchBytes} {
			if n < 0 || n > maxPlanBytes {
				t.Fatalf("accepted a plan out of range: %+v", info)
			}
		}
	})
}
