package seccomp

import (
	"fmt"
	"syscall"
)

// Action is a seccomp filter return value (SECCOMP_RET_*), including the
// errno carried in its low 16 bits for ActErrno.
type Action uint32

// The seccomp actions the lists use.
const (
	// ActKillProcess kills the whole process with SIGSYS.
	ActKillProcess Action = 0x80000000
	// ActTrap sends SIGSYS to the calling thread (Go prints a traceback).
	ActTrap Action = 0x00030000
	// ActErrno fails the call; OR an errno into the low 16 bits (see Errno).
	ActErrno Action = 0x00050000
	// ActLog allows the call and has the kernel log it.
	ActLog Action = 0x7ffc0000
	// ActAllow allows the call.
	ActAllow Action = 0x7fff0000
)

const actionMask = 0xffff0000

// Errno returns the action that fails a call with errno e.
func Errno(e syscall.Errno) Action { return ActErrno | Action(uint32(e)&0xffff) }

// String returns a short name such as "allow", "kill_process" or "errno(EACCES)".
func (a Action) String() string {
	switch a & actionMask {
	case ActKillProcess & actionMask:
		return "kill_process"
	case ActTrap:
		return "trap"
	case ActErrno:
		e := syscall.Errno(a & 0xffff)
		return "errno(" + errnoName(e) + ")"
	case ActLog:
		return "log"
	case ActAllow:
		return "allow"
	}
	return fmt.Sprintf("action(%#x)", uint32(a))
}

func errnoName(e syscall.Errno) string {
	switch e {
	case syscall.EACCES:
		return "EACCES"
	case syscall.ENOSYS:
		return "ENOSYS"
	case syscall.EPERM:
		return "EPERM"
	}
	return fmt.Sprintf("%d", uint32(e))
}

// Op is how a Cond compares a 64-bit system call argument with its Value.
type Op uint8

// The comparisons a Cond can make.
const (
	// OpEqual holds when the argument equals Value (all 64 bits).
	OpEqual Op = iota + 1
	// OpMaskAll holds when every bit set in Value is set in the argument.
	OpMaskAll
	// OpMaskNone holds when no bit set in Value is set in the argument.
	OpMaskNone
)

// String names the comparison.
func (o Op) String() string {
	switch o {
	case OpEqual:
		return "=="
	case OpMaskAll:
		return "has all of"
	case OpMaskNone:
		return "has none of"
	}
	return fmt.Sprintf("op(%d)", uint8(o))
}

// Cond is one condition on argument Arg (0–5) of a system call.
type Cond struct {
	Arg   uint8
	Op    Op
	Value uint64
}

// String renders the condition, e.g. "arg0 == 0x1".
func (c Cond) String() string { return fmt.Sprintf("arg%d %s %#x", c.Arg, c.Op, c.Value) }

// Rule gives the action for one system call. With Conds, the action applies
// only when every condition holds; otherwise the default action applies.
type Rule struct {
	Name   string
	Action Action
	Conds  []Cond
}

// Allow returns a rule that allows the named call unconditionally.
func Allow(name string) Rule { return Rule{Name: name, Action: ActAllow} }

// AllowIf returns a rule that allows the named call when all conds hold.
func AllowIf(name string, conds ...Cond) Rule {
	return Rule{Name: name, Action: ActAllow, Conds: conds}
}

// Fail returns a rule that fails the named call with errno e.
func Fail(name string, e syscall.Errno) Rule { return Rule{Name: name, Action: Errno(e)} }

// String renders the rule on one line.
func (r Rule) String() string {
	s := r.Name + ": " + r.Action.String()
	for i, c := range r.Conds {
		if i == 0 {
			s += " if "
		} else {
			s += " && "
		}
		s += c.String()
	}
	return s
}
