package main

import (
	"bytes"
	"debug/elf"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lisa-llm/lisa/internal/shared"
)

// The release tests check the binary as it ships: built like `make build`,
// static, and working from a root that holds nothing but itself and a
// model, as in the scratch image.

// Stamped into the release build, so the test can see -ldflags took.
const (
	testVersion = "v0.0.0-releasetest"
	testCommit  = "c0ffee1"
)

// buildRelease builds lisa for goarch with the Makefile's flags.
func buildRelease(t *testing.T, goarch string) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the lisa binary; skipped with -short")
	}
	bin := filepath.Join(t.TempDir(), "lisa-"+goarch)
	cmd := exec.Command("go", "build", "-trimpath",
		"-ldflags", "-s -w -X main.version="+testVersion+" -X main.commit="+testCommit, "-o", bin, ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+goarch)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build (GOARCH=%s): %v\n%s", goarch, err, out)
	}
	return bin
}

// TestReleaseBinaryStatic proves the amd64 and arm64 builds static: no
// program interpreter, no dynamic section, no needed library; and that
// -trimpath left no path of this machine's source tree in them.
func TestReleaseBinaryStatic(t *testing.T) {
	src, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, goarch := range []string{"amd64", "arm64"} {
		t.Run(goarch, func(t *testing.T) {
			bin := buildRelease(t, goarch)
			f, err := elf.Open(bin)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			want := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[goarch]
			if f.Machine != want || f.Type != elf.ET_EXEC {
				t.Errorf("machine %v type %v, want %v ET_EXEC", f.Machine, f.Type, want)
			}
			for _, p := range f.Progs {
				if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
					t.Errorf("program header %v: the binary is dynamically linked", p.Type)
				}
			}
			if s := f.SectionByType(elf.SHT_DYNAMIC); s != nil {
				t.Errorf("dynamic section %s present", s.Name)
			}
			libs, err := f.ImportedLibraries()
			if err != nil || len(libs) != 0 {
				t.Errorf("DT_NEEDED %q (%v), want none", libs, err)
			}
			data, err := os.ReadFile(bin)
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Contains(data, []byte(src+"/")) {
				t.Errorf("binary contains the source path %s: built without -trimpath?", src)
			}
		})
	}
}

// Environment of the root helper: the test binary re-executed in new mount
// and PID namespaces, which pivots into a root directory, mounts what a
// container runtime provides and execs /lisa there.
const (
	envRootDir  = "LISA_TEST_ROOT_DIR"  // the new root
	envRootUID  = "LISA_TEST_ROOT_UID"  // uid and gid to run /lisa as ("" keeps root)
	envRootArgs = "LISA_TEST_ROOT_ARGS" // JSON array of /lisa's arguments
	envRootMode = "LISA_TEST_ROOT_MODE" // "chroot", "chroot-plain": chroot instead of pivot_root
)

// TestRootHelper is not a test: run by inRoot with the environment above,
// it becomes /lisa in the new root and never returns.
func TestRootHelper(t *testing.T) {
	dir := os.Getenv(envRootDir)
	if dir == "" {
		t.Skip("helper process of the empty-root tests")
	}
	if err := enterRoot(dir, os.Getenv(envRootUID), os.Getenv(envRootArgs), os.Getenv(envRootMode)); err != nil {
		fmt.Fprintln(os.Stderr, "root helper:", err)
		os.Exit(125)
	}
}

// enterRoot makes dir the root the way runc does (bind it onto itself,
// pivot_root, detach the old root), mounts a fresh /proc and a /dev/null
// (every container runtime provides both), drops to uid if given and
// execs /lisa with an empty environment. Mode "chroot" chroots into the
// bound root instead, "chroot-plain" into the directory unbound, as
// chroot(8) would.
func enterRoot(dir, uid, argsJSON, mode string) error {
	var args []string
	if err := json.Unmarshal([]byte(argsJSON), &args); err != nil {
		return fmt.Errorf("%s: %w", envRootArgs, err)
	}
	steps := []struct {
		what string
		do   func() error
	}{
		{"make / private", func() error { return unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, "") }},
		{"bind the root", func() error { return unix.Mount(dir, dir, "", unix.MS_BIND|unix.MS_REC, "") }},
		{"bind /dev/null", func() error {
			if err := os.WriteFile(filepath.Join(dir, "dev", "null"), nil, 0o666); err != nil {
				return err
			}
			return unix.Mount("/dev/null", filepath.Join(dir, "dev", "null"), "", unix.MS_BIND, "")
		}},
		{"chdir", func() error { return unix.Chdir(dir) }},
		{"pivot_root", func() error { return unix.PivotRoot(".", ".") }},
		{"detach the old root", func() error { return unix.Unmount(".", unix.MNT_DETACH) }},
		{"chdir /", func() error { return unix.Chdir("/") }},
		{"mount /proc", func() error {
			return unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "")
		}},
	}
	if mode == "chroot" || mode == "chroot-plain" {
		keep := steps[:3:3]
		if mode == "chroot-plain" {
			keep = []struct {
				what string
				do   func() error
			}{steps[0], steps[2]}
		}
		steps = append(keep, []struct {
			what string
			do   func() error
		}{
			{"mount /proc", func() error {
				return unix.Mount("proc", filepath.Join(dir, "proc"), "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "")
			}},
			{"chroot", func() error { return unix.Chroot(dir) }},
			{"chdir /", func() error { return unix.Chdir("/") }},
		}...)
	}
	if uid != "" {
		id, err := strconv.Atoi(uid)
		if err != nil {
			return fmt.Errorf("%s: %w", envRootUID, err)
		}
		steps = append(steps,
			struct {
				what string
				do   func() error
			}{"drop groups and gid", func() error {
				if err := syscall.Setgroups(nil); err != nil {
					return err
				}
				return syscall.Setgid(id)
			}},
			struct {
				what string
				do   func() error
			}{"setuid", func() error { return syscall.Setuid(id) }})
	}
	for _, s := range steps {
		if err := s.do(); err != nil {
			return fmt.Errorf("%s: %w", s.what, err)
		}
	}
	return syscall.Exec("/lisa", append([]string{"/lisa"}, args...), []string{})
}

// needRoot skips (fails on CI) unless the test runs as root, which it
// needs to create mount namespaces and to switch users.
func needRoot(t *testing.T) {
	t.Helper()
	if os.Getuid() == 0 {
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("running as uid %d: the empty-root tests need root (CI runs them as root)", os.Getuid())
	}
	t.Skipf("running as uid %d: the empty-root tests need root to create mount namespaces; run them with sudo", os.Getuid())
}

// inRoot returns a command running /lisa args in root dir as uid (-1:
// root), in new mount and PID namespaces.
func inRoot(t *testing.T, dir string, uid int, args ...string) *exec.Cmd {
	t.Helper()
	a, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestRootHelper$")
	cmd.Env = []string{envRootDir + "=" + dir, envRootArgs + "=" + string(a)}
	if uid >= 0 {
		cmd.Env = append(cmd.Env, envRootUID+"="+strconv.Itoa(uid))
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNS | syscall.CLONE_NEWPID, Pdeathsig: syscall.SIGKILL}
	return cmd
}

// runInRoot runs /lisa args in dir and returns stdout, stderr, exit code.
func runInRoot(t *testing.T, dir string, uid int, args ...string) (string, string, int) {
	t.Helper()
	return runCmd(t, inRoot(t, dir, uid, args...))
}

// runCmd runs cmd and returns stdout, stderr, exit code.
func runCmd(t *testing.T, cmd *exec.Cmd) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return out.String(), errb.String(), ee.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return out.String(), errb.String(), 0
}

// emptyRoot makes a root directory holding only the binary at /lisa, the
// model at /models/model.gguf and the mount points /proc and /dev.
func emptyRoot(t *testing.T, bin, model string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "root")
	for _, d := range []string{"models", "proc", "dev"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	copyFile(t, bin, filepath.Join(dir, "lisa"), 0o755)
	copyFile(t, model, filepath.Join(dir, "models", "model.gguf"), 0o644)
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func copyFile(t *testing.T, from, to string, mode os.FileMode) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, data, mode); err != nil {
		t.Fatal(err)
	}
}

// TestEmptyRoot runs the release binary from a root that holds nothing
// but itself and a model: no libc, no /etc, no /usr.
func TestEmptyRoot(t *testing.T) {
	needRoot(t)
	model := shared.Model(t, "stories260K.gguf")
	dir := emptyRoot(t, buildRelease(t, "amd64"), model)
	checkInRoot(t, dir, -1)
}

// TestRootfsAsServiceUser assembles the image's root filesystem with
// deploy/rootfs.sh and runs the binary in it as UID 10001, the image's user.
func TestRootfsAsServiceUser(t *testing.T) {
	needRoot(t)
	model := shared.Model(t, "stories260K.gguf")
	bin := buildRelease(t, "amd64")
	dir := filepath.Join(t.TempDir(), "rootfs")
	cmd := exec.Command("sh", "../../deploy/rootfs.sh", "assemble", dir)
	cmd.Env = append(os.Environ(), "LISA_BIN="+bin)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("deploy/rootfs.sh assemble: %v\n%s", err, out)
	}
	for name, mode := range map[string]os.FileMode{"lisa": 0o755, "tmp": os.ModeDir | os.ModeSticky | 0o777,
		"models": os.ModeDir | 0o755, "proc": os.ModeDir | 0o755, "dev": os.ModeDir | 0o755} {
		st, err := os.Stat(filepath.Join(dir, name))
		if err != nil || st.Mode() != mode {
			t.Errorf("rootfs %s: %v %v, want mode %v", name, st.Mode(), err, mode)
		}
	}
	if ents, err := os.ReadDir(dir); err != nil || len(ents) != 5 {
		t.Errorf("rootfs holds %d entries (%v), want lisa tmp models proc dev", len(ents), err)
	}
	// The model volume: read-only for the service user, as -v ...:ro gives.
	copyFile(t, model, filepath.Join(dir, "models", "model.gguf"), 0o444)
	checkInRoot(t, dir, serviceUID)
}

// checkInRoot runs version, gguf inspect, then serve + health, in dir as
// uid (-1: root), and checks the served model answers like llama.cpp.
func checkInRoot(t *testing.T, dir string, uid int) {
	t.Run("version", func(t *testing.T) {
		out, errs, code := runInRoot(t, dir, uid, "version")
		if code != 0 {
			t.Fatalf("exit %d; stderr: %s", code, errs)
		}
		for _, w := range []string{"lisa " + testVersion, "commit " + testCommit, "kernels: ", "user namespaces: created"} {
			if !strings.Contains(out, w) {
				t.Errorf("lisa version lacks %q:\n%s", w, out)
			}
		}
	})
	t.Run("gguf inspect", func(t *testing.T) {
		out, errs, code := runInRoot(t, dir, uid, "gguf", "inspect", "/models/model.gguf")
		if code != 0 || !strings.Contains(out, "architecture:  llama") {
			t.Fatalf("exit %d; stdout:\n%s\nstderr: %s", code, out, errs)
		}
	})
	t.Run("serve and health", func(t *testing.T) {
		addr := "127.0.0.1:" + strconv.Itoa(freePort(t))
		logs := &lockedBuffer{}
		cmd := inRoot(t, dir, uid, "serve", "-m", "/models/model.gguf", "--listen", addr, "--threads", "1", "--parallel", "1")
		cmd.Stdout, cmd.Stderr = logs, logs
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		defer func() {
			_ = cmd.Process.Kill()
			<-done
			if t.Failed() {
				t.Logf("lisa serve logs:\n%s", logs.String())
			}
		}()
		url := "http://" + addr
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			select {
			case err := <-done:
				done <- err
				t.Fatalf("lisa serve exited: %v", err)
			default:
			}
			_, _, code := runInRoot(t, dir, uid, "health", "--url", url+"/health", "--timeout", "2s")
			if code == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("lisa health inside the root did not pass within 30 s")
			}
		}
		body := `{"prompt":"Once upon a time","max_tokens":24,"temperature":0}`
		resp, err := http.Post(url+"/v1/completions", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		var out map[string]any
		if err := json.Unmarshal(data, &out); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d, %v: %s", resp.StatusCode, err, data)
		}
		text, _, _ := completion(t, out)
		if want := refGreedy(t)["Once upon a time"]; len(text) < 40 || !strings.HasPrefix(want, text) {
			t.Errorf("completion %q is not a 24-token prefix of llama.cpp's %q", text, want)
		}
	})
}

// TestMakeBuildFlags checks that make build uses the flags buildRelease
// tests (the static, trimmed, stamped build), so the two cannot diverge.
func TestMakeBuildFlags(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("make: %v", err)
		}
		t.Skipf("make: %v", err)
	}
	out, err := exec.Command("make", "-s", "-n", "-C", "../..", "build", "VERSION=vX", "COMMIT=cY").CombinedOutput()
	if err != nil {
		t.Fatalf("make -n build: %v\n%s", err, out)
	}
	want := "go build -trimpath -ldflags '-s -w -X main.version=vX -X main.commit=cY' -o lisa ./cmd/lisa"
	if !strings.Contains(string(out), want) {
		t.Errorf("make build runs:\n%s\nwant %s", out, want)
	}
	mk, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(mk), "export CGO_ENABLED := 0") {
		t.Error("the Makefile no longer exports CGO_ENABLED := 0")
	}
}

// TestDoctorInChroot runs lisa doctor where the sandbox cannot work: in a
// chroot, the kernel refuses user namespaces. Doctor must fail that line
// with the chroot named in its fix (surely so when the root is not a
// mount point), while serve refuses to start.
func TestDoctorInChroot(t *testing.T) {
	needRoot(t)
	model := shared.Model(t, "stories260K.gguf")
	dir := emptyRoot(t, buildRelease(t, "amd64"), model)
	for _, tt := range []struct{ mode, fix string }{
		{"chroot", "a chroot (the kernel refuses user namespaces"},
		{"chroot-plain", "this process is chrooted"},
	} {
		t.Run(tt.mode, func(t *testing.T) {
			chrooted := func(args ...string) *exec.Cmd {
				cmd := inRoot(t, dir, -1, args...)
				cmd.Env = append(cmd.Env, envRootMode+"="+tt.mode)
				return cmd
			}
			out, errs, code := runCmd(t, chrooted("doctor", "--json"))
			var rep doctorReport
			if err := json.Unmarshal([]byte(out), &rep); err != nil {
				t.Fatalf("doctor --json: %v\n%s\nstderr: %s", err, out, errs)
			}
			if code != 1 || rep.OK {
				t.Errorf("doctor in a chroot: exit %d, ok %v; want 1, false", code, rep.OK)
			}
			found := false
			for _, c := range rep.Checks {
				if c.Name == "user namespaces" {
					found = true
					if c.Status != statusFail || !strings.Contains(c.Fix, tt.fix) || !strings.Contains(c.Detail, "operation not permitted") {
						t.Errorf("user namespaces in a chroot: %+v, want a fix with %q", c, tt.fix)
					}
				}
			}
			if !found {
				t.Errorf("no user namespaces check: %+v", rep.Checks)
			}
			_, errs, code = runCmd(t, chrooted("serve", "-m", "/models/model.gguf", "--listen", "127.0.0.1:"+strconv.Itoa(freePort(t))))
			if code != 1 || !strings.Contains(errs, "user namespaces must be available") {
				t.Errorf("serve in a chroot: exit %d, want 1 naming user namespaces; stderr:\n%s", code, errs)
			}
		})
	}
}
