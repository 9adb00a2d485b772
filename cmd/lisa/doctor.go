package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"runtime"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/klauspost/cpuid/v2"

	"github.com/lisa-llm/lisa/kernels"
)

// Check statuses, from good to bad. A failing check stops lisa serve with
// the sandbox on; a warning weakens the sandbox or costs speed.
const (
	statusOK   = "ok"
	statusWarn = "warn"
	statusFail = "fail"
)

// check is one line of lisa doctor: what was looked at, what was found,
// and for every line that is not ok, the exact command or setting that
// fixes it.
type check struct {
	Name   string `json:"name"`
	Status string `json:"status"`
	Detail string `json:"detail"`
	Fix    string `json:"fix,omitempty"`
}

// doctorReport is what `lisa doctor --json` prints.
type doctorReport struct {
	OK     bool    `json:"ok"`
	Checks []check `json:"checks"`
}

// Hidden arguments: lisa doctor re-executes itself to try the worker's
// namespaces for real (and, as root, to try them as the service's user).
const (
	probeUsernsFlag       = "--probe-userns"
	probeUsernsAsUserFlag = "--probe-userns-as-user"
)

// serviceUID is the unprivileged user the image and the docs run lisa as.
const serviceUID = 10001

// runDoctor checks the host before lisa serve would hit an error and
// prints one line per check. It exits 1 when any check fails.
func runDoctor(args []string, stdout, stderr io.Writer) int {
	if len(args) == 1 && args[0] == probeUsernsFlag {
		return 0 // reached: the namespaces were created
	}
	if len(args) == 1 && args[0] == probeUsernsAsUserFlag {
		if err := tryNamespaces(); err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
		return 0
	}
	fs := flag.NewFlagSet("doctor", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print JSON instead of a table")
	pos, status, done := parseCommand("doctor", fs, args, false, stdout, stderr)
	if done {
		return status
	}
	if len(pos) != 0 {
		return badUsage(stderr, "doctor", fmt.Sprintf("unexpected argument %q", pos[0]))
	}
	rep := doctorReport{OK: true, Checks: append(hostChecks(), cpuChecks()...)}
	for _, c := range rep.Checks {
		if c.Status == statusFail {
			rep.OK = false
		}
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			fmt.Fprintln(stderr, "lisa doctor:", err)
			return 1
		}
	} else {
		printDoctor(stdout, rep)
	}
	if !rep.OK {
		return 1
	}
	return 0
}

// printDoctor renders the checks as a table; each fix goes on its own line
// under the check it repairs, so it can be copied whole.
func printDoctor(w io.Writer, r doctorReport) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CHECK\tSTATUS\tDETAIL")
	for _, c := range r.Checks {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", c.Name, c.Status, c.Detail)
		if c.Fix != "" {
			fmt.Fprintf(tw, "\t\tfix: %s\n", c.Fix)
		}
	}
	tw.Flush()
	if r.OK {
		fmt.Fprintln(w, "\nno check failed: lisa serve can start its sandboxed worker on this host")
	} else {
		fmt.Fprintln(w, "\nsome checks failed: lisa serve will refuse to start with the sandbox on until they are fixed")
	}
}

// cpuChecks reports the CPU's vector features and the kernel path the
// matrix kernels chose on it.
func cpuChecks() []check {
	c := &cpuid.CPU
	var have []string
	for _, f := range []struct {
		name string
		id   cpuid.FeatureID
	}{
		{"AVX", cpuid.AVX}, {"AVX2", cpuid.AVX2}, {"FMA", cpuid.FMA3}, {"F16C", cpuid.F16C},
		{"AVX512F", cpuid.AVX512F}, {"AVX512BW", cpuid.AVX512BW}, {"AVX512VL", cpuid.AVX512VL},
		{"AVX512VNNI", cpuid.AVX512VNNI}, {"ASIMD", cpuid.ASIMD},
	} {
		if c.Supports(f.id) {
			have = append(have, f.name)
		}
	}
	feat := "none of the vector features the kernels use"
	if len(have) > 0 {
		feat = strings.Join(have, " ")
	}
	cpu := check{Name: "cpu", Status: statusOK,
		Detail: fmt.Sprintf("%s, %d logical cores; %s", strings.TrimSpace(c.BrandName), runtime.NumCPU(), feat)}
	path := check{Name: "kernel path", Status: statusOK, Detail: kernels.Describe()}
	best := kernels.Available()
	if sel := kernels.Selected(); sel != best[len(best)-1] {
		path.Status = statusWarn
		path.Fix = fmt.Sprintf("unset %s (or set it to %s) to use the fastest path this CPU has", kernels.EnvKernels, best[len(best)-1])
	} else if sel == kernels.Generic && runtime.GOARCH == "amd64" {
		path.Status = statusWarn
		path.Detail += "; this CPU lacks AVX2+FMA+F16C (or the OS does not save AVX state): generation is several times slower"
		path.Fix = "run on an x86-64 CPU with AVX2, FMA and F16C (Haswell or later), or a VM that exposes them"
	}
	return []check{cpu, path}
}

// versionFeatures is the short summary lisa version prints of the host's
// sandbox features: the name and detail of every sandbox check.
func versionFeatures() []string {
	var out []string
	for _, c := range hostChecks() {
		s := c.Name + ": " + c.Detail
		if c.Status != statusOK {
			s += " [" + c.Status + "; see lisa doctor]"
		}
		out = append(out, s)
	}
	return out
}

// sortedKeys returns a set's members in order.
func sortedKeys(set map[string]bool) []string {
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
