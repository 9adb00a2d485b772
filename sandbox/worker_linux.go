package sandbox

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"

	"github.com/lisa-llm/lisa/sandbox/seccomp"
)

// Worker rlimits besides RLIMIT_DATA.
const (
	// workerNoFile is RLIMIT_NOFILE for a model in one file; each further
	// shard of a split model raises it by one, so the fds the worker may
	// still open stay as many.
	workerNoFile = 64
	workerCore   = 0
	// asReserve is the address space RLIMIT_AS allows beyond the memory
	// limit and the model: the Go runtime reserves about 1.2 GiB of
	// PROT_NONE address space at start (page allocator summaries,
	// scavenger index; measured with Go 1.26 on amd64: VmSize 1.24 GiB
	// with 80 MiB of VmData), which no data limit counts.
	asReserve = 2 << 30
)

// LockDown runs the worker's lock-down (DESIGN.md §2 steps 2–7) in order:
// wait for the broker's go-ahead, build the new root and pivot into it,
// check the model's inode against fd 4 (and each further shard's of a
// split model against fds 5, 6, …), close every other fd, set rlimits and
// the Go memory limit, drop capabilities, set no_new_privs and
// not-dumpable, apply Landlock, install seccomp stage 1. It returns the
// model's files re-opened inside the new root, the first shard first (one
// file for a model that is not split). Any failure is fatal to the
// worker: the caller must exit without reading the model.
//
// With wc.Enabled false it only waits for the go-ahead and closes stray
// fds, and the report says the worker is unsandboxed.
func LockDown(wc WorkerConfig) ([]*os.File, Report, error) {
	rep := Report{wc: wc, locked: true}
	if err := waitGate(); err != nil {
		return nil, rep, err
	}
	// A timer starts the runtime's poller (epoll_create1, eventfd2) now,
	// before any filter: neither stage has to allow creating it.
	time.Sleep(time.Microsecond)
	nfiles := 1 + len(wc.HostShardPaths)
	stray, strayNames, err := strayFDs(FDModel + nfiles - 1)
	if err != nil {
		return nil, rep, err
	}
	if wc.Threads > 0 {
		runtime.GOMAXPROCS(wc.Threads)
	}
	if !wc.Enabled {
		closeFDs(stray)
		rep.Add(LayerSandbox, false, false, "sandbox_enabled is false: the worker runs UNSANDBOXED")
		return modelFDs(nfiles), rep, nil
	}
	off := wc.off
	for _, l := range []string{offNamespaces, offRoot, offLandlock, offSeccomp1, offSeccomp2, offRlimits} {
		if off[l] {
			rep.Add("test: "+l, false, false, "SWITCHED OFF by a test")
		}
	}
	if !off[offNamespaces] {
		if err := checkNamespaces(&rep); err != nil {
			return nil, rep, err
		}
	}
	if err := checkGoDebug(); err != nil {
		return nil, rep, err
	}
	// One *os.File for each model fd only: a second one, once
	// unreferenced, would close the model from its finalizer (a close
	// stage 2 kills).
	var model []*os.File
	// where Landlock finds the model's files
	modelPaths := append([]string{wc.HostModelPath}, wc.HostShardPaths...)
	if off[offNamespaces] || off[offRoot] {
		model = modelFDs(nfiles)
	} else {
		if err := buildRoot(modelPaths); err != nil {
			return nil, rep, err
		}
		if err := checkRoot(nfiles); err != nil {
			return nil, rep, err
		}
		held, checked := ModelPath, ModelPath+" is the file of fd 4"
		if nfiles > 1 {
			held = fmt.Sprintf("the model's %d shards (%s … %s)", nfiles, ModelPath, ShardPath(nfiles))
			checked = fmt.Sprintf("%s … %s are the files of fds %d–%d", ModelPath, ShardPath(nfiles), FDModel, FDModel+nfiles-1)
		}
		rep.Add("root", true, true, "pivot_root into a read-only 16 KiB tmpfs holding only "+held)
		for no := 1; no <= nfiles; no++ {
			f, err := checkModel(no)
			if err != nil {
				return nil, rep, err
			}
			model = append(model, f)
			modelPaths[no-1] = ShardPath(no)
		}
		rep.Add("model inode check", true, true, checked)
	}
	closeFDs(stray)
	closed := "none closed"
	if len(stray) > 0 {
		closed = "closed " + strings.Join(strayNames, ", ")
	}
	rep.Add("file descriptors", true, true, fmt.Sprintf("0–%d only; %s", FDModel+nfiles-1, closed))
	if !off[offRlimits] {
		if err := setLimits(wc, &rep); err != nil {
			return nil, rep, err
		}
	}
	if err := dropPrivileges(off[offNamespaces]); err != nil {
		return nil, rep, err
	}
	rep.Add("capabilities", true, true, "all sets empty (bounding, ambient, effective, permitted, inheritable)")
	rep.Add("no_new_privs", true, true, "")
	rep.Add("not dumpable", true, true, "")
	if wc.hooks != nil && wc.hooks.beforeLandlock != nil {
		wc.hooks.beforeLandlock()
	}
	if !off[offLandlock] {
		applyLandlock(&rep, modelPaths)
	}
	if wc.hooks != nil && wc.hooks.afterLandlock != nil {
		wc.hooks.afterLandlock(&rep)
	}
	if !off[offSeccomp1] {
		if err := installStage(seccomp.StageLoading, wc, &rep); err != nil {
			return nil, rep, err
		}
	}
	return model, rep, nil
}

// EnterServing stacks seccomp stage 2 on stage 1. rep must be the report
// LockDown returned; the new layer is added to it.
func EnterServing(rep *Report) error {
	if !rep.locked {
		return errors.New("sandbox: EnterServing needs the report LockDown returned")
	}
	if !rep.wc.Enabled {
		rep.Add("seccomp stage 2", false, false, "sandbox off")
		return nil
	}
	if !rep.wc.off[offSeccomp2] {
		if err := installStage(seccomp.StageServing, rep.wc, rep); err != nil {
			return err
		}
	}
	rep.serving = true
	return nil
}

// waitGate reads fd 0 to its end: the broker closes it once the worker is
// in its cgroups.
func waitGate() error {
	var b [16]byte
	for {
		n, err := unix.Read(0, b[:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return fmt.Errorf("sandbox: wait for the broker's go-ahead on fd 0: %w", err)
		}
		if n == 0 {
			return nil
		}
	}
}

// checkNamespaces confirms the worker is pid 1 and uid 0 of its own
// namespaces, as Start made it.
func checkNamespaces(rep *Report) error {
	if os.Getpid() != 1 || os.Getuid() != 0 {
		return fmt.Errorf("sandbox: not in fresh namespaces (pid %d, uid %d; want 1, 0)", os.Getpid(), os.Getuid())
	}
	rep.Add("namespaces", true, true, "pid 1, uid 0 in new user, mnt, pid, net, ipc, uts, cgroup namespaces")
	return nil
}

// requiredGoDebug are the runtime settings the allow-lists assume: without
// them the Go runtime re-reads the host's cgroup CPU limits every second
// (open files on the host, sched_getaffinity, openat), which stage 2 kills.
func requiredGoDebug() []string { return []string{"updatemaxprocs=0", "containermaxprocs=0"} }

// checkGoDebug refuses to lock down a binary built without the //go:debug
// lines of requiredGoDebug in its main package.
func checkGoDebug() error {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return errors.New("sandbox: no build information to check the Go runtime settings")
	}
	var have string
	for _, s := range bi.Settings {
		if s.Key == "DefaultGODEBUG" {
			have = s.Value
		}
	}
	have += "," + os.Getenv("GODEBUG")
	for _, want := range requiredGoDebug() {
		if !strings.Contains(","+have+",", ","+want+",") {
			return fmt.Errorf("sandbox: the binary lacks //go:debug %s in its main package (DefaultGODEBUG=%q)", want, have)
		}
	}
	return nil
}

// modelFDs wraps the model's n inherited fds (4, 5, …) without checking
// them, for a worker that builds no new root.
func modelFDs(n int) []*os.File {
	fs := make([]*os.File, n)
	for i := range fs {
		fs[i] = os.NewFile(uintptr(FDModel+i), "model-"+strconv.Itoa(i+1))
	}
	return fs
}

// strayFDs lists the open fds above last (the model's last) that are not
// the Go runtime's own poller (an epoll instance and its eventfd). It
// reads /proc, so it runs before the new root hides it.
func strayFDs(last int) ([]int, []string, error) {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return nil, nil, fmt.Errorf("sandbox: list open fds: %w", err)
	}
	var out []int
	var names []string
	for _, e := range ents {
		fd, err := strconv.Atoi(e.Name())
		if err != nil || fd <= last {
			continue
		}
		link, err := os.Readlink("/proc/self/fd/" + e.Name())
		if err != nil {
			continue // the directory's own fd, closed by now
		}
		if link == "anon_inode:[eventpoll]" || link == "anon_inode:[eventfd]" {
			continue
		}
		out = append(out, fd)
		names = append(names, e.Name()+"="+link)
	}
	return out, names, nil
}

func closeFDs(fds []int) {
	for _, fd := range fds {
		unix.Close(fd)
	}
}

// setLimits sets RLIMIT_DATA (memory_limit_bytes), RLIMIT_AS (that, the
// model and asReserve), RLIMIT_NOFILE (64 and one per further shard),
// RLIMIT_CORE 0 and RLIMIT_NPROC
// (the pids limit), and a Go soft memory limit 1/8 below RLIMIT_DATA.
//
// RLIMIT_NPROC counts the threads of the worker's uid in its own user
// namespace (the kernel keeps the count per namespace and uid), so it
// bounds the worker's threads, but the kernel does not enforce it when
// the worker's uid maps to the host's root: a root broker needs the
// cgroup's pids limit for that (Start says so in its report).
func setLimits(wc WorkerConfig, rep *Report) error {
	type lim struct {
		res  int
		name string
		v    uint64
	}
	nfiles := 1 + len(wc.HostShardPaths)
	lims := []lim{{unix.RLIMIT_NOFILE, "RLIMIT_NOFILE", uint64(workerNoFile + nfiles - 1)}, {unix.RLIMIT_CORE, "RLIMIT_CORE", workerCore}}
	if wc.MemoryLimit > 0 {
		lims = append(lims, lim{unix.RLIMIT_DATA, "RLIMIT_DATA", uint64(wc.MemoryLimit)})
		// RLIMIT_AS counts every mapping, shared ones too: a second bound
		// behind seccomp's mmap rule, set where the runtime never meets it
		// before RLIMIT_DATA (the model's mapping and the runtime's
		// reservations on top of the memory limit).
		var size uint64
		for fd := FDModel; fd < FDModel+nfiles; fd++ {
			var st unix.Stat_t
			if err := unix.Fstat(fd, &st); err != nil {
				return fmt.Errorf("sandbox: stat the model (fd %d) for RLIMIT_AS: %w", fd, err)
			}
			size += uint64(st.Size)
		}
		lims = append(lims, lim{unix.RLIMIT_AS, "RLIMIT_AS", uint64(wc.MemoryLimit) + size + asReserve})
	}
	if wc.PidsLimit > 0 {
		lims = append(lims, lim{unix.RLIMIT_NPROC, "RLIMIT_NPROC", uint64(wc.PidsLimit)})
	}
	var detail []string
	for _, l := range lims {
		if err := unix.Setrlimit(l.res, &unix.Rlimit{Cur: l.v, Max: l.v}); err != nil {
			return fmt.Errorf("sandbox: set %s to %d: %w", l.name, l.v, err)
		}
		detail = append(detail, l.name+"="+strconv.FormatUint(l.v, 10))
	}
	if wc.MemoryLimit > 0 {
		soft := wc.MemoryLimit - wc.MemoryLimit/8
		debug.SetMemoryLimit(soft)
		detail = append(detail, "GOMEMLIMIT="+strconv.FormatInt(soft, 10))
	}
	rep.Add("rlimits", true, true, strings.Join(detail, " "))
	return nil
}

// applyLandlock restricts the worker, best effort by the kernel's ABI, to
// reading the model's files; TCP bind and connect are denied (ABI ≥ 4); abstract
// unix sockets and signals are scoped (ABI ≥ 6).
func applyLandlock(rep *Report, modelPaths []string) {
	abi, err := llsys.LandlockGetABIVersion()
	if err != nil || abi < 1 {
		rep.Add("landlock", true, false, fmt.Sprintf("not available in this kernel (%v)", err))
		return
	}
	if err := landlock.V11.BestEffort().Restrict(landlock.ROFiles(modelPaths...)); err != nil {
		rep.Add("landlock", true, false, fmt.Sprintf("ABI %d: %v", abi, err))
		return
	}
	d := fmt.Sprintf("ABI %d: read %s only", abi, strings.Join(modelPaths, ", "))
	if abi >= 4 {
		d += "; TCP bind/connect denied"
	}
	if abi >= 6 {
		d += "; abstract unix sockets and signals scoped"
	}
	rep.Add("landlock", true, true, d)
}

// installStage compiles and installs one seccomp stage.
func installStage(st seccomp.Stage, wc WorkerConfig, rep *Report) error {
	prog, err := seccomp.Compile(seccomp.Options{Arch: runtime.GOARCH, Stage: st, SelfPid: os.Getpid(), Log: wc.SeccompLog})
	if err != nil {
		return err
	}
	var flags uint
	if wc.SeccompLog {
		flags |= seccomp.FlagLog
	}
	name := "seccomp stage 1"
	if st == seccomp.StageServing {
		name = "seccomp stage 2"
	}
	if err := prog.Install(flags); err != nil {
		return fmt.Errorf("sandbox: %s: %w", name, err)
	}
	d := fmt.Sprintf("%d rules, default %v", len(prog.Rules), prog.DefaultAction)
	if wc.SeccompLog {
		d += " (sandbox_seccomp_log: calls off the list are LOGGED, NOT BLOCKED)"
	}
	rep.Add(name, true, true, d)
	return nil
}
