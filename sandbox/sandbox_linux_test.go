package sandbox

import (
	"os"
	"strconv"
	"strings"
	"testing"

	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"

	"github.com/lisa-llm/lisa/internal/shared"
)

// brokerChild is a broker in its own process for the parent-death test:
// it starts a worker, prints its pid and waits to be killed.
func brokerChild(args []string) int {
	if len(args) != 1 {
		return 3
	}
	m, err := os.Open(args[0])
	if err != nil {
		return 3
	}
	s, err := StartProbeWorker(Config{Enabled: true, ModelPath: args[0], Model: m, Executable: os.Args[0]})
	if err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
		return 3
	}
	os.Stdout.WriteString("pid " + strconv.Itoa(s.Process.Pid) + "\n")
	s.Process.Wait()
	return 0
}

// startWorker starts a probe worker (this test binary) on the model path.
func startWorker(t *testing.T, cfg Config) *ProbeSession {
	t.Helper()
	if cfg.Model == nil {
		m, err := os.Open(cfg.ModelPath)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close() })
		cfg.Model = m
	}
	cfg.Executable = os.Args[0]
	s, err := StartProbeWorker(cfg)
	if err != nil {
		t.Fatalf("start worker: %v", err)
	}
	t.Cleanup(func() { s.Process.Kill(); s.Process.Wait() })
	return s
}

// procStatus reads the fields of /proc/pid/status.
func procStatus(t *testing.T, pid int) map[string]string {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok {
			m[k] = strings.TrimSpace(v)
		}
	}
	return m
}

// TestLockedDownWorker checks a serving worker from the outside: its
// seccomp, privilege and capability state, its namespaces, its report.
func TestLockedDownWorker(t *testing.T) {
	for _, name := range []string{"stories260K.gguf", "mini-24m-q4_k_m.gguf"} {
		t.Run(name, func(t *testing.T) {
			s := startWorker(t, Config{Enabled: true, ModelPath: shared.Model(t, name), Threads: 2})
			if !strings.HasPrefix(s.Model, "GGUF v") || !strings.Contains(s.Model, `"llama"`) {
				t.Errorf("worker loaded %q", s.Model)
			}
			st := procStatus(t, s.Process.Pid)
			want := map[string]string{"Seccomp": "2", "Seccomp_filters": "2", "NoNewPrivs": "1",
				"CapEff": "0000000000000000", "CapPrm": "0000000000000000", "CapInh": "0000000000000000",
				"CapBnd": "0000000000000000", "CapAmb": "0000000000000000"}
			for k, v := range want {
				if st[k] != v {
					t.Errorf("/proc/%d/status %s = %q, want %q", s.Process.Pid, k, st[k], v)
				}
			}
			for _, ns := range []string{"user", "mnt", "pid", "net", "ipc", "uts", "cgroup"} {
				mine, err1 := os.Readlink("/proc/self/ns/" + ns)
				its, err2 := os.Readlink("/proc/" + strconv.Itoa(s.Process.Pid) + "/ns/" + ns)
				if err1 != nil || err2 != nil || mine == its {
					t.Errorf("namespace %s: broker %q, worker %q (%v, %v)", ns, mine, its, err1, err2)
				}
			}
			for _, l := range s.Report.Layers {
				t.Log(l)
				if l.Requested && !l.Applied {
					t.Errorf("layer not applied: %v", l)
				}
			}
			for _, need := range []string{"root", "model inode check", "landlock", "seccomp stage 1", "seccomp stage 2", "capabilities"} {
				if !hasLayer(s.Report, need) {
					t.Errorf("report lacks layer %q: %v", need, s.Report.Layers)
				}
			}
			var w map[string]uint64
			if err := s.Command("work 4", &w); err != nil {
				t.Fatalf("work: %v", err)
			}
			var e map[string]string
			if err := s.Command("echo still here", &e); err != nil || e["echo"] != "still here" {
				t.Fatalf("echo after work: %v %v", e, err)
			}
			if ex := s.Close(); ex.Code != 0 || ex.Signal != 0 {
				t.Errorf("worker exit: %v", ex)
			}
		})
	}
}

func hasLayer(r Report, name string) bool {
	for _, l := range r.Layers {
		if l.Name == name && l.Applied {
			return true
		}
	}
	return false
}

// TestEscapeProbes runs every probe in a fresh locked-down worker, with a
// memory limit and sandbox_cgroup auto, as lisa sandbox-check does.
func TestEscapeProbes(t *testing.T) {
	model := shared.Model(t, "stories260K.gguf")
	m, err := os.Open(model)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	cfg := Config{Enabled: true, CgroupAuto: true, MemoryLimit: 256 << 20, ModelPath: model, Model: m, Executable: os.Args[0]}
	res, rep, err := RunProbes(cfg, ProbeNames())
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != len(ProbeNames()) || !rep.Complete() {
		t.Fatalf("%d results, report %v", len(res), rep.Layers)
	}
	abi, _ := llsys.LandlockGetABIVersion()
	// Calls that must fail with an errno rather than a kill.
	wantHow := map[string]string{"open /etc/passwd": "EACCES", "list /": "EACCES", "read /proc": "EACCES",
		"open the model for writing": "EACCES", "write the model": "EBADF", "clone3": "ENOSYS",
		"map private memory past the cap":                                  "ENOMEM",
		"list / past seccomp (Landlock)":                                   "EACCES",
		"stat a host file past seccomp (root)":                             "ENOENT",
		"UDP to the host's loopback past seccomp (network namespace)":      "ENETUNREACH",
		"TCP connect past socket (Landlock network rule)":                  map[bool]string{true: "EACCES", false: "ENETUNREACH"}[abi >= 4],
		"connect to an abstract unix socket past seccomp (Landlock scope)": map[bool]string{true: "EPERM", false: "skipped"}[abi >= 6],
		"signal a process outside the domain (Landlock scope)":             map[bool]string{true: "EPERM", false: "skipped"}[abi >= 6],
		"thread bomb": "the worker could not create its threads",
	}
	audit := auditMulticast() // every record arrives: every kill must be named
	if audit != nil {
		audit.Close()
	}
	confirmed := 0
	for _, r := range res {
		t.Logf("%-36s %-18s blocked=%v how=%s [%s]", r.Name, r.Phase, r.Blocked, r.How, r.Evidence)
		if !r.Blocked {
			t.Errorf("probe %q NOT BLOCKED: %s", r.Name, r.How)
			continue
		}
		want := wantHow[r.Name]
		if want == "" {
			want = "SIGSYS"
		}
		if !strings.HasPrefix(r.How, want) {
			t.Errorf("probe %q blocked by %s, want %s", r.Name, r.How, want)
		}
		if strings.Contains(r.Evidence, "audit record names") {
			confirmed++
		} else if audit != nil && r.How == "SIGSYS" {
			t.Errorf("probe %q: the audit multicast is readable, yet the kill is unconfirmed: %s", r.Name, r.Evidence)
		}
	}
	t.Logf("%d seccomp kills confirmed by the kernel's audit record", confirmed)
}

// TestLayerMutations switches each layer off in turn and runs the probes
// that name it: each must get through, so every layer is shown to be what
// stops some probe (with all layers on, TestEscapeProbes has them blocked).
func TestLayerMutations(t *testing.T) {
	model := shared.Model(t, "stories260K.gguf")
	byLayer := map[string][]string{}
	for _, s := range probeSpecs() {
		for _, l := range s.layers {
			byLayer[l] = append(byLayer[l], s.name)
		}
	}
	for _, layer := range []string{offNamespaces, offRoot, offLandlock, offSeccomp1, offSeccomp2, offRlimits} {
		t.Run(layer, func(t *testing.T) {
			names := byLayer[layer]
			if len(names) == 0 {
				t.Fatalf("no probe is stopped by %s alone", layer)
			}
			m, err := os.Open(model)
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			cfg := Config{Enabled: true, MemoryLimit: 256 << 20, ModelPath: model, Model: m, Executable: os.Args[0],
				testOff: []string{layer}}
			res, rep, err := RunProbes(cfg, names)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(strings.Join(layerDetails(rep), "\n"), "test: "+layer+": not applied (SWITCHED OFF") {
				t.Errorf("report does not show %s switched off: %v", layer, layerDetails(rep))
			}
			for _, r := range res {
				t.Logf("%s off: %s: blocked=%v how=%s", layer, r.Name, r.Blocked, r.How)
				if r.Blocked {
					t.Errorf("%s off: probe %q still blocked (%s): it does not test %s", layer, r.Name, r.How, layer)
				}
			}
		})
	}
}
