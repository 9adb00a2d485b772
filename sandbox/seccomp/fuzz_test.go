package seccomp

import (
	"math/rand/v2"
	"testing"
)

// reference evaluates the rules directly, as the compiled program must.
func reference(p *Program, c Call) Action {
	if c.AuditArch != 0 && c.AuditArch != p.Arch.AuditArch {
		return ActKillProcess
	}
	if p.Arch.RejectAbove != 0 && uint32(int32(c.Nr)) >= p.Arch.RejectAbove {
		return ActKillProcess
	}
	for _, r := range p.Rules {
		if n, _ := p.Arch.Number(r.Name); n != c.Nr {
			continue
		}
		if holds(r.Conds, c) {
			return r.Action
		}
	}
	return p.DefaultAction
}

// holds reports whether every condition holds for c.
func holds(conds []Cond, c Call) bool {
	for _, k := range conds {
		a := c.Args[k.Arg]
		ok := false
		switch k.Op {
		case OpEqual:
			ok = a == k.Value
		case OpMaskAll:
			ok = a&k.Value == k.Value
		case OpMaskNone:
			ok = a&k.Value == 0
		}
		if !ok {
			return false
		}
	}
	return true
}

func programs(t testing.TB) []*Program {
	var ps []*Program
	for _, arch := range []string{"amd64", "arm64"} {
		for _, st := range []Stage{StageLoading, StageServing} {
			p, err := Compile(Options{Arch: arch, Stage: st, SelfPid: 1, Log: st == StageLoading})
			if err != nil {
				t.Fatal(err)
			}
			ps = append(ps, p)
		}
	}
	return ps
}

// pick biases random arguments towards the values the rules compare with.
func pick(r *rand.Rand) uint64 {
	vals := []uint64{0, 1, 2, 3, 4, 5, protExec, cloneThread, cloneVM, cloneThread | cloneVM, 0x3d0f00, 1 << 32, ^uint64(0),
		mapShared, mapPrivate, mapAnon | mapPrivate, mapShared | mapAnon, mapFixed, 0x100, 0x4000}
	if r.IntN(3) == 0 {
		return r.Uint64()
	}
	return vals[r.IntN(len(vals))] | vals[r.IntN(len(vals))]<<(32*uint(r.IntN(2)))
}

// TestAgainstReference compares the interpreter's verdicts with the rules'
// meaning on many random calls.
func TestAgainstReference(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, p := range programs(t) {
		for i := 0; i < 20000; i++ {
			c := Call{Nr: r.IntN(460)}
			for j := range c.Args {
				c.Args[j] = pick(r)
			}
			if r.IntN(50) == 0 {
				c.AuditArch = r.Uint32()
			}
			got, err := p.Evaluate(c)
			if err != nil {
				t.Fatal(err)
			}
			if want := reference(p, c); got != want {
				t.Fatalf("%s: call %d %#x arch %#x: program says %v, rules say %v", p.Arch.Name, c.Nr, c.Args, c.AuditArch, got, want)
			}
		}
	}
}

// FuzzProgram is TestAgainstReference driven by the fuzzer.
func FuzzProgram(f *testing.F) {
	f.Add(uint8(0), int32(234), uint64(1), uint64(0), uint64(0), uint32(0))
	f.Add(uint8(1), int32(56), uint64(0x10100), uint64(0), uint64(0), uint32(0))
	f.Add(uint8(1), int32(9), uint64(0), uint64(4096), uint64(5), uint32(0))
	f.Add(uint8(2), int32(220), uint64(0x10100), uint64(0), uint64(0), uint32(0xc00000b7))
	ps := programs(f)
	f.Fuzz(func(t *testing.T, which uint8, nr int32, a0, a1, a2 uint64, arch uint32) {
		p := ps[int(which)%len(ps)]
		c := Call{Nr: int(nr), Args: [6]uint64{a0, a1, a2, a0 ^ a1, a2, a0}, AuditArch: arch}
		got, err := p.Evaluate(c)
		if err != nil {
			t.Fatal(err)
		}
		if want := reference(p, c); got != want {
			t.Fatalf("%s: call %d %#x arch %#x: program says %v, rules say %v", p.Arch.Name, c.Nr, c.Args, arch, got, want)
		}
	})
}
