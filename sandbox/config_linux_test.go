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
