package seccomp

import (
	"fmt"

	"golang.org/x/net/bpf"
)

// Offsets of the fields of struct seccomp_data. Arguments are 64-bit; the
// kernel stores them in native byte order, so on little-endian machines
// the low half comes first.
const (
	offNr   = 0
	offArch = 4
	offArgs = 16
)

// maxArg is the highest system call argument index.
const maxArg = 5

// Program is a compiled filter with the data it was built from.
type Program struct {
	Arch          *Arch
	Rules         []Rule
	DefaultAction Action
	Instructions  []bpf.Instruction
}

// Compile builds the filter for o.
func Compile(o Options) (*Program, error) {
	a, err := LookupArch(o.Arch)
	if err != nil {
		return nil, err
	}
	rules, err := Rules(o)
	if err != nil {
		return nil, err
	}
	insts, err := assemble(a, rules, o.DefaultAction())
	if err != nil {
		return nil, err
	}
	return &Program{Arch: a, Rules: rules, DefaultAction: o.DefaultAction(), Instructions: insts}, nil
}

// Raw returns the program in the kernel's encoding.
func (p *Program) Raw() ([]bpf.RawInstruction, error) {
	raw, err := bpf.Assemble(p.Instructions)
	if err != nil {
		return nil, fmt.Errorf("seccomp: assemble: %w", err)
	}
	return raw, nil
}

// assemble emits the prologue (architecture check, x32 rejection), one
// self-contained block per rule, and the default action.
func assemble(a *Arch, rules []Rule, def Action) ([]bpf.Instruction, error) {
	seen := make(map[string]bool, len(rules))
	prog := []bpf.Instruction{
		bpf.LoadAbsolute{Off: offArch, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: a.AuditArch, SkipTrue: 1},
		// A foreign ABI is never legitimate: kill even in log mode.
		bpf.RetConstant{Val: uint32(ActKillProcess)},
		bpf.LoadAbsolute{Off: offNr, Size: 4},
	}
	if a.RejectAbove != 0 {
		prog = append(prog,
			bpf.JumpIf{Cond: bpf.JumpGreaterOrEqual, Val: a.RejectAbove, SkipFalse: 1},
			bpf.RetConstant{Val: uint32(ActKillProcess)})
	}
	for i := 0; i < len(rules); {
		// Consecutive rules for one call are alternatives: the first whose
		// conditions all hold decides.
		j := i + 1
		for j < len(rules) && rules[j].Name == rules[i].Name {
			j++
		}
		group := rules[i:j]
		name := rules[i].Name
		i = j
		if seen[name] {
			return nil, fmt.Errorf("seccomp: rules for %q given apart: alternatives must be consecutive", name)
		}
		seen[name] = true
		for _, r := range group {
			if len(group) > 1 && len(r.Conds) == 0 {
				return nil, fmt.Errorf("seccomp: rule for %q given twice (an alternative without conditions hides the others)", name)
			}
		}
		nr, ok := a.Number(name)
		if !ok {
			return nil, fmt.Errorf("seccomp: %s has no system call %q", a.Name, name)
		}
		var body []bpf.Instruction
		for k, r := range group {
			b, err := ruleBody(r, def, k == len(group)-1)
			if err != nil {
				return nil, err
			}
			body = append(body, b...)
		}
		if len(body) > 255 {
			return nil, fmt.Errorf("seccomp: rule for %q: %d instructions, more than a jump can skip", name, len(body))
		}
		prog = append(prog, bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(nr), SkipFalse: uint8(len(body))})
		prog = append(prog, body...)
	}
	prog = append(prog, bpf.RetConstant{Val: uint32(def)})
	return prog, nil
}

// failJump marks a conditional jump whose failing branch must reach the
// block's final "return default" instruction, or the next alternative;
// ruleBody patches it.
type failJump struct {
	at     int
	onTrue bool // the failing branch is the "true" one
}

// ruleBody returns the instructions run once the call number matched:
// with no conditions a single return; otherwise the checks, the return of
// the rule's action and, when last is true, a return of the default action
// that every failed check jumps to. When last is false (an alternative
// follows) a failed check jumps just past the block, to the next
// alternative's first check. The accumulator holds an argument, not the
// call number, at the end: the last block never falls through into the
// next call's rules.
func ruleBody(r Rule, def Action, last bool) ([]bpf.Instruction, error) {
	if len(r.Conds) == 0 {
		return []bpf.Instruction{bpf.RetConstant{Val: uint32(r.Action)}}, nil
	}
	var body []bpf.Instruction
	var fails []failJump
	for _, c := range r.Conds {
		if c.Arg > maxArg {
			return nil, fmt.Errorf("seccomp: rule for %q: argument %d out of range 0–%d", r.Name, c.Arg, maxArg)
		}
		lo := uint32(offArgs + 8*int(c.Arg))
		for _, half := range []struct {
			off uint32
			val uint32
		}{{lo + 4, uint32(c.Value >> 32)}, {lo, uint32(c.Value)}} {
			insts, fj, err := checkHalf(c.Op, half.off, half.val)
			if err != nil {
				return nil, fmt.Errorf("seccomp: rule for %q: %w", r.Name, err)
			}
			for _, f := range fj {
				fails = append(fails, failJump{at: len(body) + f.at, onTrue: f.onTrue})
			}
			body = append(body, insts...)
		}
	}
	body = append(body, bpf.RetConstant{Val: uint32(r.Action)})
	failAt := len(body) // the next alternative's first instruction
	if last {
		body = append(body, bpf.RetConstant{Val: uint32(def)})
	}
	for _, f := range fails {
		j := body[f.at].(bpf.JumpIf)
		skip := failAt - f.at - 1
		if skip > 255 {
			return nil, fmt.Errorf("seccomp: rule for %q: jump of %d too long", r.Name, skip)
		}
		if f.onTrue {
			j.SkipTrue = uint8(skip)
		} else {
			j.SkipFalse = uint8(skip)
		}
		body[f.at] = j
	}
	return body, nil
}

// checkHalf tests one 32-bit half of an argument. The returned failJumps
// index into the returned instructions.
func checkHalf(op Op, off, val uint32) ([]bpf.Instruction, []failJump, error) {
	load := bpf.LoadAbsolute{Off: off, Size: 4}
	switch op {
	case OpEqual:
		return []bpf.Instruction{load, bpf.JumpIf{Cond: bpf.JumpEqual, Val: val}},
			[]failJump{{at: 1, onTrue: false}}, nil
	case OpMaskAll:
		if val == 0 {
			return nil, nil, nil
		}
		return []bpf.Instruction{load,
				bpf.ALUOpConstant{Op: bpf.ALUOpAnd, Val: val},
				bpf.JumpIf{Cond: bpf.JumpEqual, Val: val}},
			[]failJump{{at: 2, onTrue: false}}, nil
	case OpMaskNone:
		if val == 0 {
			return nil, nil, nil
		}
		return []bpf.Instruction{load, bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: val}},
			[]failJump{{at: 1, onTrue: true}}, nil
	}
	return nil, nil, fmt.Errorf("unknown comparison %d", uint8(op))
}
