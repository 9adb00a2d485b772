package seccomp

import (
	"strings"
	"syscall"
	"testing"
)

const selfPid = 1

// forbidden lists calls stage 2 must never allow (issue 5).
var forbidden = []string{"kill", "tkill", "prlimit64", "setrlimit", "socket", "connect", "bind",
	"execve", "execveat", "fork", "vfork", "mount", "umount2", "unshare", "setns", "ptrace",
	"process_vm_readv", "process_vm_writev", "setuid", "setgid", "setreuid", "setregid",
	"setresuid", "setresgid", "setfsuid", "setfsgid", "setgroups", "keyctl", "bpf",
	"perf_event_open", "io_uring_setup", "io_uring_enter", "io_uring_register", "userfaultfd",
	"open", "getdents64", "pwrite64", "seccomp", "prctl", "capset", "personality", "chroot",
	"pivot_root", "listen", "accept4", "sendto", "recvfrom", "sendmsg", "recvmsg", "socketpair",
	"mprotect", "ioctl", "memfd_create", "landlock_restrict_self", "add_key", "request_key",
	"mremap", "shmget", "shmat", "brk", "mlock", "remap_file_pages", "setrlimit"}

func compile(t *testing.T, arch string, st Stage, log bool) *Program {
	t.Helper()
	p, err := Compile(Options{Arch: arch, Stage: st, SelfPid: selfPid, Log: log})
	if err != nil {
		t.Fatalf("compile %s %v: %v", arch, st, err)
	}
	return p
}

func eval(t *testing.T, p *Program, c Call) Action {
	t.Helper()
	a, err := p.Evaluate(c)
	if err != nil {
		t.Fatalf("evaluate %+v: %v", c, err)
	}
	return a
}

func nr(t *testing.T, p *Program, name string) int {
	t.Helper()
	n, ok := p.Arch.Number(name)
	if !ok {
		t.Fatalf("%s: no system call %q", p.Arch.Name, name)
	}
	return n
}

// TestEveryRule checks each rule's action, and for each condition both a
// call that meets it and one that does not.
func TestEveryRule(t *testing.T) {
	for _, arch := range []string{"amd64", "arm64"} {
		for _, st := range []Stage{StageLoading, StageServing} {
			for _, log := range []bool{false, true} {
				p := compile(t, arch, st, log)
				def := p.DefaultAction
				for _, r := range p.Rules {
					n := nr(t, p, r.Name)
					if got := eval(t, p, satisfying(n, r.Conds)); got != r.Action {
						t.Errorf("%s %v: %s with conditions met: got %v, want %v", arch, st, r.Name, got, r.Action)
					}
					for i := range r.Conds {
						c := violating(n, r.Conds, i)
						// Another alternative for the same call may hold.
						want := reference(p, c)
						if got := eval(t, p, c); got != want {
							t.Errorf("%s %v: %s with %v broken (args %#x): got %v, want %v", arch, st, r.Name, r.Conds[i], c.Args, got, want)
						}
						if want == r.Action && !otherHolds(p, r, c) {
							t.Errorf("%s %v: %s with %v broken (args %#x): still %v, default %v", arch, st, r.Name, r.Conds[i], c.Args, want, def)
						}
					}
				}
			}
		}
	}
}

// otherHolds reports whether a rule for r's call other than r holds for c.
func otherHolds(p *Program, r Rule, c Call) bool {
	for _, o := range p.Rules {
		if o.Name == r.Name && o.String() != r.String() && holds(o.Conds, c) {
			return true
		}
	}
	return false
}

// satisfying returns a call meeting every condition.
func satisfying(nr int, conds []Cond) Call {
	c := Call{Nr: nr}
	for _, k := range conds {
		switch k.Op {
		case OpEqual, OpMaskAll:
			c.Args[k.Arg] |= k.Value
		case OpMaskNone:
			c.Args[k.Arg] |= ^k.Value & 0x3 // other bits set must not matter
		}
	}
	return c
}

// violating returns a call meeting every condition but conds[i].
func violating(nr int, conds []Cond, i int) Call {
	c := satisfying(nr, conds)
	k := conds[i]
	switch k.Op {
	case OpEqual:
		c.Args[k.Arg] = k.Value + 1<<32 // same low half, different high half
	case OpMaskAll:
		c.Args[k.Arg] &^= k.Value & -k.Value // clear the lowest required bit
	case OpMaskNone:
		c.Args[k.Arg] |= k.Value & -k.Value
	}
	return c
}

// TestArgumentEdges spells out the argument rules call by call, on both
// architectures: the same policy data compiled with each one's numbers
// and audit arch (the argument layout of these calls is the same on both).
func TestArgumentEdges(t *testing.T) {
	for _, arch := range []string{"amd64", "arm64"} {
		t.Run(arch, func(t *testing.T) { testArgumentEdges(t, arch) })
	}
}

func testArgumentEdges(t *testing.T, arch string) {
	p := compile(t, arch, StageServing, false)
	kill, allow := ActKillProcess, ActAllow
	cases := []struct {
		name string
		args [6]uint64
		want Action
	}{
		{"tgkill", [6]uint64{1, 7, 23}, allow},
		{"tgkill", [6]uint64{2, 7, 23}, kill},
		{"tgkill", [6]uint64{0, 7, 23}, kill},
		{"tgkill", [6]uint64{1 | 1<<32, 7, 23}, kill},
		{"tgkill", [6]uint64{0xffffffff, 1, 9}, kill},
		{"clone", [6]uint64{0x3d0f00}, allow}, // the Go runtime's flags
		{"clone", [6]uint64{cloneThread | cloneVM}, allow},
		{"clone", [6]uint64{cloneThread}, kill},
		{"clone", [6]uint64{cloneVM}, kill},
		{"clone", [6]uint64{17}, kill}, // SIGCHLD only: fork
		{"clone", [6]uint64{0}, kill},
		{"mmap", [6]uint64{0, 4096, 1, 0x22}, allow},
		{"mmap", [6]uint64{0, 4096, 3, 0x22}, allow},
		{"mmap", [6]uint64{0, 4096, 0, 0x22}, allow},        // the runtime's reservations
		{"mmap", [6]uint64{1 << 30, 4096, 3, 0x32}, allow},  // ... and its fixed maps
		{"mmap", [6]uint64{0, 4096, 3, 0x02, 4}, allow},     // private file mapping
		{"mmap", [6]uint64{0, 4096, 1, 0x01, 4}, allow},     // the model, read-only shared
		{"mmap", [6]uint64{0, 4096, 1, 0x11, 4}, allow},     // ... at a fixed address
		{"mmap", [6]uint64{0, 4096, 3, 0x21}, kill},         // shared anonymous memory
		{"mmap", [6]uint64{0, 4096, 1, 0x21}, kill},         // ... even read-only
		{"mmap", [6]uint64{0, 4096, 3, 0x01, 4}, kill},      // shared writable file
		{"mmap", [6]uint64{0, 4096, 1, 0x03, 4}, kill},      // MAP_SHARED_VALIDATE
		{"mmap", [6]uint64{0, 4096, 3, 0x122}, kill},        // MAP_GROWSDOWN escapes RLIMIT_DATA
		{"mmap", [6]uint64{0, 4096, 3, 0x40022}, kill},      // MAP_HUGETLB
		{"mmap", [6]uint64{0, 4096, 3, 0x8022}, kill},       // MAP_POPULATE
		{"mmap", [6]uint64{0, 4096, 3, 0x2022}, kill},       // MAP_LOCKED
		{"mmap", [6]uint64{0, 4096, 3, 0x4022}, kill},       // MAP_NORESERVE
		{"mmap", [6]uint64{0, 4096, 3, 0x20}, kill},         // neither private nor shared
		{"mmap", [6]uint64{0, 4096, 3, 0x22 | 1<<32}, kill}, // a stray high flag bit
		{"mmap", [6]uint64{0, 4096, 5, 0x22}, kill},
		{"mmap", [6]uint64{0, 4096, 4, 1}, kill},
		{"mmap", [6]uint64{0, 4096, 1 << 32, 1}, kill},
		{"mmap", [6]uint64{0, 4096, 0x01000003, 0x22}, kill}, // PROT_GROWSDOWN
		{"mremap", [6]uint64{0, 4096, 1 << 30, 1}, kill},
		{"memfd_create", [6]uint64{0, 0}, kill},
		{"openat", [6]uint64{}, Errno(syscall.EACCES)},
		{"clone3", [6]uint64{}, Errno(syscall.ENOSYS)},
	}
	for _, c := range cases {
		if got := eval(t, p, Call{Nr: nr(t, p, c.name), Args: c.args}); got != c.want {
			t.Errorf("%s(%#x): got %v, want %v", c.name, c.args[:3], got, c.want)
		}
	}
	s1 := compile(t, arch, StageLoading, false)
	for _, c := range []struct {
		arg0 uint64
		want Action
	}{{1, allow}, {0, kill}, {2, kill}, {1 << 32, kill}} {
		if got := eval(t, s1, Call{Nr: nr(t, s1, "seccomp"), Args: [6]uint64{c.arg0}}); got != c.want {
			t.Errorf("stage 1 seccomp(%#x): got %v, want %v", c.arg0, got, c.want)
		}
	}
}

// TestForbidden checks that every forbidden call meets the default action
// in stage 2, and that calls on no list are killed or logged.
func TestForbidden(t *testing.T) {
	for _, arch := range []string{"amd64", "arm64"} {
		for _, log := range []bool{false, true} {
			p := compile(t, arch, StageServing, log)
			for _, name := range forbidden {
				n, ok := p.Arch.Number(name)
				if !ok {
					continue // arm64 has no fork, vfork, open
				}
				for _, args := range [][6]uint64{{}, {1, 1, 1, 1, 1, 1}, {^uint64(0), 0x10100, 4}} {
					if got := eval(t, p, Call{Nr: n, Args: args}); got != p.DefaultAction {
						t.Errorf("%s stage 2 (log %v): %s%v: got %v, want %v", arch, log, name, args, got, p.DefaultAction)
					}
				}
			}
		}
	}
}

// TestEveryNumber runs every system call number of the table through the
// program: exactly the listed ones get a non-default action.
func TestEveryNumber(t *testing.T) {
	for _, arch := range []string{"amd64", "arm64"} {
		for _, st := range []Stage{StageLoading, StageServing} {
			p := compile(t, arch, st, false)
			listed := map[int]Rule{}
			for _, r := range p.Rules {
				listed[nr(t, p, r.Name)] = r
			}
			for n := 0; n < 600; n++ {
				got := eval(t, p, Call{Nr: n})
				r, ok := listed[n]
				switch {
				case !ok && got != ActKillProcess:
					t.Errorf("%s %v: unlisted call %d (%s): got %v", arch, st, n, p.Arch.SyscallName(n), got)
				case ok && len(r.Conds) == 0 && got != r.Action:
					t.Errorf("%s %v: %s: got %v, want %v", arch, st, r.Name, got, r.Action)
				}
			}
		}
	}
}

// TestPrologue checks the architecture guard of both architectures and
// amd64's x32 guard: a call made through another ABI is killed even in
// log mode, whatever its number.
func TestPrologue(t *testing.T) {
	const (
		auditI386    = 0x40000003
		auditX86_64  = 0xc000003e
		auditARM     = 0x40000028
		auditAArch64 = 0xc00000b7
	)
	for _, c := range []struct {
		arch      string
		foreign   []uint32
		x32       Action // the action for read's number with the x32 bit set
		negative  Action // the action for call number -1
		wantAudit uint32
	}{
		{"amd64", []uint32{auditI386, auditAArch64, auditARM}, ActKillProcess, ActKillProcess, auditX86_64},
		// arm64 has no x32 ABI: a number with bit 30 set is just a number no
		// rule lists, and gets the default action (log here).
		{"arm64", []uint32{auditARM, auditX86_64, auditI386}, ActLog, ActLog, auditAArch64},
	} {
		p := compile(t, c.arch, StageServing, true)
		if p.Arch.AuditArch != c.wantAudit {
			t.Errorf("%s: audit arch %#x, want %#x", c.arch, p.Arch.AuditArch, c.wantAudit)
		}
		read := nr(t, p, "read")
		cases := []struct {
			c    Call
			want Action
		}{
			{Call{Nr: read}, ActAllow},
			{Call{Nr: read | 0x40000000}, c.x32},
			{Call{Nr: -1}, c.negative},
			{Call{Nr: 100000}, ActLog},
		}
		for _, f := range c.foreign {
			cases = append(cases, struct {
				c    Call
				want Action
			}{Call{Nr: read, AuditArch: f}, ActKillProcess})
		}
		for _, k := range cases {
			if got := eval(t, p, k.c); got != k.want {
				t.Errorf("%s %+v: got %v, want %v", c.arch, k.c, got, k.want)
			}
		}
	}
}

// TestServingSize keeps stage 2 within the budget and a subset of
// stage 1 (stacking cannot widen, but a call stage 1 kills is a bug).
func TestServingSize(t *testing.T) {
	for _, arch := range []string{"amd64", "arm64"} {
		s2 := compile(t, arch, StageServing, false)
		if len(s2.Rules) > 30 {
			t.Errorf("%s: stage 2 has %d rules, want at most 30", arch, len(s2.Rules))
		}
		s1 := compile(t, arch, StageLoading, false)
		in1 := map[string]bool{}
		for _, r := range s1.Rules {
			in1[r.String()] = true
		}
		for _, r := range s2.Rules {
			if !in1[r.String()] {
				t.Errorf("%s: stage 2 rule %q is not in stage 1", arch, r)
			}
		}
	}
}

func TestBadOptions(t *testing.T) {
	cases := []struct {
		o    Options
		want string
	}{
		{Options{Arch: "mips", Stage: StageServing, SelfPid: 1}, "no allow-lists"},
		{Options{Arch: "amd64", Stage: 3, SelfPid: 1}, "unknown stage"},
		{Options{Arch: "amd64", Stage: StageServing}, "self pid"},
	}
	for _, c := range cases {
		if _, err := Compile(c.o); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: got %v, want error containing %q", c.o, err, c.want)
		}
	}
	a, _ := LookupArch("amd64")
	for _, rules := range [][]Rule{
		{Allow("read"), Allow("read")},
		{AllowIf("read", Cond{Arg: 0, Op: OpEqual, Value: 1}), Allow("write"), AllowIf("read", Cond{Arg: 0, Op: OpEqual, Value: 2})},
		{Allow("no_such_call")},
		{AllowIf("read", Cond{Arg: 6, Op: OpEqual})},
		{AllowIf("read", Cond{Arg: 0, Op: 9, Value: 1})},
	} {
		if _, err := assemble(a, rules, ActKillProcess); err == nil {
			t.Errorf("assemble %v: no error", rules)
		}
	}
}
