package seccomp

import (
	"fmt"
	"syscall"

	"github.com/elastic/go-seccomp-bpf/arch"
)

// Stage selects one of the worker's two filters.
type Stage int

// The two stages of the worker's seccomp policy.
const (
	// StageLoading is installed before the model is read.
	StageLoading Stage = 1
	// StageServing is stacked on StageLoading once the model is loaded.
	StageServing Stage = 2
)

// String names the stage.
func (s Stage) String() string {
	switch s {
	case StageLoading:
		return "stage 1 (loading)"
	case StageServing:
		return "stage 2 (serving)"
	}
	return fmt.Sprintf("stage(%d)", int(s))
}

// Kernel constants the rules compare arguments with. They are the same on
// amd64 and arm64.
const (
	cloneVM     = 0x00000100
	cloneThread = 0x00010000
	protRead    = 0x1
	protWrite   = 0x2
	protExec    = 0x4
	mapShared   = 0x01
	mapPrivate  = 0x02
	mapFixed    = 0x10
	mapAnon     = 0x20
	// seccompSetModeFilter is SECCOMP_SET_MODE_FILTER, seccomp(2)'s arg0.
	seccompSetModeFilter = 1
)

// Arch describes one architecture's filter prologue and syscall numbers.
type Arch struct {
	// Name is the GOARCH name.
	Name string
	// AuditArch is the AUDIT_ARCH_* value seccomp_data.arch must equal.
	AuditArch uint32
	// RejectAbove, when non-zero, kills calls numbered at or above it
	// (amd64: the x32 ABI bit).
	RejectAbove uint32
	numbers     map[string]int
	names       map[int]string
}

// Number returns the system call number of name on a.
func (a *Arch) Number(name string) (int, bool) {
	n, ok := a.numbers[name]
	return n, ok
}

// SyscallName returns the name of system call nr on a, or "" when unknown.
func (a *Arch) SyscallName(nr int) string { return a.names[nr] }

// LookupArch returns the architecture named by its GOARCH name.
func LookupArch(goarch string) (*Arch, error) {
	switch goarch {
	case "amd64":
		return &Arch{Name: "amd64", AuditArch: uint32(arch.X86_64.ID), RejectAbove: 0x40000000,
			numbers: arch.X86_64.SyscallNames, names: arch.X86_64.SyscallNumbers}, nil
	case "arm64":
		return &Arch{Name: "arm64", AuditArch: uint32(arch.AARCH64.ID),
			numbers: arch.AARCH64.SyscallNames, names: arch.AARCH64.SyscallNumbers}, nil
	}
	return nil, fmt.Errorf("seccomp: no allow-lists for architecture %q (have amd64, arm64)", goarch)
}

// Options parameterises the rules that depend on the running worker.
type Options struct {
	// Arch is the GOARCH name ("amd64", "arm64").
	Arch string
	// Stage selects the loading or serving list.
	Stage Stage
	// SelfPid is the worker's tgid as seen inside its PID namespace (1):
	// tgkill is allowed only with it as its first argument.
	SelfPid int
	// Log makes the default action "log and allow" instead of "kill the
	// process" (sandbox_seccomp_log, for deriving lists).
	Log bool
}

// DefaultAction returns the action for calls no rule allows.
func (o Options) DefaultAction() Action {
	if o.Log {
		return ActLog
	}
	return ActKillProcess
}

// servingRules is the stage-2 list, hottest calls first: the order is the
// order of comparisons in the compiled program.
func servingRules(selfPid int) []Rule {
	return []Rule{
		Allow("futex"),
		Allow("read"),
		Allow("write"),
		Allow("epoll_pwait"),
		Allow("nanosleep"),
		Allow("sched_yield"),
		Allow("madvise"),
		mmapPrivate(),
		mmapSharedFile(),
		Allow("munmap"),
		Allow("getpid"),
		Allow("gettid"),
		AllowIf("tgkill", Cond{Arg: 0, Op: OpEqual, Value: uint64(selfPid)}),
		Allow("rt_sigreturn"),
		Allow("rt_sigprocmask"),
		Allow("sigaltstack"),
		AllowIf("clone", Cond{Arg: 0, Op: OpMaskAll, Value: cloneThread | cloneVM}),
		Allow("exit"),
		Allow("exit_group"),
		Fail("openat", syscall.EACCES),
		Fail("clone3", syscall.ENOSYS),
	}
}

// mmapPrivate allows the only mappings the Go runtime makes: private,
// anonymous or not, readable and writable at most, perhaps at a fixed
// address. Every other flag is refused, because RLIMIT_DATA counts only
// private writable mappings that are not stacks: MAP_SHARED (anonymous
// shared memory is not counted at all), MAP_GROWSDOWN (a "stack" of any
// size is not counted), MAP_HUGETLB, MAP_LOCKED, MAP_POPULATE and the rest
// would each open a way around the memory cap. The checks cover all 64
// bits of each argument, so a stray high bit is refused too.
func mmapPrivate() Rule {
	return AllowIf("mmap",
		Cond{Arg: 2, Op: OpMaskNone, Value: ^uint64(protRead | protWrite)},
		Cond{Arg: 3, Op: OpMaskAll, Value: mapPrivate},
		Cond{Arg: 3, Op: OpMaskNone, Value: ^uint64(mapPrivate | mapAnon | mapFixed)})
}

// mmapSharedFile allows what package gguf does to the model: a shared,
// read-only mapping of a file. Without MAP_ANONYMOUS and without PROT_WRITE
// a shared mapping holds only the file's own page cache, which no number
// of mappings can grow past the file; MAP_SHARED_VALIDATE (shared|private)
// is refused with the rest.
func mmapSharedFile() Rule {
	return AllowIf("mmap",
		Cond{Arg: 2, Op: OpMaskNone, Value: ^uint64(protRead)},
		Cond{Arg: 3, Op: OpMaskAll, Value: mapShared},
		Cond{Arg: 3, Op: OpMaskNone, Value: ^uint64(mapShared | mapFixed)})
}

// loadingOnly lists what stage 1 allows beyond stage 2, as traced with
// trace.sh (Go 1.26, kernel 6.18): the GGUF reader's fstat and, when it
// cannot map the file, pread64; fcntl, epoll_ctl and close for the IPC
// file's set-up; and seccomp to stack stage 2. (The runtime's poller is
// created before any filter: sandbox.LockDown starts it.)
func loadingOnly() []Rule {
	return []Rule{
		Allow("fstat"),
		Allow("pread64"),
		Allow("close"),
		Allow("fcntl"),
		Allow("epoll_ctl"),
		AllowIf("seccomp", Cond{Arg: 0, Op: OpEqual, Value: seccompSetModeFilter}),
	}
}

// Rules returns the rule list for o, with names checked against o.Arch.
func Rules(o Options) ([]Rule, error) {
	a, err := LookupArch(o.Arch)
	if err != nil {
		return nil, err
	}
	if o.SelfPid <= 0 {
		return nil, fmt.Errorf("seccomp: self pid %d: must be positive", o.SelfPid)
	}
	var rules []Rule
	switch o.Stage {
	case StageServing:
		rules = servingRules(o.SelfPid)
	case StageLoading:
		rules = append(servingRules(o.SelfPid), loadingOnly()...)
	default:
		return nil, fmt.Errorf("seccomp: unknown stage %d", int(o.Stage))
	}
	for _, r := range rules {
		if _, ok := a.numbers[r.Name]; !ok {
			return nil, fmt.Errorf("seccomp: %s has no system call %q", a.Name, r.Name)
		}
	}
	return rules, nil
}
