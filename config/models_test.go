package config

import (
	"io"
	"reflect"
	"strings"
	"testing"
)

func TestValidModelID(t *testing.T) {
	for _, tc := range []struct {
		id string
		ok bool
	}{
		{"stories260K", true}, {"mini-24m-q8_0", true}, {"a.b+c:d", true},
		{"", false}, {".hidden", false}, {"-flag", false}, {"a/b", false}, {"..", false},
		{"a b", false}, {"a\x00b", false}, {"é", false}, {strings.Repeat("a", 129), false}, {strings.Repeat("a", 128), true},
	} {
		if got := ValidModelID(tc.id); got != tc.ok {
			t.Errorf("ValidModelID(%q) = %v, want %v", tc.id, got, tc.ok)
		}
	}
}

func TestMultiModelConfig(t *testing.T) {
	file := writeFile(t, "models.yaml", `
models_dir: /srv/models
models:
  - {path: /m/a.gguf, aliases: [gpt-4o-mini], preload: true, memory_limit_bytes: 134217728}
  - {name: b, aliases: [b-chat], ctx_size: 8192, parallel: 2}
models_memory_bytes: 536870912
`)
	c, err := Parse([]string{"--config", file, "--preload", "b", "--model-load-timeout", "30s"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if !c.MultiModel() || len(c.Models) != 2 || c.Models[0].Path != "/m/a.gguf" || !c.Models[0].Preload ||
		!reflect.DeepEqual(c.Models[1].Aliases, []string{"b-chat"}) || c.ModelsMemoryBytes != 512<<20 ||
		!reflect.DeepEqual(c.Preload, []string{"b"}) || c.ModelLoadTimeout.D().Seconds() != 30 ||
		c.Models[1].CtxSize != 8192 || c.Models[1].Parallel != 2 || c.Models[0].CtxSize != 0 || c.Models[0].Parallel != 0 {
		t.Errorf("parsed %+v", c)
	}
	if c, err = Parse([]string{"--models-dir", "/srv/models"}, io.Discard); err != nil || !c.MultiModel() || c.ModelName != "" {
		t.Errorf("--models-dir alone: %v, %+v", err, c)
	}
	// With a model, models_dir is the hf store: one model.
	if c, err = Parse([]string{"--models-dir", "/srv/models", "-m", "/m.gguf"}, io.Discard); err != nil || c.MultiModel() {
		t.Errorf("--models-dir with -m: %v, multi %v", err, c.MultiModel())
	}
}

func TestMultiModelConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		args       []string
		want       string
	}{
		{"model and models", "models: [{path: /a.gguf}]", []string{"-m", "/b.gguf"}, "models: give either"},
		{"preload with one model", "", []string{"-m", "/b.gguf", "--preload", "x"}, "preload: only a server with several"},
		{"model_name with several", "", []string{"--models-dir", "/d", "--model-name", "x"}, "model_name: a server with several"},
		{"alias with several", "", []string{"--models-dir", "/d", "--alias", "x"}, "model_name: a server with several"},
		{"entry without path or name", "models: [{aliases: [x]}]", nil, "models[0]: give path"},
		{"name-only entry without dir", "models: [{name: a}]", nil, "models[0].path: an entry without path"},
		{"bad id", "models: [{path: /a.gguf, name: ../etc}]", nil, "models[0].name: \"../etc\" is not a model id"},
		{"duplicate names", "models: [{path: /a.gguf, name: a}, {path: /b.gguf, name: a}]", nil, "models[1].name: \"a\" is also the name of models[0]"},
		{"bad alias", "models: [{path: /a.gguf, aliases: [\"\"]}]", nil, "models[0].aliases"},
		{"bad digest", "models: [{path: /a.gguf, model_sha256: abc}]", nil, "models[0].model_sha256"},
		{"small cap", "models: [{path: /a.gguf, memory_limit_bytes: 1000}]", nil, "models[0].memory_limit_bytes"},
		{"negative ctx_size", "models: [{path: /a.gguf, ctx_size: -1}]", nil, "models[0].ctx_size: must be 0"},
		{"ctx_size of one token", "models: [{path: /a.gguf}, {path: /b.gguf, ctx_size: 1}]", nil, "models[1].ctx_size: must be 0"},
		{"huge ctx_size", "models: [{path: /a.gguf, ctx_size: 1048577}]", nil, "models[0].ctx_size: must be 0"},
		{"negative parallel", "models: [{path: /a.gguf, parallel: -2}]", nil, "models[0].parallel: must be 0"},
		{"too many slots", "models: [{path: /a.gguf, parallel: 257}]", nil, "models[0].parallel: must be 0"},
		{"ctx_size not a number", "models: [{path: /a.gguf, ctx_size: lots}]", nil, "lots"},
		{"small budget", "", []string{"--models-dir", "/d", "--models-memory-bytes", "1000"}, "models_memory_bytes: must be 0"},
		{"zero load timeout", "", []string{"--models-dir", "/d", "--model-load-timeout", "0s"}, "model_load_timeout"},
		{"too many", "models: [" + strings.Repeat("{path: /a.gguf},", MaxModels+1) + "]", nil, "models: 257 entries"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := tc.args
			if tc.yaml != "" {
				args = append([]string{"--config", writeFile(t, "c.yaml", tc.yaml)}, args...)
			}
			_, err := Parse(args, io.Discard)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Parse: %v, want an error containing %q", err, tc.want)
			}
		})
	}
}
