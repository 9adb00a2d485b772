package sandbox

// ProbeResult is the outcome of one escape probe.
type ProbeResult struct {
	Name string `json:"name"`
	// Phase is when in the lock-down the probe ran (see ProbePhase).
	Phase   string `json:"phase"`
	Blocked bool   `json:"blocked"`
	// How says what stopped it ("SIGSYS", "EACCES", …) or, when it was
	// not blocked, what happened.
	How string `json:"how"`
	// Evidence says what the verdict rests on: the wait status and the
	// kernel's record of the killed call, the broker's reading of the
	// worker's /proc files, or only the worker's reply.
	Evidence string `json:"evidence,omitempty"`
}

// Probe phases: the point of the lock-down at which a probe runs. A probe
// run before seccomp exercises the layers seccomp would otherwise hide
// (Landlock, the new root, the namespaces); one run while loading
// exercises stage 1 alone.
const (
	// PhaseLandlock is after Landlock, before any seccomp filter.
	PhaseLandlock = "before seccomp"
	// PhaseLoading is under seccomp stage 1, before the model is read.
	PhaseLoading = "loading (stage 1)"
	// PhaseServing is under both stages, as a serving worker.
	PhaseServing = "serving (stage 2)"
)

// Layer names a test can switch off in the worker (see Config.testOff).
const (
	offNamespaces = "namespaces"
	offRoot       = "root"
	offLandlock   = "landlock"
	offSeccomp1   = "seccomp1"
	offSeccomp2   = "seccomp2"
	offRlimits    = "rlimits"
)

// probeSpec describes one escape probe.
type probeSpec struct {
	name  string
	phase string
	// calls are the system calls the probe makes: a seccomp kill blocks
	// it only when the kernel names one of them (a kill for any other
	// call, say the runtime's rt_sigaction after a crash, proves nothing).
	calls []string
	// layers are the layers that block it; with any one of them switched
	// off alone, the probe must get through (the mutation test).
	layers []string
}

// probeSpecs lists every probe in the order RunProbes runs them.
func probeSpecs() []probeSpec {
	s := func(name, phase string, calls []string, layers ...string) probeSpec {
		return probeSpec{name: name, phase: phase, calls: calls, layers: layers}
	}
	open := []string{"openat", "open"}
	return []probeSpec{
		s("open /etc/passwd", PhaseServing, open),
		s("list /", PhaseServing, open),
		s("read /proc", PhaseServing, open),
		s("open the model for writing", PhaseServing, open),
		s("write the model", PhaseServing, []string{"write"}),
		s("create a socket", PhaseServing, []string{"socket"}),
		s("connect on loopback", PhaseServing, []string{"socket", "connect"}),
		s("connect to an abstract unix socket", PhaseServing, []string{"socket", "connect"}),
		s("fork", PhaseServing, []string{"clone", "fork"}),
		s("clone without CLONE_THREAD", PhaseServing, []string{"clone"}),
		s("clone3", PhaseServing, []string{"clone3"}),
		s("exec", PhaseServing, []string{"execve"}),
		s("ptrace", PhaseServing, []string{"ptrace"}),
		s("kill the broker's pid", PhaseServing, []string{"kill"}),
		s("tgkill another tgid", PhaseServing, []string{"tgkill"}),
		s("tkill", PhaseServing, []string{"tkill"}),
		s("prlimit", PhaseServing, []string{"prlimit64"}),
		s("setrlimit", PhaseServing, []string{"setrlimit"}),
		s("setuid", PhaseServing, []string{"setuid"}),
		s("setgid", PhaseServing, []string{"setgid"}),
		s("mount", PhaseServing, []string{"mount"}),
		s("umount2", PhaseServing, []string{"umount2"}),
		s("unshare", PhaseServing, []string{"unshare"}),
		s("setns", PhaseServing, []string{"setns"}),
		s("mmap PROT_EXEC of the model", PhaseServing, []string{"mmap"}),
		s("mprotect PROT_EXEC", PhaseServing, []string{"mprotect"}),
		s("keyctl", PhaseServing, []string{"keyctl"}),
		s("bpf", PhaseServing, []string{"bpf"}),
		s("perf_event_open", PhaseServing, []string{"perf_event_open"}),
		s("io_uring_setup", PhaseServing, []string{"io_uring_setup"}),
		s("userfaultfd", PhaseServing, []string{"userfaultfd"}),
		s("process_vm_readv", PhaseServing, []string{"process_vm_readv"}),
		s("map shared memory past the cap", PhaseServing, []string{"mmap"}),
		s("grow a mapping with mremap", PhaseServing, []string{"mremap"}),
		s("memfd_create", PhaseServing, []string{"memfd_create"}),
		s("map private memory past the cap", PhaseServing, []string{"mmap"}, offRlimits),
		s("fcntl F_SETOWN on the IPC socket", PhaseServing, []string{"fcntl"}, offSeccomp2),
		s("thread bomb", PhaseServing, []string{"clone"}),
		s("create a socket while loading", PhaseLoading, []string{"socket"}, offSeccomp1),
		s("list / past seccomp (Landlock)", PhaseLandlock, open, offLandlock),
		s("stat a host file past seccomp (root)", PhaseLandlock, []string{"newfstatat", "fstatat"}, offRoot, offNamespaces),
		s("UDP to the host's loopback past seccomp (network namespace)", PhaseLandlock, []string{"socket", "sendto"}, offNamespaces),
		// The network namespace stops it too (its loopback is down).
		s("TCP connect past socket (Landlock network rule)", PhaseLandlock, []string{"socket", "connect"}),
		s("connect to an abstract unix socket past seccomp (Landlock scope)", PhaseLandlock, []string{"socket", "connect"}, offLandlock),
		s("signal a process outside the domain (Landlock scope)", PhaseLandlock, []string{"kill"}, offLandlock),
	}
}

// lookupProbe returns the spec of the named probe.
func lookupProbe(name string) (probeSpec, bool) {
	for _, s := range probeSpecs() {
		if s.name == name {
			return s, true
		}
	}
	return probeSpec{}, false
}

// ProbeNames lists the escape probes a locked-down worker attempts, each
// in a fresh worker (a probe may be killed by seccomp).
func ProbeNames() []string {
	var n []string
	for _, s := range probeSpecs() {
		n = append(n, s.name)
	}
	return n
}
