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
