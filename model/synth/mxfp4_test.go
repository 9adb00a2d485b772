package synth

import (
	"strings"
	"testing"

	"github.com/lisa-llm/lisa/tensor"
)

// TestMXFP4FileTypes checks the two MXFP4 file types by name and by the
// tensors their plans hold on a mixture of experts: MXFP4_MOE's stacked
// experts MXFP4 and every other matrix Q8_0 (llama-quantize's rule,
// mixes.txt checks it against the library too), the synthetic MXFP4's
// every matrix MXFP4; the router and the norms F32 in both. ExpertType
// tells a caller (another architecture's plan) the experts' type.
func TestMXFP4FileTypes(t *testing.T) {
	s, ok := Lookup("mixtral-tiny")
	if !ok {
		t.Fatal("no mixtral-tiny shape")
	}
	for _, tc := range []struct {
		name      string
		ft        FileType
		synthOnly bool
		dense     tensor.Type // the matrices that are not experts
	}{
		{"mxfp4_moe", MXFP4_MOE, false, tensor.Q8_0},
		{"MXFP4", MXFP4, true, tensor.MXFP4},
	} {
		ft, err := ParseFileType(tc.name)
		if err != nil || ft != tc.ft {
			t.Fatalf("ParseFileType(%q) = %v, %v", tc.name, ft, err)
		}
		if ft.SynthOnly() != tc.synthOnly || ft.ExpertType() != tensor.MXFP4 {
			t.Errorf("%s: synth-only %v, expert type %s", ft, ft.SynthOnly(), ft.ExpertType())
		}
		plan, err := Plan(s, ft)
		if err != nil {
			t.Fatal(err)
		}
		experts := 0
		for _, p := range plan {
			want := tc.dense
			switch {
			case len(p.Dims) == 1 || strings.HasSuffix(p.Name, ".ffn_gate_inp.weight"):
				want = tensor.F32
			case strings.Contains(p.Name, "_exps."):
				want = tensor.MXFP4
				experts++
			}
			if p.Type != want {
				t.Errorf("%s: %s is %s, want %s", ft, p.Name, p.Type, want)
			}
		}
		if experts == 0 {
			t.Errorf("%s: no expert tensors in the plan", ft)
		}
	}
	for _, c := range []struct {
		ft   FileType
		want tensor.Type
	}{{Q4_K_M, tensor.Q4_K}, {Q8_0, tensor.Q8_0}, {F16, tensor.F16}, {IQ4_XS, tensor.IQ4_XS}} {
		if got := c.ft.ExpertType(); got != c.want {
			t.Errorf("%s: expert type %s, want %s", c.ft, got, c.want)
		}
	}
}
