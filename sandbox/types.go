package sandbox

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// WorkerFlag is the argument that makes the lisa binary run as a worker.
const WorkerFlag = "--sandbox-worker"

// ModelPath is the model's path inside the worker's new root.
const ModelPath = "/model"

// MaxShards bounds the files of a split model the worker is given: the
// first shard and at most MaxShards-1 further ones.
const MaxShards = 64

// ShardPath is the path, inside the worker's new root, of the model's
// shard no (1-based): ModelPath for the first, "/model-2", "/model-3", …
// for the further shards of a split model.
func ShardPath(no int) string {
	if no <= 1 {
		return ModelPath
	}
	return ModelPath + "-" + strconv.Itoa(no)
}

// Fixed file descriptors in the worker.
const (
	// FDIPC is the worker's end of the broker's socketpair.
	FDIPC = 3
	// FDModel is the verified, read-only model (the first shard of a
	// split model); further shards follow it, at fds 5, 6, ….
	FDModel = 4
)

// ErrUnsupported is returned where the sandbox cannot exist (not Linux).
var ErrUnsupported = errors.New("sandbox: unsupported on this operating system (Linux only)")

// Config tells Start how to run one worker.
type Config struct {
	// Enabled turns the sandbox on. Off, the worker runs unsandboxed and
	// the report says so loudly.
	Enabled bool
	// ModelPath is the model's host path; the worker bind-mounts it.
	ModelPath string
	// Model is the model the broker opened and verified, read-only; it
	// becomes the worker's fd 4.
	Model *os.File
	// ShardPaths are the host paths of a split model's further shards
	// (shards 2, 3, … in order; none for a model in one file), and Shards
	// the files the broker opened from them, read-only. Shard i becomes
	// the worker's fd 5+i, bind-mounted as ShardPath(i+2). At most
	// MaxShards-1.
	ShardPaths []string
	Shards     []*os.File
	// MemoryLimit is memory_limit_bytes: RLIMIT_DATA, the Go soft memory
	// limit (below it) and, in a cgroup, the cgroup's memory limit. 0 means
	// no limit.
	MemoryLimit int64
	// Cgroup places the worker in a cgroup with memory, swap and pids
	// limits, and Start fails when it cannot.
	Cgroup bool
	// CgroupAuto places the worker in such a cgroup when one can be made
	// (a delegated or root-owned hierarchy), and otherwise starts it
	// without one; the broker's log says which (sandbox_cgroup "auto").
	CgroupAuto bool
	// PidsLimit bounds the worker's threads: the cgroup pids limit and
	// RLIMIT_NPROC (default max(64, 2×Threads+32)).
	PidsLimit int
	// SeccompLog logs instead of killing for calls not on the allow-lists.
	SeccompLog bool
	// Threads is passed to the worker (GOMAXPROCS); 0 leaves the default.
	Threads int
	// Kernels forces the worker's kernel path ("generic", "avx2",
	// "avx512"), passed as LISA_KERNELS, the one variable of the worker's
	// otherwise empty environment; "" lets the worker choose.
	Kernels string
	// Executable is the binary to re-execute (default /proc/self/exe).
	Executable string
	// ExecArgs come before WorkerFlag on the command line (tests use them
	// to select a helper test function).
	ExecArgs []string
	// Args are extra worker arguments, after the sandbox's own.
	Args []string
	// Stderr receives the worker's stderr, line by line (nil: discarded;
	// the tail is kept for Exit either way).
	Stderr io.Writer

	// testCloneflags are added to the clone flags (tests make the clone
	// fail with them, as a host without user namespaces would).
	testCloneflags uintptr
	// testOff switches layers off (offNamespaces, offRoot, …): only this
	// package's mutation tests set it, to show each layer is what stops
	// some probe.
	testOff []string
}

// Layer is one isolation layer as requested and as applied.
type Layer struct {
	Name      string `json:"name"`
	Requested bool   `json:"requested"`
	Applied   bool   `json:"applied"`
	Detail    string `json:"detail,omitempty"`
}

// String renders the layer on one line, e.g. "landlock: applied (ABI 7)".
func (l Layer) String() string {
	s := l.Name + ": "
	switch {
	case l.Applied:
		s += "applied"
	case l.Requested:
		s += "NOT APPLIED"
	default:
		s += "not applied"
	}
	if l.Detail != "" {
		s += " (" + l.Detail + ")"
	}
	return s
}

// Report lists the layers a side of the sandbox set up. The worker sends
// its report in its ready message.
type Report struct {
	Layers []Layer `json:"layers"`

	wc      WorkerConfig // set by LockDown for EnterServing
	locked  bool
	serving bool
}

// Add appends a layer.
func (r *Report) Add(name string, requested, applied bool, detail string) {
	r.Layers = append(r.Layers, Layer{Name: name, Requested: requested, Applied: applied, Detail: detail})
}

// Complete reports whether every requested layer was applied.
func (r Report) Complete() bool {
	for _, l := range r.Layers {
		if l.Requested && !l.Applied {
			return false
		}
	}
	return true
}

// Warnings returns one line per requested layer that was not applied, and
// a line for a sandbox that is switched off.
func (r Report) Warnings() []string {
	var w []string
	for _, l := range r.Layers {
		if (l.Requested && !l.Applied) || (l.Name == LayerSandbox && !l.Applied) {
			w = append(w, "WARNING: "+l.String())
		}
	}
	return w
}

// LayerSandbox is the layer name that records whether the sandbox is on.
const LayerSandbox = "sandbox"

// Exit is how a worker ended.
type Exit struct {
	// Code is the exit status, or -1 when a signal ended the worker.
	Code int
	// Signal is the signal that ended it, 0 if none.
	Signal syscall.Signal
	// Seccomp is true when the wait status says SIGSYS (a seccomp kill).
	// The worker's stderr never sets it: the worker writes that.
	Seccomp bool
	// Syscall names the killed call when the kernel's audit record of the
	// kill was read (the kernel log is readable, the record not
	// rate-limited).
	Syscall string
	// StderrTail is the end of the worker's stderr (at most 4 KiB).
	StderrTail string
	// Reason is the first line of stderr that said why the worker died
	// ("fatal error: …", "panic: …", "SIGSYS: …"), if any.
	Reason string
	// Err is set when waiting failed.
	Err error
}

// String renders the death as one log line.
func (e Exit) String() string {
	var b strings.Builder
	b.WriteString("worker ")
	switch {
	case e.Err != nil:
		fmt.Fprintf(&b, "wait failed: %v", e.Err)
	case e.Seccomp:
		b.WriteString("killed by seccomp (SIGSYS)")
		if e.Syscall != "" {
			b.WriteString(": blocked system call " + e.Syscall)
		}
	case e.Signal != 0:
		fmt.Fprintf(&b, "killed by signal %d (%v)", int(e.Signal), e.Signal)
	default:
		fmt.Fprintf(&b, "exited with status %d", e.Code)
	}
	reason := e.Reason
	if reason == "" {
		reason = crashReason(e.StderrTail)
	}
	if reason != "" {
		b.WriteString("; stderr: " + strconv.Quote(reason))
	}
	return b.String()
}

// crashReason picks the most telling line of a stderr tail: a Go fatal
// error or panic line when there is one, otherwise the last line.
func crashReason(tail string) string {
	lines := strings.Split(strings.TrimSpace(tail), "\n")
	for _, l := range lines {
		if isReason(l) {
			return limitLine(l)
		}
	}
	return limitLine(lines[len(lines)-1])
}

func limitLine(l string) string {
	if len(l) > 200 {
		return l[:200] + "…"
	}
	return l
}

// WorkerConfig is what the worker learns from its command line.
type WorkerConfig struct {
	// Enabled is false when the broker runs the worker unsandboxed.
	Enabled bool
	// HostModelPath is the model's path on the host, for the bind mount.
	HostModelPath string
	// HostShardPaths are the host paths of a split model's further
	// shards, in order (fds 5, 6, …).
	HostShardPaths []string
	// MemoryLimit is memory_limit_bytes (0: none).
	MemoryLimit int64
	// SeccompLog selects log-instead-of-kill filters.
	SeccompLog bool
	// Threads is the requested GOMAXPROCS (0: default).
	Threads int
	// PidsLimit bounds the worker's threads with RLIMIT_NPROC (0: none).
	PidsLimit int
	// Args are the arguments after the sandbox's own.
	Args []string

	// off are the layers a test switched off (Config.testOff).
	off map[string]bool
	// hooks are the probe worker's points in the lock-down.
	hooks *lockHooks
}

// lockHooks run inside LockDown, for probes that must see the worker
// between two layers.
type lockHooks struct {
	beforeLandlock func()
	afterLandlock  func(rep *Report)
}

// workerArgs renders the flags WorkerFlags parses.
func workerArgs(cfg Config) []string {
	a := []string{WorkerFlag,
		"-sandbox=" + strconv.FormatBool(cfg.Enabled),
		"-sandbox-model=" + cfg.ModelPath,
		"-sandbox-memory=" + strconv.FormatInt(cfg.MemoryLimit, 10),
		"-sandbox-seccomp-log=" + strconv.FormatBool(cfg.SeccompLog),
		"-sandbox-threads=" + strconv.Itoa(cfg.Threads),
		"-sandbox-pids=" + strconv.Itoa(cfg.PidsLimit)}
	for _, p := range cfg.ShardPaths {
		a = append(a, "-sandbox-shard="+p)
	}
	if len(cfg.testOff) > 0 {
		a = append(a, "-sandbox-test-off="+strings.Join(cfg.testOff, ","))
	}
	a = append(a, "--")
	return append(a, cfg.Args...)
}

// WorkerFlags parses the arguments Start put on the worker's command line.
// args may start with WorkerFlag (os.Args[1:] of the worker) or not.
func WorkerFlags(args []string) (WorkerConfig, error) {
	if len(args) > 0 && args[0] == WorkerFlag {
		args = args[1:]
	}
	var wc WorkerConfig
	fs := flag.NewFlagSet("sandbox-worker", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.BoolVar(&wc.Enabled, "sandbox", true, "run sandboxed")
	fs.StringVar(&wc.HostModelPath, "sandbox-model", "", "the model's host path")
	fs.Int64Var(&wc.MemoryLimit, "sandbox-memory", 0, "memory limit in bytes")
	fs.BoolVar(&wc.SeccompLog, "sandbox-seccomp-log", false, "log instead of kill")
	fs.IntVar(&wc.Threads, "sandbox-threads", 0, "GOMAXPROCS")
	fs.IntVar(&wc.PidsLimit, "sandbox-pids", 0, "RLIMIT_NPROC")
	fs.Func("sandbox-shard", "a further shard's host path (repeated, in order)", func(p string) error {
		if len(wc.HostShardPaths) >= MaxShards-1 {
			return fmt.Errorf("more than %d shards", MaxShards)
		}
		wc.HostShardPaths = append(wc.HostShardPaths, p)
		return nil
	})
	off := fs.String("sandbox-test-off", "", "layers switched off by a test")
	if err := fs.Parse(args); err != nil {
		return WorkerConfig{}, fmt.Errorf("sandbox: worker flags: %w", err)
	}
	switch {
	case wc.Enabled && !strings.HasPrefix(wc.HostModelPath, "/"):
		return WorkerConfig{}, fmt.Errorf("sandbox: worker flag -sandbox-model: %q is not an absolute path", wc.HostModelPath)
	case wc.Enabled && !allAbsolute(wc.HostShardPaths):
		return WorkerConfig{}, fmt.Errorf("sandbox: worker flag -sandbox-shard: %q are not all absolute paths", wc.HostShardPaths)
	case wc.MemoryLimit < 0:
		return WorkerConfig{}, fmt.Errorf("sandbox: worker flag -sandbox-memory: %d is negative", wc.MemoryLimit)
	case wc.Threads < 0 || wc.Threads > 1024:
		return WorkerConfig{}, fmt.Errorf("sandbox: worker flag -sandbox-threads: %d out of range 0–1024", wc.Threads)
	case wc.PidsLimit < 0:
		return WorkerConfig{}, fmt.Errorf("sandbox: worker flag -sandbox-pids: %d is negative", wc.PidsLimit)
	}
	if *off != "" {
		wc.off = map[string]bool{}
		for _, l := range strings.Split(*off, ",") {
			switch l {
			case offNamespaces, offRoot, offLandlock, offSeccomp1, offSeccomp2, offRlimits:
				wc.off[l] = true
			default:
				return WorkerConfig{}, fmt.Errorf("sandbox: worker flag -sandbox-test-off: unknown layer %q", l)
			}
		}
	}
	wc.Args = fs.Args()
	return wc, nil
}

// allAbsolute reports whether every path is absolute.
func allAbsolute(paths []string) bool {
	for _, p := range paths {
		if !strings.HasPrefix(p, "/") {
			return false
		}
	}
	return true
}

// ErrModelSwapped means the model in the worker's root is not the file the
// broker verified: its path was pointed elsewhere after verification.
var ErrModelSwapped = errors.New("sandbox: model swapped after verification")
