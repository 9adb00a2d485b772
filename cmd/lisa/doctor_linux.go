package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// The sysctls that can forbid the worker's user namespace.
const (
	sysctlUsernsClone = "/proc/sys/kernel/unprivileged_userns_clone"
	sysctlMaxUserns   = "/proc/sys/user/max_user_namespaces"
	sysctlAppArmorNS  = "/proc/sys/kernel/apparmor_restrict_unprivileged_userns"
	sysctlYama        = "/proc/sys/kernel/yama/ptrace_scope"
	seccompActions    = "/proc/sys/kernel/seccomp/actions_avail"
)

// workerNamespaces are the namespaces the sandbox creates for each worker.
const workerNamespaces = syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWPID |
	syscall.CLONE_NEWNET | syscall.CLONE_NEWIPC | syscall.CLONE_NEWUTS | syscall.CLONE_NEWCGROUP

// hostChecks looks at everything the sandbox needs from the kernel, trying
// the namespaces for real rather than trusting the sysctls alone.
func hostChecks() []check {
	cs := []check{kernelCheck()}
	cs = append(cs, usernsChecks()...)
	cg := cgroupCheck()
	cs = append(cs, yamaCheck(), landlockCheck(), seccompCheck(), cg, threadsCheck(cg, os.Geteuid()))
	return cs
}

// kernelCheck reports the release; Landlock needs 5.13.
func kernelCheck() check {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return check{Name: "kernel", Status: statusFail, Detail: "uname: " + err.Error()}
	}
	rel := unix.ByteSliceToString(u.Release[:])
	c := check{Name: "kernel", Status: statusOK, Detail: "Linux " + rel}
	maj, min := kernelVersion(rel)
	switch {
	case maj == 0:
		c.Status, c.Detail = statusWarn, c.Detail+" (release not understood)"
	case maj < 4 || (maj == 4 && min < 6):
		c.Status, c.Detail = statusFail, c.Detail+": older than 4.6, no cgroup namespaces"
		c.Fix = "upgrade to Linux 5.13 or later"
	case maj < 5 || (maj == 5 && min < 13):
		c.Status, c.Detail = statusWarn, c.Detail+": older than 5.13, no Landlock"
		c.Fix = "upgrade to Linux 5.13 or later (6.7 or later for Landlock's TCP rules)"
	}
	return c
}

// kernelVersion parses "6.18.44-foo" as 6, 18; 0, 0 when it cannot.
func kernelVersion(rel string) (int, int) {
	f := strings.SplitN(rel, ".", 3)
	if len(f) < 2 {
		return 0, 0
	}
	maj, err1 := strconv.Atoi(f[0])
	minor := f[1]
	if i := strings.IndexFunc(minor, func(r rune) bool { return r < '0' || r > '9' }); i >= 0 {
		minor = minor[:i]
	}
	min, err2 := strconv.Atoi(minor)
	if err1 != nil || err2 != nil {
		return 0, 0
	}
	return maj, min
}

// readSysctl returns a sysctl's value and whether the file exists.
func readSysctl(path string) (string, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", false
	}
	return strings.TrimSpace(string(b)), true
}

// usernsChecks creates the worker's seven namespaces in a child of this
// binary, as the current user and, when that is root, as the service user
// too (root may create user namespaces that an unprivileged user may not).
func usernsChecks() []check {
	sysctls := usernsSysctls()
	c := check{Name: "user namespaces", Status: statusOK}
	if err := tryNamespaces(); err != nil {
		c.Status, c.Detail, c.Fix = statusFail, err.Error()+"; "+sysctls, usernsFix(false)
	} else {
		c.Detail = fmt.Sprintf("created user, mount, pid, net, ipc, uts and cgroup namespaces as uid %d; %s", os.Getuid(), sysctls)
	}
	out := []check{c}
	if os.Getuid() != 0 {
		return out
	}
	u := check{Name: fmt.Sprintf("user namespaces (uid %d)", serviceUID), Status: statusOK}
	err := tryNamespacesAs(serviceUID)
	switch {
	case errors.Is(err, errNoSelf):
		u.Status, u.Detail = statusWarn, err.Error()
		u.Fix = fmt.Sprintf("run lisa doctor from a directory uid %d can read, or as that user", serviceUID)
	case err != nil:
		u.Status, u.Detail = statusFail, err.Error()
		u.Fix = usernsFix(true)
	default:
		u.Detail = fmt.Sprintf("the same namespaces as uid %d (the image's and the docs' service user)", serviceUID)
	}
	return append(out, u)
}

// usernsSysctls summarises the sysctls that gate user namespaces.
func usernsSysctls() string {
	var s []string
	for _, k := range []struct{ path, name string }{
		{sysctlUsernsClone, "kernel.unprivileged_userns_clone"},
		{sysctlMaxUserns, "user.max_user_namespaces"},
		{sysctlAppArmorNS, "kernel.apparmor_restrict_unprivileged_userns"},
	} {
		if v, ok := readSysctl(k.path); ok {
			s = append(s, k.name+"="+v)
		} else {
			s = append(s, k.name+" absent")
		}
	}
	return strings.Join(s, ", ")
}

// usernsFix names the setting that blocks user namespaces, most specific
// first. unprivileged says the failure was as the service user.
func usernsFix(unprivileged bool) string {
	if v, ok := readSysctl(sysctlMaxUserns); ok && v == "0" {
		return "sysctl -w user.max_user_namespaces=15000 (persist it in /etc/sysctl.d/60-lisa.conf)"
	}
	if v, ok := readSysctl(sysctlUsernsClone); ok && v == "0" && (unprivileged || os.Getuid() != 0) {
		return "sysctl -w kernel.unprivileged_userns_clone=1 (persist it in /etc/sysctl.d/60-lisa.conf)"
	}
	if v, ok := readSysctl(sysctlAppArmorNS); ok && v == "1" && (unprivileged || os.Getuid() != 0) {
		return "install the AppArmor profile: cp deploy/apparmor/usr.local.bin.lisa /etc/apparmor.d/ && apparmor_parser -r /etc/apparmor.d/usr.local.bin.lisa (lisa must live at /usr/local/bin/lisa), or sysctl -w kernel.apparmor_restrict_unprivileged_userns=0 for the whole host"
	}
	if chrooted() {
		return "this process is chrooted, and the kernel refuses user namespaces to chrooted processes: give lisa its own root with a mount namespace and pivot_root (as docker and podman do) instead of chroot"
	}
	if seccompMode() == 2 {
		return "this process runs under a seccomp filter that forbids namespaces (a container?): docker run --security-opt seccomp=unconfined --security-opt apparmor=unconfined, or systemd RestrictNamespaces=user mnt pid net ipc uts cgroup"
	}
	return "the sysctls allow user namespaces, so the likely causes are: a chroot (the kernel refuses user namespaces to a chrooted process, even into a mount point: use a mount namespace with pivot_root, as docker and podman do), a kernel without CONFIG_USER_NS, or an LSM or container runtime policy"
}

// chrooted reports whether this process is surely chrooted: no line of
// mountinfo has "/" as its mount point (a chroot into a directory that is
// itself a mount point is not seen).
func chrooted() bool {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return false // no /proc: unknown, do not claim it
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 4 && f[4] == "/" {
			return false
		}
	}
	return true
}

// errNoSelf means lisa doctor could not find or run its own binary.
var errNoSelf = errors.New("cannot re-execute this binary")

// tryNamespaces starts this binary in the worker's namespaces, its uid
// mapped to 0 inside as the sandbox does, and waits for it to exit.
func tryNamespaces() error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("%w: %v", errNoSelf, err)
	}
	cmd := exec.Command(self, "doctor", probeUsernsFlag)
	cmd.Env = []string{}
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:                 workerNamespaces,
		UidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
		GidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
		GidMappingsEnableSetgroups: false,
		Pdeathsig:                  syscall.SIGKILL,
	}
	return runProbe(cmd, "creating the worker's namespaces")
}

// tryNamespacesAs runs tryNamespaces in a child running as uid (and gid)
// uid, without any capability.
func tryNamespacesAs(uid int) error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("%w: %v", errNoSelf, err)
	}
	if err := accessibleBy(self, uid); err != nil {
		return fmt.Errorf("%w as uid %d: %v", errNoSelf, uid, err)
	}
	cmd := exec.Command(self, "doctor", probeUsernsAsUserFlag)
	cmd.Env = []string{}
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid), Groups: []uint32{}},
		Pdeathsig:  syscall.SIGKILL,
	}
	return runProbe(cmd, fmt.Sprintf("as uid %d", uid))
}

// accessibleBy checks that every directory above path is searchable and
// path executable by others (uid has no other way in).
func accessibleBy(path string, uid int) error {
	for p := path; ; p = filepath.Dir(p) {
		st, err := os.Stat(p)
		if err != nil {
			return err
		}
		sys, ok := st.Sys().(*syscall.Stat_t)
		owner := ok && int(sys.Uid) == uid
		if !owner && st.Mode().Perm()&0o001 == 0 {
			return fmt.Errorf("%s is not executable or searchable by others", p)
		}
		if p == "/" || p == "." {
			return nil
		}
	}
}

// runProbe runs a probe child for at most ten seconds and turns its
// failure into an error with its stderr.
func runProbe(cmd *exec.Cmd, what string) error {
	var errb bytes.Buffer
	// Pipes, not os/exec's default /dev/null: a scratch root may have no /dev.
	cmd.Stdin, cmd.Stdout, cmd.Stderr = strings.NewReader(""), io.Discard, &errb
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			if msg := strings.TrimSpace(errb.String()); msg != "" {
				return fmt.Errorf("%s: %s", what, msg)
			}
			return fmt.Errorf("%s: %w", what, err)
		}
		return nil
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		return fmt.Errorf("%s: the probe did not exit within 10s", what)
	}
}

// yamaCheck reports Yama's ptrace scope. Yama does not restrict user
// namespaces; the worker forbids ptrace itself (seccomp), so any value
// is fine and the line is there to answer the question.
func yamaCheck() check {
	v, ok := readSysctl(sysctlYama)
	if !ok {
		return check{Name: "yama", Status: statusOK, Detail: "not enabled (kernel.yama.ptrace_scope absent); the worker's seccomp filter forbids ptrace regardless"}
	}
	return check{Name: "yama", Status: statusOK, Detail: "kernel.yama.ptrace_scope=" + v + "; does not affect the sandbox (seccomp forbids ptrace in the worker)"}
}

// landlockCheck reports the Landlock ABI the worker will restrict itself
// with: 1 confines files, 4 adds TCP, 6 adds signal and socket scoping.
func landlockCheck() check {
	abi, err := llsys.LandlockGetABIVersion()
	if err != nil || abi < 1 {
		reason := "not available"
		if err != nil {
			reason += " (" + err.Error() + ")"
		}
		return check{Name: "landlock", Status: statusWarn, Detail: reason + ": the worker relies on its empty mount namespace and seccomp alone",
			Fix: "Linux 5.13 or later with CONFIG_SECURITY_LANDLOCK=y and landlock in the lsm= boot parameter (e.g. lsm=landlock,lockdown,yama,integrity,apparmor)"}
	}
	c := check{Name: "landlock", Status: statusOK, Detail: fmt.Sprintf("ABI %d: files", abi)}
	if abi >= 4 {
		c.Detail += ", TCP bind/connect"
	}
	if abi >= 6 {
		c.Detail += ", abstract unix socket and signal scoping"
	}
	if abi < 6 {
		c.Status = statusWarn
		c.Fix = "Linux 6.12 or later for Landlock ABI 6 (TCP rules need ABI 4, Linux 6.7); seccomp covers the same calls meanwhile"
	}
	return c
}

// seccompMode reads this process's seccomp mode (0 none, 2 filter), -1
// when unknown.
func seccompMode() int {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Seccomp:"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err == nil {
				return n
			}
		}
	}
	return -1
}

// seccompCheck checks that seccomp filters exist and have the actions the
// worker's filters use.
func seccompCheck() check {
	c := check{Name: "seccomp", Status: statusOK}
	if _, err := unix.PrctlRetInt(unix.PR_GET_SECCOMP, 0, 0, 0, 0); err != nil {
		return check{Name: "seccomp", Status: statusFail, Detail: "prctl(PR_GET_SECCOMP): " + err.Error(),
			Fix: "a kernel built with CONFIG_SECCOMP=y and CONFIG_SECCOMP_FILTER=y"}
	}
	acts, ok := readSysctl(seccompActions)
	if !ok {
		c.Detail = "filters available (" + seccompActions + " unreadable)"
	} else {
		have := map[string]bool{}
		for _, a := range strings.Fields(acts) {
			have[a] = true
		}
		var missing []string
		for _, a := range []string{"kill_process", "errno", "allow", "log"} {
			if !have[a] {
				missing = append(missing, a)
			}
		}
		c.Detail = "filters with actions " + acts
		if len(missing) > 0 {
			c.Status, c.Detail = statusFail, c.Detail+"; missing "+strings.Join(missing, " ")
			c.Fix = "Linux 4.14 or later (SECCOMP_RET_KILL_PROCESS and RET_LOG)"
		}
	}
	switch seccompMode() {
	case 2:
		c.Detail += "; this process already runs under a filter (a container or systemd SystemCallFilter): the worker stacks its own"
	case 0:
		c.Detail += "; this process runs unfiltered"
	}
	return c
}

// cgroupCheck reports what sandbox_cgroup would use: a cgroup v2
// directory with memory and pids delegated to this user, or the v1
// memory and pids hierarchies.
func cgroupCheck() check {
	c := check{Name: "cgroup", Status: statusOK}
	v2root := ""
	for _, d := range []string{"/sys/fs/cgroup", "/sys/fs/cgroup/unified"} {
		var st unix.Statfs_t
		if unix.Statfs(d, &st) == nil && st.Type == unix.CGROUP2_SUPER_MAGIC {
			v2root = d
			break
		}
	}
	own, _ := os.ReadFile("/proc/self/cgroup")
	var v2rel string
	v1 := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(own)), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		if f[1] == "" {
			v2rel = f[2]
		}
		for _, ctl := range strings.Split(f[1], ",") {
			v1[ctl] = f[2]
		}
	}
	var parts []string
	v2ok := false
	if v2root == "" {
		parts = append(parts, "no cgroup v2 hierarchy")
	} else {
		dir := filepath.Join(v2root, v2rel)
		offered := fieldsOf(filepath.Join(dir, "cgroup.controllers"))
		writable := unix.Access(dir, unix.W_OK) == nil
		v2ok = offered["memory"] && offered["pids"] && writable
		parts = append(parts, fmt.Sprintf("v2 at %s: controllers [%s], %s", dir,
			strings.Join(sortedKeys(offered), " "), map[bool]string{true: "writable (delegated)", false: "not writable by this user"}[writable]))
	}
	v1ok := true
	for _, ctl := range []string{"memory", "pids"} {
		rel, ok := v1[ctl]
		if !ok {
			v1ok = false
			continue
		}
		dir := filepath.Join("/sys/fs/cgroup", ctl, rel)
		if _, err := os.Stat(dir); err != nil {
			v1ok = false
			parts = append(parts, fmt.Sprintf("v1 %s not mounted at %s", ctl, dir))
			continue
		}
		w := unix.Access(dir, unix.W_OK) == nil
		v1ok = v1ok && w
		parts = append(parts, fmt.Sprintf("v1 %s at %s %s", ctl, dir, map[bool]string{true: "writable", false: "not writable"}[w]))
	}
	c.Detail = strings.Join(parts, "; ")
	switch {
	case v2ok:
		c.Detail = "sandbox_cgroup can use cgroup v2 memory+pids; " + c.Detail
	case v1ok:
		c.Detail = "sandbox_cgroup will fall back to cgroup v1 memory and pids; " + c.Detail
	default:
		c.Status = statusWarn
		c.Detail = "sandbox_cgroup cannot work here (auto, the default, goes on without); memory_limit_bytes still applies as an rlimit; " + c.Detail
		c.Fix = "under systemd: Delegate=memory pids and ProtectControlGroups=no in deploy/lisa.service; in Docker: --cgroupns=private with a cgroup v2 host; otherwise set sandbox_cgroup to auto or false"
	}
	return c
}

// threadsCheck says what will bound the worker's threads: the cgroup's
// pids limit when sandbox_cgroup can work (auto uses it), else
// RLIMIT_NPROC, which the kernel enforces in the worker's user namespace
// only when its uid is not the host's root. A root broker without a
// usable cgroup has nothing: a compromised worker can create threads
// without end.
func threadsCheck(cg check, euid int) check {
	c := check{Name: "thread limit", Status: statusOK}
	switch {
	case cg.Status == statusOK:
		c.Detail = "the worker's cgroup pids limit (sandbox_cgroup auto or true), and RLIMIT_NPROC"
		if euid == 0 {
			c.Detail = "the worker's cgroup pids limit (sandbox_cgroup auto or true); RLIMIT_NPROC does not bind a root broker's worker"
		}
	case euid != 0:
		c.Detail = fmt.Sprintf("RLIMIT_NPROC in the worker's user namespace (uid %d is not root); no cgroup pids limit here", euid)
	default:
		c.Status = statusWarn
		c.Detail = "NOTHING BOUNDS THE WORKER'S THREADS: no usable cgroup, and RLIMIT_NPROC does not bind a worker whose uid is the host's root"
		c.Fix = fmt.Sprintf("run lisa as an unprivileged user (the image's uid %d), or give it a delegated cgroup (see the cgroup line)", serviceUID)
	}
	return c
}

// fieldsOf reads a space-separated list file as a set.
func fieldsOf(path string) map[string]bool {
	set := map[string]bool{}
	if b, err := os.ReadFile(path); err == nil {
		for _, f := range strings.Fields(string(b)) {
			set[f] = true
		}
	}
	return set
}
