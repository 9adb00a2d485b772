package sandbox

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// cgroupRoot is where cgroup hierarchies are mounted.
const cgroupRoot = "/sys/fs/cgroup"

// cgroupPlan is the cgroups one worker goes into: a v2 directory it is
// cloned into (through its fd), and v1 directories its pid is written to
// before it may begin its lock-down.
type cgroupPlan struct {
	v2Dir  string
	v2FD   int
	v1Dirs []string
	layers []Layer
}

// planCgroup creates the worker's cgroup directories with memory, swap and
// pids limits: through cgroup v2 where the host's v2 hierarchy has the
// controller, through v1 otherwise, and an error naming what is missing
// when neither has it. With reorganize false (sandbox_cgroup auto) it
// uses only controllers already enabled for the broker's children: it
// neither enables controllers nor moves the broker, which an operator who
// did not ask for a cgroup may not expect.
func planCgroup(memory int64, pids int, reorganize bool) (*cgroupPlan, error) {
	cg := &cgroupPlan{v2FD: -1}
	name := fmt.Sprintf("lisa-worker-%d-%d", os.Getpid(), time.Now().UnixNano())
	v2 := v2Controllers(reorganize)
	why := "not available (v2 controllers: " + v2.list() + ")"
	if v2.dir != "" && v2.has["memory"] && v2.has["pids"] {
		err := cg.makeV2(v2.dir, name, memory, pids)
		if err == nil {
			return cg, nil
		}
		why = "not usable: " + err.Error()
	}
	cg.layers = append(cg.layers, Layer{Name: "cgroup v2 memory+pids", Detail: why + ", v1 used"})
	for _, ctl := range []string{"memory", "pids"} {
		dir, err := v1Dir(ctl)
		if err != nil {
			cg.remove()
			return nil, fmt.Errorf("sandbox: cgroup: no %s controller: cgroup v2 %s; cgroup v1: %w", ctl, why, err)
		}
		if err := cg.makeV1(ctl, filepath.Join(dir, name), memory, pids); err != nil {
			cg.remove()
			return nil, err
		}
	}
	return cg, nil
}

// makeV2 creates dir/name with memory.max, memory.swap.max = 0, pids.max.
func (cg *cgroupPlan) makeV2(parent, name string, memory int64, pids int) error {
	d := filepath.Join(parent, name)
	if err := os.Mkdir(d, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", d, err)
	}
	cg.v2Dir = d
	for _, kv := range [][2]string{{"memory.max", memoryMax(memory)},
		{"memory.swap.max", "0"}, {"pids.max", strconv.Itoa(pids)}} {
		if err := writeFile(filepath.Join(d, kv[0]), kv[1]); err != nil {
			cg.remove()
			return err
		}
	}
	fd, err := unix.Open(d, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		cg.remove()
		return fmt.Errorf("open %s: %w", d, err)
	}
	cg.v2FD = fd
	cg.layers = append(cg.layers,
		Layer{Name: "cgroup v2 memory", Requested: true, Applied: true, Detail: "memory.max=" + memoryMax(memory)},
		Layer{Name: "cgroup v2 swap", Requested: true, Applied: true, Detail: "memory.swap.max=0"},
		Layer{Name: "cgroup v2 pids", Requested: true, Applied: true, Detail: "pids.max=" + strconv.Itoa(pids)})
	return nil
}

// makeV1 creates one v1 directory and writes its limits.
func (cg *cgroupPlan) makeV1(ctl, d string, memory int64, pids int) error {
	if err := os.Mkdir(d, 0o700); err != nil {
		return fmt.Errorf("sandbox: cgroup v1 %s: create %s: %w", ctl, d, err)
	}
	cg.v1Dirs = append(cg.v1Dirs, d)
	if ctl == "pids" {
		if err := writeFile(filepath.Join(d, "pids.max"), strconv.Itoa(pids)); err != nil {
			return fmt.Errorf("sandbox: cgroup v1 pids: %w", err)
		}
		cg.layers = append(cg.layers, Layer{Name: "cgroup v1 pids", Requested: true, Applied: true, Detail: "pids.max=" + strconv.Itoa(pids)})
		return nil
	}
	m := strconv.FormatInt(memory, 10)
	if memory <= 0 {
		m = "-1" // v1's "no limit"
	}
	if err := writeFile(filepath.Join(d, "memory.limit_in_bytes"), m); err != nil {
		return fmt.Errorf("sandbox: cgroup v1 memory: %w", err)
	}
	cg.layers = append(cg.layers, Layer{Name: "cgroup v1 memory", Requested: true, Applied: true, Detail: "memory.limit_in_bytes=" + m})
	sw := filepath.Join(d, "memory.memsw.limit_in_bytes")
	if _, err := os.Stat(sw); err != nil {
		return fmt.Errorf("sandbox: cgroup v1 swap: %s missing (swap accounting is off: boot with swapaccount=1)", sw)
	}
	if err := writeFile(sw, m); err != nil {
		return fmt.Errorf("sandbox: cgroup v1 swap: %w", err)
	}
	cg.layers = append(cg.layers, Layer{Name: "cgroup v1 swap", Requested: true, Applied: true, Detail: "memory.memsw.limit_in_bytes=" + m + " (no swap beyond memory)"})
	return nil
}

// hasPids reports whether the plan sets a pids limit.
func (cg *cgroupPlan) hasPids() bool {
	for _, l := range cg.layers {
		if l.Applied && strings.HasSuffix(l.Name, " pids") {
			return true
		}
	}
	return false
}

// summary lists the applied limits on one line.
func (cg *cgroupPlan) summary() string {
	var s []string
	for _, l := range cg.layers {
		if l.Applied {
			s = append(s, l.Detail)
		}
	}
	return strings.Join(s, ", ")
}

// memoryMax renders a memory limit for a cgroup file: 0 is no limit.
func memoryMax(memory int64) string {
	if memory <= 0 {
		return "max"
	}
	return strconv.FormatInt(memory, 10)
}

// place puts the started worker into the v1 directories. The worker waits
// at its gate until this is done, so its limits hold before it reads input.
func (cg *cgroupPlan) place(pid int) error {
	if cg == nil {
		return nil
	}
	for _, d := range cg.v1Dirs {
		if err := writeFile(filepath.Join(d, "cgroup.procs"), strconv.Itoa(pid)); err != nil {
			return fmt.Errorf("sandbox: cgroup v1: place worker: %w", err)
		}
	}
	return nil
}

// remove deletes the directories once the worker is gone (they are empty
// then; rmdir is retried briefly while the kernel finishes the exit).
func (cg *cgroupPlan) remove() {
	if cg == nil {
		return
	}
	if cg.v2FD >= 0 {
		unix.Close(cg.v2FD)
		cg.v2FD = -1
	}
	dirs := cg.v1Dirs
	if cg.v2Dir != "" {
		dirs = append(dirs, cg.v2Dir)
	}
	for _, d := range dirs {
		for i := 0; i < 50; i++ {
			err := unix.Rmdir(d)
			if err == nil || errors.Is(err, unix.ENOENT) {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	cg.v1Dirs, cg.v2Dir = nil, ""
}

func writeFile(path, value string) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(value)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %s to %s: %w", value, path, err)
	}
	return nil
}

// v2Info is the broker's own cgroup v2 directory and the controllers it
// can hand to a child.
type v2Info struct {
	dir string
	has map[string]bool
}

func (v v2Info) list() string {
	if v.dir == "" {
		return "no cgroup v2 hierarchy"
	}
	var s []string
	for c := range v.has {
		s = append(s, c)
	}
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, " ")
}

// v2Controllers finds the v2 hierarchy (unified or hybrid), the broker's
// directory in it, and the controllers enabled there for children. When
// the directory offers memory and pids but has not enabled them, and
// reorganize is true, it enables them; a non-root cgroup holding processes cannot have enabled
// controllers ("no internal processes"), so the broker first moves itself
// into a leaf child of its directory, as a delegated service must.
func v2Controllers(reorganize bool) v2Info {
	var root string
	for _, d := range []string{cgroupRoot, filepath.Join(cgroupRoot, "unified")} {
		var st unix.Statfs_t
		if unix.Statfs(d, &st) == nil && st.Type == unix.CGROUP2_SUPER_MAGIC {
			root = d
			break
		}
	}
	if root == "" {
		return v2Info{}
	}
	rel, ok := ownCgroup(func(ctls string) bool { return ctls == "" })
	if !ok {
		return v2Info{}
	}
	dir := filepath.Join(root, rel)
	info := v2Info{dir: dir, has: controllers(filepath.Join(dir, "cgroup.subtree_control"))}
	offered := controllers(filepath.Join(dir, "cgroup.controllers"))
	if (info.has["memory"] && info.has["pids"]) || !offered["memory"] || !offered["pids"] || !reorganize {
		return info
	}
	control := filepath.Join(dir, "cgroup.subtree_control")
	if writeFile(control, "+memory +pids") != nil && rel != "/" {
		leaf := filepath.Join(dir, "lisa-broker")
		if err := os.Mkdir(leaf, 0o755); err != nil && !os.IsExist(err) {
			return info
		}
		if writeFile(filepath.Join(leaf, "cgroup.procs"), "0") != nil { // "0": the writer itself
			return info
		}
		_ = writeFile(control, "+memory +pids")
	}
	info.has = controllers(control)
	return info
}

// controllers reads a space-separated controller list file.
func controllers(path string) map[string]bool {
	has := map[string]bool{}
	if b, err := os.ReadFile(path); err == nil {
		for _, c := range strings.Fields(string(b)) {
			has[c] = true
		}
	}
	return has
}

// v1Dir returns the broker's own directory in the v1 hierarchy of ctl.
func v1Dir(ctl string) (string, error) {
	mnt, err := v1Mount(ctl)
	if err != nil {
		return "", err
	}
	rel, ok := ownCgroup(func(ctls string) bool {
		for _, c := range strings.Split(ctls, ",") {
			if c == ctl {
				return true
			}
		}
		return false
	})
	if !ok {
		return "", fmt.Errorf("/proc/self/cgroup has no %s line", ctl)
	}
	return filepath.Join(mnt, rel), nil
}

// ownCgroup returns the path of the broker's cgroup on the line of
// /proc/self/cgroup whose controller list satisfies match.
func ownCgroup(match func(ctls string) bool) (string, bool) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", false
	}
	return cgroupPath(b, match)
}

// cgroupPath finds the line of a /proc/<pid>/cgroup file
// ("id:controllers:path") whose controllers satisfy match.
func cgroupPath(b []byte, match func(ctls string) bool) (string, bool) {
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) == 3 && match(f[1]) {
			return f[2], true
		}
	}
	return "", false
}

// v1Mount finds the mount point of the v1 hierarchy with controller ctl.
func v1Mount(ctl string) (string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", err
	}
	defer f.Close()
	return v1MountIn(f, ctl)
}

// v1MountIn reads a mountinfo file for the cgroup v1 mount holding ctl.
func v1MountIn(r io.Reader, ctl string) (string, error) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		left, right, ok := bytes.Cut(sc.Bytes(), []byte(" - "))
		if !ok {
			continue
		}
		rf := strings.Fields(string(right))
		lf := strings.Fields(string(left))
		if len(rf) < 3 || len(lf) < 5 || rf[0] != "cgroup" {
			continue
		}
		for _, o := range strings.Split(rf[2], ",") {
			if o == ctl {
				return lf[4], nil
			}
		}
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	return "", fmt.Errorf("no cgroup v1 hierarchy with %s is mounted", ctl)
}
