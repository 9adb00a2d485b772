package main

import (
	"debug/buildinfo"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// qemuARM64 is Debian's qemu-user-static emulator for arm64 binaries,
// which .ci/run installs.
const qemuARM64 = "qemu-aarch64-static"

// TestReleaseARM64 checks the arm64 release build beyond its ELF headers
// (TestReleaseBinaryStatic): its build settings say cgo was off, and run
// under qemu-aarch64 with three CPU models its `lisa version` names the
// kernel path that CPU gets (i8mm where the CPU has SMMLA, dotprod where
// it has SDOT but not SMMLA, neon where it has only ASIMD) and honours
// LISA_KERNELS. Without qemu the test is
// skipped, and fails on CI.
func TestReleaseARM64(t *testing.T) {
	bin := buildRelease(t, "arm64")
	bi, err := buildinfo.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	if settings["CGO_ENABLED"] != "0" || settings["GOARCH"] != "arm64" {
		t.Errorf("build settings CGO_ENABLED=%q GOARCH=%q, want 0 and arm64", settings["CGO_ENABLED"], settings["GOARCH"])
	}
	qemu, err := exec.LookPath(qemuARM64)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is missing on CI (.ci/run installs qemu-user-static)", qemuARM64)
		}
		t.Skipf("%s not installed: the arm64 binary is not run", qemuARM64)
	}
	for _, c := range []struct {
		cpu, env, want string
	}{
		{"max", "", "kernels: i8mm (arm64 ASIMD + dot product + int8 matrix multiply)\n"},
		{"max", "dotprod", "kernels: dotprod (arm64 ASIMD + dot product); LISA_KERNELS=dotprod\n"},
		{"neoverse-n1", "", "kernels: dotprod (arm64 ASIMD + dot product)\n"},
		{"neoverse-n1", "i8mm", "kernels: dotprod (arm64 ASIMD + dot product); LISA_KERNELS=i8mm is not supported here; using dotprod\n"},
		{"cortex-a72", "", "kernels: neon (arm64 ASIMD)\n"},
		{"max", "neon", "kernels: neon (arm64 ASIMD); LISA_KERNELS=neon\n"},
		{"cortex-a53", "dotprod", "kernels: neon (arm64 ASIMD); LISA_KERNELS=dotprod is not supported here; using neon\n"},
	} {
		cmd := exec.Command(qemu, "-cpu", c.cpu, bin, "version")
		cmd.Env = []string{"LISA_KERNELS=" + c.env}
		out, err := cmd.Output()
		if err != nil {
			t.Errorf("-cpu %s: lisa version: %v\n%s", c.cpu, err, out)
			continue
		}
		if !strings.Contains(string(out), "linux/arm64") || !strings.Contains(string(out), c.want) {
			t.Errorf("-cpu %s LISA_KERNELS=%q: lisa version printed\n%s\nwant a line %q", c.cpu, c.env, out, c.want)
		}
	}
}
