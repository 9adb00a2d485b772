package sandbox

import (
	"os"
	"reflect"
	"strings"
	"testing"
)

// TestCheckConfigKernels: only the known kernel paths reach the worker's
// environment, which is otherwise empty.
func TestCheckConfigKernels(t *testing.T) {
	model, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer model.Close()
	for _, c := range []struct {
		kernels string
		env     []string
		err     string
	}{
		{"", []string{}, ""},
		{"generic", []string{"LISA_KERNELS=generic"}, ""},
		{"avx512", []string{"LISA_KERNELS=avx512"}, ""},
		{"sse", nil, "config Kernels"},
		{"generic\nPATH=/x", nil, "config Kernels"},
	} {
		cfg := Config{Model: model, Kernels: c.kernels}
		err := checkConfig(&cfg)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("kernels %q: error %v, want %q", c.kernels, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("kernels %q: %v", c.kernels, err)
		}
		if got := workerEnv(cfg); !reflect.DeepEqual(got, c.env) {
			t.Errorf("kernels %q: environment %q, want %q", c.kernels, got, c.env)
		}
	}
}

// TestCheckConfigShards: a split model's further shards come as many files
// as paths, every one given, absolute when sandboxed, at most MaxShards-1.
func TestCheckConfigShards(t *testing.T) {
	f, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	many := make([]*os.File, MaxShards)
	manyPaths := make([]string, MaxShards)
	for i := range many {
		many[i], manyPaths[i] = f, "/s"
	}
	for _, c := range []struct {
		name  string
		paths []string
		files []*os.File
		err   string
	}{
		{"none", nil, nil, ""},
		{"two", []string{"/m-2", "/m-3"}, []*os.File{f, f}, ""},
		{"the most", manyPaths[1:], many[1:], ""},
		{"too many", manyPaths, many, "at most 63"},
		{"a path without its file", []string{"/m-2", "/m-3"}, []*os.File{f}, "1 files for 2 ShardPaths"},
		{"a nil file", []string{"/m-2"}, []*os.File{nil}, "Shards[0]: no file"},
		{"a relative path", []string{"m-2"}, []*os.File{f}, "not all absolute"},
	} {
		cfg := Config{Enabled: true, ModelPath: "/m", Model: f, ShardPaths: c.paths, Shards: c.files}
		err := checkConfig(&cfg)
		if c.err == "" && err != nil || c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)) {
			t.Errorf("%s: error %v, want %q", c.name, err, c.err)
		}
	}
}
