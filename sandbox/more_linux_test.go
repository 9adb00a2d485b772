package sandbox

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"

	"github.com/lisa-llm/lisa/gguf"
	"github.com/lisa-llm/lisa/internal/shared"
	"github.com/lisa-llm/lisa/internal/splitgguf"
)

func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o444); err != nil {
		t.Fatal(err)
	}
}

// TestModelSwapped points the model path at another file than the one the
// broker verified: the worker must refuse before reading it.
func TestModelSwapped(t *testing.T) {
	src := shared.Model(t, "stories260K.gguf")
	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	verified, swapped := filepath.Join(dir, "a.gguf"), filepath.Join(dir, "b.gguf")
	copyFile(t, src, verified)
	copyFile(t, src, swapped)
	m, err := os.Open(verified)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	_, err = StartProbeWorker(Config{Enabled: true, ModelPath: swapped, Model: m, Executable: os.Args[0]})
	if err == nil || !strings.Contains(err.Error(), "swapped after verification") {
		t.Fatalf("got %v, want the swap refused", err)
	}
	// The same file under both names is accepted.
	s := startWorker(t, Config{Enabled: true, ModelPath: verified, Model: m})
	s.Close()
}

// TestShardSwapped gives the worker a split model whose third shard's
// path names another file than the one the broker opened: the worker must
// refuse it as it refuses a swapped first shard. With the right files it
// mounts every shard and loads the whole model from them.
func TestShardSwapped(t *testing.T) {
	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	paths, err := splitgguf.Write(shared.Model(t, "stories260K.gguf"), dir, "stories", 3)
	if err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "other.gguf")
	copyFile(t, paths[2], other)
	open := func(p string) *os.File {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	first, second := open(paths[0]), open(paths[1])
	_, err = StartProbeWorker(Config{Enabled: true, ModelPath: paths[0], Model: first, ShardPaths: paths[1:],
		Shards: []*os.File{second, open(other)}, Executable: os.Args[0]})
	if err == nil || !strings.Contains(err.Error(), "swapped after verification") || !strings.Contains(err.Error(), ShardPath(3)) {
		t.Fatalf("got %v, want the swap of %s refused", err, ShardPath(3))
	}
	s := startWorker(t, Config{Enabled: true, ModelPath: paths[0], Model: first, ShardPaths: paths[1:],
		Shards: []*os.File{second, open(paths[2])}})
	defer s.Close()
	whole, err := gguf.Open(shared.Model(t, "stories260K.gguf"), gguf.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	defer whole.Close()
	if want := fmt.Sprintf("%d tensors", len(whole.Tensors)); !strings.Contains(s.Model, want) {
		t.Errorf("worker loaded %q, want %s", s.Model, want)
	}
	var checked bool
	for _, l := range s.Report.Layers {
		checked = checked || (l.Name == "model inode check" && l.Applied && strings.Contains(l.Detail, "fds 4–6"))
	}
	if !checked {
		t.Errorf("report %v: no inode check of fds 4–6", s.Report.Layers)
	}
}

// TestStartFailsWithoutNamespaces makes the clone fail, as on a host with
// user namespaces disabled: Start must refuse, not fall back.
func TestStartFailsWithoutNamespaces(t *testing.T) {
	model := shared.Model(t, "stories260K.gguf")
	m, err := os.Open(model)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	// CLONE_NEWUSER with CLONE_FS is refused by the kernel (EINVAL).
	cfg := Config{Enabled: true, ModelPath: model, Model: m, Executable: os.Args[0], testCloneflags: unix.CLONE_FS}
	p, err := Start(cfg)
	if err == nil {
		p.Kill()
		p.Wait()
		t.Fatal("Start succeeded with a failing clone")
	}
	if !strings.Contains(err.Error(), "user namespaces") {
		t.Errorf("error does not name the cause: %v", err)
	}
}

// TestSandboxDisabled runs the worker with sandbox_enabled false: it runs,
// with loud warnings, no filters, and probes refuse to run.
func TestSandboxDisabled(t *testing.T) {
	var logged syncBuffer
	s := startWorker(t, Config{Enabled: false, ModelPath: shared.Model(t, "stories260K.gguf"), Stderr: &logged})
	if !strings.Contains(logged.String(), "WARNING: sandbox_enabled is false") {
		t.Errorf("no warning on the broker's log: %q", logged.String())
	}
	for _, r := range []Report{s.Process.Report, s.Report} {
		if len(r.Warnings()) == 0 || !strings.Contains(strings.Join(r.Warnings(), "\n"), "UNSANDBOXED") {
			t.Errorf("no loud warning in %v", r.Layers)
		}
	}
	if st := procStatus(t, s.Process.Pid); st["Seccomp"] != "0" || st["NoNewPrivs"] != "0" {
		t.Errorf("unsandboxed worker has Seccomp %s NoNewPrivs %s", st["Seccomp"], st["NoNewPrivs"])
	}
	if r := s.Probe("tkill"); r.Blocked || !strings.Contains(r.How, "only in a locked-down worker") {
		t.Errorf("probe in an unsandboxed worker: %+v", r)
	}
	s.Close()
}

// TestSeccompLog runs with sandbox_seccomp_log: a call off the list is
// logged and allowed, the worker lives on. Without it, the same call kills
// the worker and the death line says so. Where the kernel log is readable
// the call is named; the kernel rate-limits those records (10 per 5 s
// without auditd), so a missing name is retried after a pause.
func TestSeccompLog(t *testing.T) {
	model := shared.Model(t, "stories260K.gguf")
	w := watchKmsg(os.Getpid(), func(string) {})
	kmsg := w != nil
	w.stop(false)
	for attempt := 1; ; attempt++ {
		named := logModeRun(t, model, kmsg) && killModeRun(t, model, kmsg)
		if t.Failed() || named || !kmsg {
			break
		}
		if attempt == 4 {
			t.Fatal("the kernel log never named the call (records rate-limited or not matched)")
		}
		time.Sleep(5 * time.Second)
	}
	t.Logf("kernel log readable: %v", kmsg)
}

// logModeRun checks a log-mode worker; it reports whether the broker's
// log named the call (always true when the kernel log is unreadable).
func logModeRun(t *testing.T, model string, kmsg bool) bool {
	var logged syncBuffer
	s := startWorker(t, Config{Enabled: true, SeccompLog: true, ModelPath: model, Stderr: &logged})
	if !strings.Contains(strings.Join(layerDetails(s.Report), "\n"), "LOGGED, NOT BLOCKED") {
		t.Errorf("report does not flag log mode: %v", s.Report.Layers)
	}
	var r map[string]int
	if err := s.Command("getppid", &r); err != nil {
		t.Fatalf("getppid in log mode: %v", err)
	}
	if p := s.Probe("tkill"); p.Blocked || !strings.Contains(p.How, "not in seccomp-log mode") {
		t.Errorf("probe in log mode: %+v, want refused", p)
	}
	var e map[string]string
	if err := s.Command("echo alive", &e); err != nil || e["echo"] != "alive" {
		t.Fatalf("worker after a logged call: %v %v", e, err)
	}
	s.Close()
	return !kmsg || strings.Contains(logged.String(), "worker made system call getppid")
}

// killModeRun checks that the call kills a normal worker; it reports
// whether the death line named the call.
func killModeRun(t *testing.T, model string, kmsg bool) bool {
	k := startWorker(t, Config{Enabled: true, ModelPath: model})
	var r map[string]int
	if err := k.Command("getppid", &r); err == nil {
		t.Fatalf("getppid allowed without log mode: %v", r)
	}
	ex := k.Process.Wait()
	if !ex.Seccomp || ex.Signal != syscall.SIGSYS || !strings.Contains(ex.String(), "killed by seccomp (SIGSYS)") {
		t.Errorf("death by seccomp reported as %q (%+v)", ex.String(), ex)
	}
	if ex.Syscall != "" && ex.Syscall != "getppid" {
		t.Errorf("death line names %q, want getppid", ex.Syscall)
	}
	t.Log(ex)
	return !kmsg || ex.Syscall == "getppid"
}

func layerDetails(r Report) []string {
	var d []string
	for _, l := range r.Layers {
		d = append(d, l.String())
	}
	return d
}

// TestStartingThreadEnds starts a worker from a goroutine locked to a
// thread that then ends: the worker must live on.
func TestStartingThreadEnds(t *testing.T) {
	model := shared.Model(t, "stories260K.gguf")
	got := make(chan *ProbeSession, 1)
	go func() {
		runtime.LockOSThread() // not unlocked: the thread exits with the goroutine
		m, _ := os.Open(model)
		s, err := StartProbeWorker(Config{Enabled: true, ModelPath: model, Model: m, Executable: os.Args[0]})
		if err != nil {
			t.Error(err)
		}
		got <- s
	}()
	s := <-got
	if s == nil {
		t.FailNow()
	}
	defer s.Close()
	time.Sleep(200 * time.Millisecond)
	var e map[string]string
	if err := s.Command("echo alive", &e); err != nil || e["echo"] != "alive" {
		t.Fatalf("worker after its starting thread ended: %v %v (%v)", e, err, s.Process.Wait())
	}
}

// TestBrokerDies kills a broker process: its worker must die with it.
func TestBrokerDies(t *testing.T) {
	model := shared.Model(t, "stories260K.gguf")
	cmd := exec.Command(os.Args[0], helperBroker, model)
	cmd.Env = []string{}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		cmd.Process.Kill()
		t.Fatalf("broker helper: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "pid ")))
	if err != nil {
		t.Fatalf("broker helper said %q", line)
	}
	if !alive(pid) {
		t.Fatalf("worker %d not running before the broker died", pid)
	}
	cmd.Process.Kill()
	cmd.Wait()
	deadline := time.Now().Add(5 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			unix.Kill(pid, unix.SIGKILL)
			t.Fatalf("worker %d outlived its broker", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(b), ')')
	return i > 0 && len(b) > i+2 && b[i+2] != 'Z' && b[i+2] != 'X'
}

// TestStderrReachesBroker checks the death line of a worker that failed.
func TestStderrReachesBroker(t *testing.T) {
	model := shared.Model(t, "stories260K.gguf")
	m, err := os.Open(model)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	pr, pw := io.Pipe()
	go io.Copy(io.Discard, pr)
	defer pw.Close()
	p, err := Start(Config{Enabled: true, ModelPath: "/nonexistent/model.gguf", Model: m,
		Executable: os.Args[0], Stderr: pw})
	if err != nil {
		t.Fatal(err)
	}
	e := p.Wait()
	if e.Code != 1 || !strings.Contains(e.StderrTail, "bind model /nonexistent/model.gguf") {
		t.Fatalf("exit %+v", e)
	}
	if s := e.String(); !strings.Contains(s, "exited with status 1") || !strings.Contains(s, "bind model") {
		t.Errorf("death line %q", s)
	}
}

// TestCgroup places a worker in cgroups with memory, swap and pids limits
// (as root; elsewhere Start must refuse with a clear error).
func TestCgroup(t *testing.T) {
	model := shared.Model(t, "stories260K.gguf")
	m, err := os.Open(model)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	cfg := Config{Enabled: true, Cgroup: true, MemoryLimit: 256 << 20, PidsLimit: 32,
		ModelPath: model, Model: m, Executable: os.Args[0]}
	s, err := StartProbeWorker(cfg)
	if os.Getuid() != 0 {
		if err == nil {
			s.Close()
			t.Fatal("unprivileged broker created cgroups on a host without delegation")
		}
		if !strings.Contains(err.Error(), "cgroup") {
			t.Errorf("error does not name the cgroup: %v", err)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(s.Process.Pid) + "/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	applied := map[string]bool{}
	for _, l := range s.Process.Report.Layers {
		t.Log(l)
		applied[l.Name] = l.Applied
	}
	for _, ctl := range []string{"memory", "pids"} {
		if !applied["cgroup v1 "+ctl] && !applied["cgroup v2 "+ctl] {
			t.Errorf("no %s limit applied: %v", ctl, s.Process.Report.Layers)
		}
	}
	if !strings.Contains(string(b), "lisa-worker-") {
		t.Errorf("worker not in its cgroup: %s", b)
	}
	if !strings.Contains(strings.Join(layerDetails(s.Report), " "), "RLIMIT_DATA=268435456") {
		t.Errorf("no RLIMIT_DATA in %v", s.Report.Layers)
	}
}

// TestUnprivilegedBroker reruns the worker tests as uid 10001 when run
// as root, so CI proves both (the binary is copied where that user can run it).
func TestUnprivilegedBroker(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("already unprivileged (this test re-runs the suite as uid 10001 from root)")
	}
	model := shared.Model(t, "stories260K.gguf")
	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	os.Chmod(filepath.Dir(dir), 0o755) // t.TempDir's per-test parent
	bin := filepath.Join(dir, "sandbox.test")
	self, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, self, 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []string{"TestLockedDownWorker", "TestEscapeProbes", "TestRealFilters", "TestBrokerDies",
		"TestStartingThreadEnds", "TestCgroup", "TestSeccompLog", "TestModelSwapped", "TestSandboxDisabled",
		"TestStartFailsWithoutNamespaces", "TestStderrReachesBroker", "TestMemoryLimit", "TestLandlockBehindSeccomp"}
	cmd := exec.Command(bin, "-test.run=^("+strings.Join(tests, "|")+")$", "-test.count=1", "-test.v")
	cmd.Env = []string{"LISA_SHARED=" + filepath.Dir(filepath.Dir(model)), "CI=" + os.Getenv("CI")}
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 10001, Gid: 10001}}
	out, err := cmd.CombinedOutput()
	if err != nil || strings.Contains(string(out), "--- SKIP") {
		t.Fatalf("as uid 10001: %v\n%s", err, out)
	}
	for _, name := range tests {
		if !strings.Contains(string(out), "--- PASS: "+name+" ") {
			t.Errorf("as uid 10001: %s did not pass:\n%s", name, out)
		}
	}
}

// TestMemoryLimit lets a worker allocate past memory_limit_bytes: it must
// die, and the death line must say why.
func TestMemoryLimit(t *testing.T) {
	s := startWorker(t, Config{Enabled: true, MemoryLimit: 128 << 20, ModelPath: shared.Model(t, "stories260K.gguf")})
	var r map[string]int
	if err := s.Command("alloc 16", &r); err != nil || r["allocated_mib"] != 16 {
		t.Fatalf("alloc within the limit: %v %v", r, err)
	}
	if err := s.Command("alloc 512", &r); err == nil {
		t.Fatalf("allocated 512 MiB under a 64 MiB limit: %v", r)
	}
	e := s.Process.Wait()
	line := e.String()
	t.Log(line)
	if e.Code == 0 || !(strings.Contains(line, "out of memory") || e.Signal == syscall.SIGSEGV) {
		t.Errorf("death line %q does not tell an out-of-memory death", line)
	}
}

// syncBuffer is a bytes.Buffer safe for the broker's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestLandlockBehindSeccomp runs the probes that reach Landlock before any
// seccomp filter: with Landlock each gets Landlock's own errno (EACCES for
// files and TCP, EPERM for the scopes), and with Landlock switched off
// each gets through (or, for TCP, only the network namespace stops it:
// ENETUNREACH, not EACCES). ECONNREFUSED or success is what no Landlock
// gives, so this fails without it.
func TestLandlockBehindSeccomp(t *testing.T) {
	model := shared.Model(t, "stories260K.gguf")
	abi, _ := llsys.LandlockGetABIVersion() // what this kernel offers
	probes := []struct {
		name    string
		abi     int
		with    string
		without string // "" means not blocked
	}{
		{"list / past seccomp (Landlock)", 1, "EACCES", ""},
		{"TCP connect past socket (Landlock network rule)", 4, "EACCES", "ENETUNREACH"},
		{"connect to an abstract unix socket past seccomp (Landlock scope)", 6, "EPERM", ""},
		{"signal a process outside the domain (Landlock scope)", 6, "EPERM", ""},
	}
	var names []string
	for _, p := range probes {
		names = append(names, p.name)
	}
	for _, off := range []bool{false, true} {
		m, err := os.Open(model)
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		cfg := Config{Enabled: true, ModelPath: model, Model: m, Executable: os.Args[0]}
		if off {
			cfg.testOff = []string{offLandlock}
		}
		res, rep, err := RunProbes(cfg, names)
		if err != nil {
			t.Fatal(err)
		}
		var applied int
		for _, l := range rep.Layers {
			if l.Name == "landlock" && l.Applied {
				fmt.Sscanf(l.Detail, "ABI %d", &applied)
			}
		}
		if want := map[bool]int{false: min(abi, 11), true: 0}[off]; applied != want {
			t.Errorf("Landlock off %v: kernel offers ABI %d, worker applied %d", off, abi, applied)
		}
		for i, r := range res {
			p := probes[i]
			t.Logf("landlock off %v: %s: blocked=%v how=%s", off, r.Name, r.Blocked, r.How)
			switch {
			case abi < p.abi:
				// The kernel lacks the feature: nothing to check.
			case !off && (!r.Blocked || r.How != p.with):
				t.Errorf("ABI %d: %s: blocked=%v %s, want %s from Landlock", abi, r.Name, r.Blocked, r.How, p.with)
			case off && p.without == "" && r.Blocked:
				t.Errorf("Landlock off: %s still blocked (%s): the probe does not test Landlock", r.Name, r.How)
			case off && p.without != "" && r.How != p.without:
				t.Errorf("Landlock off: %s gave %s, want %s", r.Name, r.How, p.without)
			}
		}
	}
}

// TestVerdict decides probes from made-up evidence: only the wait status
// and the kernel's naming of the killed call count.
func TestVerdict(t *testing.T) {
	sock, _ := lookupProbe("create a socket")
	shared, _ := lookupProbe("map shared memory past the cap")
	private, _ := lookupProbe("map private memory past the cap")
	bomb, _ := lookupProbe("thread bomb")
	const limit = 256 << 20
	cases := []struct {
		name    string
		spec    probeSpec
		reply   *ProbeResult
		exit    *Exit
		obs     observation
		blocked bool
		how     string
	}{
		{"kill for the probe's call", sock, nil, &Exit{Code: -1, Signal: syscall.SIGSYS, Seccomp: true, Syscall: "socket"}, observation{}, true, "SIGSYS"},
		{"kill for another call", sock, nil, &Exit{Code: -1, Signal: syscall.SIGSYS, Seccomp: true, Syscall: "rt_sigaction"}, observation{}, false, "killed by seccomp for rt_sigaction"},
		{"kill, call unknown", sock, nil, &Exit{Code: -1, Signal: syscall.SIGSYS, Seccomp: true}, observation{}, true, "SIGSYS"},
		{"forged SIGSYS report on stderr", sock, nil, &Exit{Code: 2, Reason: "SIGSYS: bad system call", StderrTail: "SIGSYS: bad system call\nrax 0x29\n"}, observation{}, false, "worker ended without a verdict"},
		{"other signal", sock, nil, &Exit{Code: -1, Signal: syscall.SIGSEGV}, observation{}, false, "worker ended without a verdict"},
		{"errno reply", sock, &ProbeResult{Name: sock.name, Blocked: true, How: "EACCES"}, nil, observation{}, true, "EACCES"},
		{"ENOMEM claimed, VmData within the cap", private, &ProbeResult{Name: private.name, Blocked: true, How: "ENOMEM"}, nil, observation{vmData: 80 << 20}, true, "ENOMEM"},
		{"ENOMEM claimed, VmData past the cap", private, &ProbeResult{Name: private.name, Blocked: true, How: "ENOMEM"}, nil, observation{vmData: 600 << 20}, false, "VmData"},
		{"shared map claimed blocked, VmSize holds it", shared, &ProbeResult{Name: shared.name, Blocked: true, How: "ENOMEM"}, nil, observation{vmData: 80 << 20, vmSize: 5 << 30}, false, "VmSize"},
		{"shared map refused, VmSize small", shared, &ProbeResult{Name: shared.name, Blocked: true, How: "ENOMEM"}, nil, observation{vmData: 80 << 20, vmSize: 1300 << 20}, true, "ENOMEM"},
		{"bomb: death below the target", bomb, nil, &Exit{Code: 2}, observation{maxThreads: 64}, true, "the worker could not create"},
		{"bomb: death after the target", bomb, nil, &Exit{Code: 2}, observation{maxThreads: bombThreads + 3}, false, "worker ended without a verdict"},
		{"bomb: claimed blocked with the threads seen", bomb, &ProbeResult{Name: bomb.name, Blocked: true, How: "EAGAIN"}, nil, observation{maxThreads: bombThreads}, false, "512 threads"},
	}
	for _, c := range cases {
		r := verdict(c.spec, c.reply, c.exit, c.obs, limit)
		if r.Blocked != c.blocked || !strings.HasPrefix(r.How, c.how) || r.Evidence == "" {
			t.Errorf("%s: %+v, want blocked=%v how %q…", c.name, r, c.blocked, c.how)
		}
	}
}

// TestForgedVerdicts has a real worker forge a seccomp death (a SIGSYS
// report on stderr, then exit) and die by seccomp for a call other than the
// probe's: neither may count as blocked.
func TestForgedVerdicts(t *testing.T) {
	model := shared.Model(t, "stories260K.gguf")
	s := startWorker(t, Config{Enabled: true, ModelPath: model})
	r := s.probeWith("create a socket", "forge")
	if e := s.Process.Wait(); e.Seccomp || e.Syscall != "" || e.Code != 2 {
		t.Errorf("forged report taken as a seccomp death: %+v", e)
	}
	if r.Blocked {
		t.Errorf("forged SIGSYS report counted as blocked: %+v", r)
	}
	w := watchKmsg(os.Getpid(), func(string) {})
	kmsg := w != nil
	w.stop(false)
	for attempt := 1; ; attempt++ {
		s := startWorker(t, Config{Enabled: true, ModelPath: model})
		r := s.probeWith("create a socket", "getppid") // killed, but for getppid
		t.Logf("attempt %d: %+v", attempt, r)
		named := strings.Contains(r.Evidence, "audit record names")
		switch {
		case named && (r.Blocked || !strings.Contains(r.How, "for getppid")):
			t.Fatalf("a kill for getppid counted for the socket probe: %+v", r)
		case named || !kmsg:
			return // without the kernel log the verdict is marked unconfirmed
		case !strings.Contains(r.Evidence, "UNCONFIRMED"):
			t.Fatalf("an unnamed kill not marked unconfirmed: %+v", r)
		case attempt == 4:
			t.Fatal("the kernel log never named the call (records rate-limited or not matched)")
		}
		time.Sleep(5 * time.Second) // the kernel's printk rate limit
	}
}

// TestThreadLimit checks what bounds a worker's threads without a cgroup:
// RLIMIT_NPROC for an unprivileged broker (the thread bomb is stopped), and
// nothing for a root broker, which the report and the log say loudly (and
// the thread bomb shows).
func TestThreadLimit(t *testing.T) {
	var logged syncBuffer
	s := startWorker(t, Config{Enabled: true, ModelPath: shared.Model(t, "stories260K.gguf"), Stderr: &logged})
	var l Layer
	for _, x := range s.Process.Report.Layers {
		if x.Name == "thread limit" {
			l = x
		}
	}
	r := s.Probe("thread bomb")
	t.Logf("%v; %+v", l, r)
	if os.Geteuid() == 0 {
		if l.Applied || !strings.Contains(logged.String(), "WARNING: thread limit: NOT APPLIED (NOTHING BOUNDS") {
			t.Errorf("root broker without a cgroup: layer %v, log %q", l, logged.String())
		}
		if r.Blocked {
			t.Errorf("thread bomb blocked with nothing bounding threads: %+v", r)
		}
		return
	}
	if !l.Applied || !strings.Contains(l.Detail, "RLIMIT_NPROC") {
		t.Errorf("unprivileged broker: layer %v", l)
	}
	if !r.Blocked {
		t.Errorf("thread bomb NOT BLOCKED under RLIMIT_NPROC: %+v", r)
	}
}

// TestAddressSpaceLimit: RLIMIT_AS bounds even the mappings RLIMIT_DATA
// does not count. With both seccomp stages switched off (a test-only
// state), shared anonymous memory past the cap must still fail, with
// ENOMEM, and the runtime must work under the limit.
func TestAddressSpaceLimit(t *testing.T) {
	model := shared.Model(t, "mini-24m-q4_k_m.gguf")
	st, err := os.Stat(model)
	if err != nil {
		t.Fatal(err)
	}
	const limit = 256 << 20
	s := startWorker(t, Config{Enabled: true, MemoryLimit: limit, ModelPath: model, Threads: 2,
		testOff: []string{offSeccomp1, offSeccomp2}})
	var w map[string]uint64
	if err := s.Command("work 4", &w); err != nil {
		t.Fatalf("work under RLIMIT_AS: %v", err)
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(s.Process.Pid) + "/limits")
	if err != nil {
		t.Fatal(err)
	}
	want := strconv.FormatInt(limit+st.Size()+asReserve, 10)
	if !strings.Contains(string(b), want) {
		t.Errorf("no RLIMIT_AS of %s in\n%s", want, b)
	}
	r := s.Probe("map shared memory past the cap")
	t.Logf("%+v", r)
	if !r.Blocked || r.How != "ENOMEM" {
		t.Errorf("shared memory past the cap without seccomp: %+v, want ENOMEM from RLIMIT_AS", r)
	}
}

// TestModelFileSurvivesGC runs the collector in a serving worker and lets
// finalizers run: fd 4 must stay open. A stray *os.File for fd 4 closes the
// model from its finalizer: under stage 2 a close is a kill (lisa serve's
// end-to-end test found it), under stage 1 the fd silently goes.
func TestModelFileSurvivesGC(t *testing.T) {
	model := shared.Model(t, "stories260K.gguf")
	s := startWorker(t, Config{Enabled: true, ModelPath: model})
	for i := 0; i < 3; i++ {
		var w map[string]uint64
		if err := s.Command("work 1", &w); err != nil { // ends with runtime.GC
			t.Fatalf("work %d: %v (%v)", i, err, s.Process.Wait())
		}
		time.Sleep(20 * time.Millisecond) // the finalizer goroutine's turn
	}
	link, err := os.Readlink("/proc/" + strconv.Itoa(s.Process.Pid) + "/fd/4")
	if err != nil || link != ModelPath {
		t.Errorf("the worker's fd 4: %q, %v; want the model", link, err)
	}
}
