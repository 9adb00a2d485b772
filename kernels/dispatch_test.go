package kernels

import (
	"os"
	"slices"
	"strings"
	"testing"
)

func TestChoose(t *testing.T) {
	all := features{avx2: true, avx512: true}
	arm := features{neon: true, dotprod: true}
	armMM := features{neon: true, dotprod: true, i8mm: true}
	cases := []struct {
		env      string
		f        features
		want     Path
		noteHas  string
		nativeOK bool // whether the case needs assembly in this build
	}{
		{"", features{}, Generic, "best", false},
		{"generic", all, Generic, "LISA_KERNELS=generic", false},
		{"avx2", all, AVX2, "LISA_KERNELS=avx2", true},
		{"avx512", all, AVX512, "LISA_KERNELS=avx512", true},
		{"", all, AVX512, "best", true},
		{"", features{avx2: true}, AVX2, "best", true},
		{"avx512", features{avx2: true}, AVX2, "not supported", true},
		{"avx512", features{avx512: true}, Generic, "not supported", false},
		{"sse9", features{}, Generic, "not a kernel path", false},
		{"", arm, DotProd, "best", true},
		{"", features{neon: true}, NEON, "best", true},
		{"neon", arm, NEON, "LISA_KERNELS=neon", true},
		{"dotprod", features{neon: true}, NEON, "not supported", true},
		{"avx2", arm, DotProd, "not supported", true},
		{"", armMM, I8MM, "best", true},
		{"dotprod", armMM, DotProd, "LISA_KERNELS=dotprod", true},
		{"neon", armMM, NEON, "LISA_KERNELS=neon", true},
		{"generic", armMM, Generic, "LISA_KERNELS=generic", false},
		{"i8mm", arm, DotProd, "not supported", true},
		{"i8mm", features{neon: true, i8mm: true}, NEON, "not supported", true},
		{"i8mm", armMM, I8MM, "LISA_KERNELS=i8mm", true},
	}
	for _, c := range cases {
		if c.nativeOK && nativeTable(c.want) == nil {
			continue
		}
		tab, note := choose(c.env, c.f)
		if tab.path != c.want || !strings.Contains(note, c.noteHas) {
			t.Errorf("choose(%q, %+v) = %s, %q; want %s, note containing %q", c.env, c.f, tab.path, note, c.want, c.noteHas)
		}
	}
}

func TestSelectedAvailable(t *testing.T) {
	ps := Available()
	if ps[0] != Generic {
		t.Fatalf("Available() = %v, generic must come first", ps)
	}
	if !slices.Contains(ps, Selected()) {
		t.Fatalf("Selected() = %s, not in Available() = %v", Selected(), ps)
	}
	if tab, _ := choose(os.Getenv(EnvKernels), detect()); tab.path != Selected() {
		t.Fatalf("Selected() = %s, but %s=%q picks %s", Selected(), EnvKernels, os.Getenv(EnvKernels), tab.path)
	}
	if d := Describe(); !strings.HasPrefix(d, string(Selected())+" (") {
		t.Fatalf("Describe() = %q, want it to start with the selected path", d)
	}
}

// TestEnvEachPath checks the dispatch for every LISA_KERNELS value on this
// CPU: each available path is chosen when named, each known but
// unavailable one falls back to the best with a note saying so, and an
// unknown one is reported as such; the process's own choice (Selected)
// honours the variable it was started with (make test-arm64 runs this
// once per path under qemu).
func TestEnvEachPath(t *testing.T) {
	f := detect()
	avail := f.paths()
	best := avail[len(avail)-1]
	for _, p := range []Path{Generic, AVX2, AVX512, NEON, DotProd, I8MM, "sse9"} {
		tab, note := choose(string(p), f)
		switch {
		case slices.Contains(avail, p):
			if tab.path != p || note != EnvKernels+"="+string(p) {
				t.Errorf("%s=%s: %s, %q", EnvKernels, p, tab.path, note)
			}
		case p == "sse9":
			if tab.path != best || !strings.Contains(note, "not a kernel path") {
				t.Errorf("%s=%s: %s, %q", EnvKernels, p, tab.path, note)
			}
		default:
			if tab.path != best || !strings.Contains(note, "not supported") {
				t.Errorf("%s=%s: %s, %q", EnvKernels, p, tab.path, note)
			}
		}
	}
	// LISA_TEST_BEST names the path the CPU under test must offer last
	// (make test-arm64 sets it per qemu CPU model): it checks the feature
	// detection, which choose's cases cannot.
	if want := Path(os.Getenv("LISA_TEST_BEST")); want != "" && best != want {
		t.Errorf("best path %s (available %v), want %s on this CPU model", best, avail, want)
	}
	if env := Path(os.Getenv(EnvKernels)); env != "" {
		if slices.Contains(avail, env) && Selected() != env {
			t.Errorf("%s=%s, but %s is selected", EnvKernels, env, Selected())
		}
		if want := string(Selected()) + " (" + pathFeatures(Selected()) + ")"; !strings.HasPrefix(Describe(), want) {
			t.Errorf("Describe() = %q, want it to start with %q", Describe(), want)
		}
	}
}
