package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// namespaceFlags are the seven namespaces the worker gets.
const namespaceFlags = unix.CLONE_NEWUSER | unix.CLONE_NEWNS | unix.CLONE_NEWPID |
	unix.CLONE_NEWNET | unix.CLONE_NEWIPC | unix.CLONE_NEWUTS | unix.CLONE_NEWCGROUP

// minMemoryLimit is the smallest memory_limit_bytes accepted: under
// RLIMIT_DATA a Go worker needs about 96 MiB before it has done anything
// useful (measured: 64 MiB dies loading a 1 MB model).
const minMemoryLimit = 128 << 20

// Process is a running worker.
type Process struct {
	// Conn is the broker's end of the socketpair (the worker's fd 3).
	Conn *os.File
	// Pid is the worker's pid in the broker's PID namespace.
	Pid int
	// Report lists the layers the broker set up (namespaces, cgroups, or
	// the warning that the sandbox is off).
	Report Report

	proc  *os.Process
	tail  *tailWriter
	audit *kmsgWatch
	cg    *cgroupPlan
	done  chan struct{}
	once  sync.Once
	exit  Exit

	sandboxed bool
}

// Start runs one worker as described by cfg and returns once it runs. The
// worker is started, waited for and reaped by one goroutine locked to its
// OS thread, so the parent-death signal (SIGKILL) fires when the broker
// dies, not when some Go thread of the broker exits.
func Start(cfg Config) (*Process, error) {
	if err := checkConfig(&cfg); err != nil {
		return nil, err
	}
	var rep Report
	var cg *cgroupPlan
	var cgNote string
	if cfg.Enabled && (cfg.Cgroup || cfg.CgroupAuto) && !cfg.off(offNamespaces) {
		var err error
		cg, err = planCgroup(cfg.MemoryLimit, cfg.PidsLimit, cfg.Cgroup)
		switch {
		case err != nil && cfg.Cgroup:
			return nil, err
		case err != nil:
			cgNote = "sandbox_cgroup auto: no cgroup for the worker (" + err.Error() + ")"
			rep.Add("cgroup", false, false, cgNote)
		default:
			rep.Layers = append(rep.Layers, cg.layers...)
			if cfg.CgroupAuto && !cfg.Cgroup {
				cgNote = "sandbox_cgroup auto: the worker runs in a cgroup with " + cg.summary()
			}
		}
	} else {
		rep.Add("cgroup", cfg.Cgroup, false, "sandbox_cgroup off")
	}
	threads := threadBound(cfg, cg)
	rep.Layers = append(rep.Layers, threads)
	p, err := start(cfg, cg, &rep)
	if err != nil {
		cg.remove()
		return nil, err
	}
	if cgNote != "" {
		p.tail.logLine("sandbox: " + cgNote + "\n")
	}
	if cfg.Enabled && !threads.Applied {
		p.tail.logLine("sandbox: WARNING: " + threads.String() + "\n")
	}
	return p, nil
}

// threadBound reports what bounds the worker's threads: the cgroup's pids
// limit, or RLIMIT_NPROC, which the kernel enforces only for a worker
// whose uid is not the host's root.
func threadBound(cfg Config, cg *cgroupPlan) Layer {
	l := Layer{Name: "thread limit", Requested: cfg.Enabled}
	switch {
	case !cfg.Enabled:
		l.Detail = "sandbox off"
	case cg != nil && cg.hasPids():
		l.Applied, l.Detail = true, "cgroup pids.max="+strconv.Itoa(cfg.PidsLimit)
	case os.Geteuid() != 0 && !cfg.off(offRlimits):
		l.Applied, l.Detail = true, "RLIMIT_NPROC="+strconv.Itoa(cfg.PidsLimit)+" in the worker's user namespace"
	default:
		l.Detail = "NOTHING BOUNDS THE WORKER'S THREADS: no cgroup pids limit, and RLIMIT_NPROC does not bind a worker whose uid is the host's root; " +
			"run lisa as an unprivileged user, or give it a delegated cgroup (sandbox_cgroup)"
	}
	return l
}

// off reports whether a test switched layer off.
func (cfg Config) off(layer string) bool {
	for _, l := range cfg.testOff {
		if l == layer {
			return true
		}
	}
	return false
}

func checkConfig(cfg *Config) error {
	switch {
	case cfg.Model == nil:
		return errors.New("sandbox: config Model: no model file")
	case cfg.Enabled && (len(cfg.ModelPath) == 0 || cfg.ModelPath[0] != '/'):
		return fmt.Errorf("sandbox: config ModelPath: %q is not an absolute path", cfg.ModelPath)
	case len(cfg.Shards) != len(cfg.ShardPaths):
		return fmt.Errorf("sandbox: config Shards: %d files for %d ShardPaths", len(cfg.Shards), len(cfg.ShardPaths))
	case len(cfg.Shards) > MaxShards-1:
		return fmt.Errorf("sandbox: config Shards: %d further shards; at most %d", len(cfg.Shards), MaxShards-1)
	case cfg.Enabled && !allAbsolute(cfg.ShardPaths):
		return fmt.Errorf("sandbox: config ShardPaths: %q are not all absolute paths", cfg.ShardPaths)
	case cfg.MemoryLimit < 0 || (cfg.MemoryLimit > 0 && cfg.MemoryLimit < minMemoryLimit):
		return fmt.Errorf("sandbox: config MemoryLimit: %d bytes; want 0 (none) or at least %d", cfg.MemoryLimit, minMemoryLimit)
	case cfg.Cgroup && cfg.CgroupAuto:
		return errors.New("sandbox: config Cgroup and CgroupAuto: give one")
	case cfg.Threads < 0 || cfg.Threads > 1024:
		return fmt.Errorf("sandbox: config Threads: %d out of range 0–1024", cfg.Threads)
	case cfg.PidsLimit < 0:
		return fmt.Errorf("sandbox: config PidsLimit: %d is negative", cfg.PidsLimit)
	case cfg.Kernels != "" && cfg.Kernels != "generic" && cfg.Kernels != "avx2" && cfg.Kernels != "avx512":
		return fmt.Errorf("sandbox: config Kernels: %q; want generic, avx2, avx512 or empty", cfg.Kernels)
	}
	for i, f := range cfg.Shards {
		if f == nil {
			return fmt.Errorf("sandbox: config Shards[%d]: no file", i)
		}
	}
	if cfg.PidsLimit == 0 {
		// The runtime needs a thread per busy compute thread, plus sysmon,
		// the template thread and a few in system calls.
		threads := cfg.Threads
		if threads == 0 {
			threads = runtime.NumCPU()
		}
		cfg.PidsLimit = max(64, 2*threads+32)
	}
	if cfg.Executable == "" {
		cfg.Executable = "/proc/self/exe"
	}
	return nil
}

// workerEnv is the worker's whole environment: empty, or the kernel path
// checkConfig allowed.
func workerEnv(cfg Config) []string {
	if cfg.Kernels == "" {
		return []string{}
	}
	return []string{"LISA_KERNELS=" + cfg.Kernels}
}

// start creates the pipes and socketpair and runs the worker.
func start(cfg Config, cg *cgroupPlan, rep *Report) (*Process, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("sandbox: socketpair: %w", err)
	}
	// The broker's end is non-blocking, so it is pollable and honours
	// deadlines; the worker's end stays blocking.
	if err := unix.SetNonblock(fds[0], true); err != nil {
		unix.Close(fds[0])
		unix.Close(fds[1])
		return nil, fmt.Errorf("sandbox: socketpair: %w", err)
	}
	conn, workerEnd := os.NewFile(uintptr(fds[0]), "ipc"), os.NewFile(uintptr(fds[1]), "ipc-worker")
	defer workerEnd.Close()
	gateR, gateW, err := os.Pipe()
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("sandbox: gate pipe: %w", err)
	}
	defer gateR.Close()
	defer gateW.Close()
	errR, errW, err := os.Pipe()
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("sandbox: stderr pipe: %w", err)
	}
	cmd := &exec.Cmd{
		Path:        cfg.Executable,
		Args:        append(append([]string{cfg.Executable}, cfg.ExecArgs...), workerArgs(cfg)...),
		Env:         workerEnv(cfg),
		Dir:         "/",
		Stdin:       gateR,
		Stderr:      errW,
		ExtraFiles:  append([]*os.File{workerEnd, cfg.Model}, cfg.Shards...),
		SysProcAttr: sysProcAttr(cfg, cg),
	}
	p := &Process{Conn: conn, tail: newTailWriter(cfg.Stderr), cg: cg, done: make(chan struct{}),
		sandboxed: cfg.Enabled}
	go p.tail.drain(errR)
	if err := p.run(cmd); err != nil {
		errW.Close()
		conn.Close()
		return nil, startError(cfg, err)
	}
	errW.Close()
	if cfg.Enabled {
		rep.Add("clone namespaces", true, true, "user, mnt, pid, net, ipc, uts, cgroup; uid/gid 0 → "+
			fmt.Sprintf("%d/%d", os.Getuid(), os.Getgid()))
	} else {
		rep.Add(LayerSandbox, false, false, "sandbox_enabled is false: the worker runs UNSANDBOXED")
		p.tail.logLine("sandbox: WARNING: sandbox_enabled is false: worker " + strconv.Itoa(p.Pid) +
			" runs UNSANDBOXED (no namespaces, no filters, full access as this user)\n")
	}
	if err := cg.place(p.Pid); err != nil {
		p.Kill()
		p.Wait()
		return nil, err
	}
	// Closing the gate lets the worker begin its lock-down.
	if err := gateW.Close(); err != nil {
		p.Kill()
		p.Wait()
		return nil, fmt.Errorf("sandbox: release worker: %w", err)
	}
	p.Report = *rep
	return p, nil
}

func sysProcAttr(cfg Config, cg *cgroupPlan) *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if !cfg.Enabled || cfg.off(offNamespaces) {
		return a
	}
	a.Cloneflags = namespaceFlags | cfg.testCloneflags
	a.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}}
	a.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}}
	a.GidMappingsEnableSetgroups = false
	if cg != nil && cg.v2FD >= 0 {
		a.UseCgroupFD = true
		a.CgroupFD = cg.v2FD
	}
	return a
}

func startError(cfg Config, err error) error {
	if cfg.Enabled {
		return fmt.Errorf("sandbox: start worker in new namespaces (user namespaces must be available to this user): %w", err)
	}
	return fmt.Errorf("sandbox: start worker: %w", err)
}

// run starts cmd from a goroutine locked to its OS thread, which then waits
// for the worker; the thread ends only after the worker has been reaped.
func (p *Process) run(cmd *exec.Cmd) error {
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		// Never unlocked: the thread dies with this goroutine, after the
		// worker it is the parent of.
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		p.proc = cmd.Process
		p.Pid = cmd.Process.Pid
		if p.sandboxed {
			p.audit = watchKmsg(p.Pid, p.tail.logLine)
		}
		started <- nil
		werr := cmd.Wait()
		p.finish(cmd.ProcessState, werr)
	}()
	return <-started
}

// finish records how the worker ended and removes its cgroups.
func (p *Process) finish(st *os.ProcessState, werr error) {
	p.tail.wait()
	e := Exit{Code: -1, StderrTail: p.tail.String()}
	if st == nil {
		e.Err = werr
	} else if ws, ok := st.Sys().(syscall.WaitStatus); ok {
		switch {
		case ws.Signaled():
			e.Signal = ws.Signal()
			e.Seccomp = e.Signal == syscall.SIGSYS
		case ws.Exited():
			e.Code = ws.ExitStatus()
		}
	}
	// Only what the kernel says counts: the wait status for SIGSYS and the
	// audit record for the call. The worker writes its stderr, and a
	// "SIGSYS: bad system call" report there proves nothing.
	e.Reason = p.tail.reason()
	if name := p.audit.stop(e.Seccomp); name != "" && e.Seccomp {
		e.Syscall = name
	}
	p.cg.remove()
	p.exit = e
	close(p.done)
}

// Wait blocks until the worker has ended and returns how. It may be called
// more than once.
func (p *Process) Wait() Exit {
	<-p.done
	p.once.Do(func() { p.Conn.Close() })
	return p.exit
}

// Done returns a channel closed when the worker has ended.
func (p *Process) Done() <-chan struct{} { return p.done }

// Kill sends SIGKILL to the worker (the init of its PID namespace, so
// every thread of it dies).
func (p *Process) Kill() error {
	select {
	case <-p.done:
		return nil
	default:
	}
	if err := p.proc.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("sandbox: kill worker %d: %w", p.Pid, err)
	}
	return nil
}
