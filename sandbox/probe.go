package sandbox

// ProbeResult is the outcome of one escape probe.
type ProbeResult struct {
	Name    string `json:"name"`
	Blocked bool   `json:"blocked"`
	// How says what stopped it ("SIGSYS", "EACCES", …) or, when it was
	// not blocked, what happened.
	How string `json:"how"`
}

// ProbeNames lists the escape probes a locked-down worker attempts, each
// in a fresh worker (a probe may be killed by seccomp).
func ProbeNames() []string {
	return []string{
		"open /etc/passwd", "list /", "read /proc", "open the model for writing",
		"write the model", "create a socket", "connect on loopback",
		"connect to an abstract unix socket", "fork", "clone without CLONE_THREAD",
		"clone3", "exec", "ptrace", "kill the broker's pid", "tgkill another tgid",
		"tkill", "prlimit", "setrlimit", "setuid", "setgid", "mount", "umount2",
		"unshare", "setns", "mmap PROT_EXEC of the model", "mprotect PROT_EXEC",
		"keyctl", "bpf", "perf_event_open", "io_uring_setup", "userfaultfd",
		"process_vm_readv",
	}
}
