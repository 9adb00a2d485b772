package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/lisa-llm/lisa/internal/shared"
	"github.com/lisa-llm/lisa/kernels"
)

func TestKernelVersion(t *testing.T) {
	tests := []struct {
		rel      string
		maj, min int
	}{
		{"6.18.44-fc-v1045", 6, 18},
		{"5.15.0-91-generic", 5, 15},
		{"4.19+", 4, 19},
		{"6.8rc1", 6, 8},
		{"garbage", 0, 0},
		{"x.y.z", 0, 0},
		{"", 0, 0},
	}
	for _, tt := range tests {
		if maj, min := kernelVersion(tt.rel); maj != tt.maj || min != tt.min {
			t.Errorf("kernelVersion(%q) = %d.%d, want %d.%d", tt.rel, maj, min, tt.maj, tt.min)
		}
	}
}

func TestDoctorUsage(t *testing.T) {
	for _, args := range [][]string{{"extra"}, {"--bogus"}} {
		var out, errb bytes.Buffer
		if code := runDoctor(args, &out, &errb); code != 2 {
			t.Errorf("%q: exit %d, want 2", args, code)
		}
	}
}

// TestDoctorMatchesSandbox runs the real binary's lisa doctor --json and
// then lisa sandbox-check on a model: what doctor promises (namespaces,
// the Landlock ABI, the cgroup version sandbox_cgroup falls back to) must
// be what the sandbox actually applies on this host.
func TestDoctorMatchesSandbox(t *testing.T) {
	bin := buildLisa(t)
	out, errs, code := runLisa(t, bin, "doctor", "--json")
	var rep doctorReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("doctor --json is not JSON: %v\n%s\nstderr: %s", err, out, errs)
	}
	if (code == 0) != rep.OK {
		t.Errorf("exit %d but ok=%v", code, rep.OK)
	}
	byName := map[string]check{}
	for _, c := range rep.Checks {
		byName[c.Name] = c
		switch c.Status {
		case statusOK:
		case statusWarn, statusFail:
			if c.Fix == "" {
				t.Errorf("%s is %s without a fix: %+v", c.Name, c.Status, c)
			}
		default:
			t.Errorf("%s: status %q", c.Name, c.Status)
		}
		if c.Detail == "" {
			t.Errorf("%s: no detail", c.Name)
		}
	}
	want := []string{"kernel", "user namespaces", "yama", "landlock", "seccomp", "cgroup", "cpu", "kernel path"}
	if runtime.GOOS == "linux" && len(rep.Checks) < len(want) {
		t.Fatalf("checks %v, want at least %v", rep.Checks, want)
	}
	for _, n := range want {
		if _, ok := byName[n]; !ok {
			t.Errorf("no %q check in %+v", n, rep.Checks)
		}
	}
	if kp := byName["kernel path"]; !strings.HasPrefix(kp.Detail, string(kernels.Selected())) {
		t.Errorf("kernel path %q, this process selected %s", kp.Detail, kernels.Selected())
	}

	model := shared.Model(t, "stories260K.gguf")
	scOut, scErr, scCode := runLisa(t, bin, "sandbox-check", "--json", "--cgroup", "-m", model)
	userns := byName["user namespaces"].Status == statusOK
	if userns != (scCode == 0) {
		t.Fatalf("doctor says user namespaces %s, sandbox-check exit %d; stderr: %s", byName["user namespaces"].Status, scCode, scErr)
	}
	if !userns {
		return
	}
	var sc sandboxCheckReport
	if err := json.Unmarshal([]byte(scOut), &sc); err != nil {
		t.Fatalf("sandbox-check --json: %v", err)
	}
	layers := map[string]string{}
	for _, l := range sc.Layers {
		if l.Applied {
			layers[l.Name] = l.Detail
		}
	}
	abi := regexp.MustCompile(`^ABI (\d+)`)
	if m := abi.FindStringSubmatch(byName["landlock"].Detail); m != nil {
		if !strings.HasPrefix(layers["landlock"], "ABI "+m[1]+":") {
			t.Errorf("doctor: landlock %q; sandbox applied %q", byName["landlock"].Detail, layers["landlock"])
		}
	} else if _, ok := layers["landlock"]; ok {
		t.Errorf("doctor: landlock %q, yet the sandbox applied it: %q", byName["landlock"].Detail, layers["landlock"])
	}
	cg := byName["cgroup"].Detail
	_, v1 := layers["cgroup v1 memory"]
	switch {
	case strings.Contains(cg, "cgroup v2 memory+pids"):
		if _, ok := layers["cgroup v2 memory+pids"]; !ok {
			t.Errorf("doctor promised cgroup v2, sandbox applied %v", sc.Layers)
		}
	case strings.Contains(cg, "fall back to cgroup v1"):
		if !v1 {
			t.Errorf("doctor promised the cgroup v1 fallback, sandbox applied %v", sc.Layers)
		}
	}
	for _, l := range []string{"namespaces", "seccomp stage 1", "seccomp stage 2"} {
		if _, ok := layers[l]; !ok {
			t.Errorf("doctor found everything the sandbox needs, yet layer %q was not applied: %v", l, sc.Layers)
		}
	}
	t.Logf("doctor and sandbox-check agree: landlock %q, cgroup %q", layers["landlock"], cg)
}

// TestDoctorMatchesSandboxAsServiceUser repeats the comparison as uid
// 10001, where root's privileges no longer hide what the host forbids: if
// doctor says sandbox_cgroup cannot work, sandbox-check --cgroup must fail,
// and it must pass when doctor says it can; likewise for user namespaces.
func TestDoctorMatchesSandboxAsServiceUser(t *testing.T) {
	needRoot(t)
	model := shared.Model(t, "stories260K.gguf")
	bin := buildLisa(t)
	dir := t.TempDir()
	for d := dir; d != os.TempDir() && d != "/"; d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o755); err != nil { // let uid 10001 reach the binary
			t.Fatal(err)
		}
	}
	copyFile(t, bin, filepath.Join(dir, "lisa"), 0o755)
	copyFile(t, model, filepath.Join(dir, "model.gguf"), 0o644)
	asUser := func(args ...string) (string, string, int) {
		cmd := exec.Command(filepath.Join(dir, "lisa"), args...)
		cmd.Dir = "/"
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: serviceUID, Gid: serviceUID, Groups: []uint32{}}}
		return runCmd(t, cmd)
	}
	out, errs, _ := asUser("doctor", "--json")
	var rep doctorReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("doctor --json as uid %d: %v\n%s\nstderr: %s", serviceUID, err, out, errs)
	}
	status := map[string]string{}
	for _, c := range rep.Checks {
		status[c.Name] = c.Status
	}
	for _, tt := range []struct {
		check string
		args  []string
	}{
		{"user namespaces", []string{"sandbox-check", "-m", filepath.Join(dir, "model.gguf")}},
		{"cgroup", []string{"sandbox-check", "--cgroup", "-m", filepath.Join(dir, "model.gguf")}},
	} {
		_, errs, code := asUser(tt.args...)
		if (status[tt.check] == statusOK) != (code == 0) {
			t.Errorf("as uid %d: doctor says %s is %s, but %q exits %d: %s", serviceUID, tt.check, status[tt.check], tt.args, code, errs)
		}
		t.Logf("as uid %d: %s %s, %q exit %d", serviceUID, tt.check, status[tt.check], tt.args[:len(tt.args)-2], code)
	}
}

// TestThreadsCheck: doctor warns exactly when nothing will bound the
// worker's threads (a root broker without a usable cgroup).
func TestThreadsCheck(t *testing.T) {
	for _, c := range []struct {
		cgroup string
		euid   int
		want   string
		detail string
	}{
		{statusOK, 0, statusOK, "pids limit"},
		{statusOK, 10001, statusOK, "pids limit"},
		{statusWarn, 10001, statusOK, "RLIMIT_NPROC"},
		{statusWarn, 0, statusWarn, "NOTHING BOUNDS"},
	} {
		got := threadsCheck(check{Name: "cgroup", Status: c.cgroup}, c.euid)
		if got.Status != c.want || !strings.Contains(got.Detail, c.detail) || (got.Status != statusOK && got.Fix == "") {
			t.Errorf("cgroup %s, euid %d: %+v, want %s with %q", c.cgroup, c.euid, got, c.want, c.detail)
		}
	}
}
