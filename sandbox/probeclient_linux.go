package sandbox

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// probeTimeout bounds how long the broker waits for a probe worker's line.
const probeTimeout = 30 * time.Second

// ProbeSession is a running probe worker (see ProbeWorker).
type ProbeSession struct {
	// Process is the worker.
	Process *Process
	// Report is the worker's report of its layers.
	Report Report
	// Model describes the model as the worker loaded it.
	Model string
	r     *bufio.Reader
	// dead is set when the worker died during its lock-down (an early
	// probe killed it).
	dead        bool
	memoryLimit int64
}

// StartProbeWorker starts a probe worker with cfg (whose Executable and
// ExecArgs must lead to ProbeWorker) and reads its report.
func StartProbeWorker(cfg Config) (*ProbeSession, error) {
	return startProbe(cfg, "")
}

// startProbe starts a probe worker; early names a probe it runs during its
// lock-down. Such a probe may kill the worker before its report: the
// session is then returned with the worker dead, for Probe to judge.
func startProbe(cfg Config, early string) (*ProbeSession, error) {
	cfg.Args = append([]string{strconv.Itoa(os.Getpid())}, cfg.Args...)
	if early != "" {
		cfg.Args = append(cfg.Args[:1:1], append([]string{early}, cfg.Args[1:]...)...)
	}
	p, err := Start(cfg)
	if err != nil {
		return nil, err
	}
	s := &ProbeSession{Process: p, r: bufio.NewReaderSize(p.Conn, 64<<10), memoryLimit: cfg.MemoryLimit}
	var h probeHello
	if err := s.readLine(&h); err != nil {
		p.Kill()
		e := p.Wait()
		if early != "" {
			s.dead = true
			return s, nil
		}
		return nil, fmt.Errorf("sandbox: probe worker's report: %w (%v)", err, e)
	}
	if h.Error != "" {
		p.Kill()
		return nil, fmt.Errorf("sandbox: probe worker: %s", h.Error)
	}
	s.Report, s.Model = h.Report, h.Model
	return s, nil
}

// readLine reads one JSON line into v.
func (s *ProbeSession) readLine(v any) error {
	if err := s.Process.Conn.SetReadDeadline(time.Now().Add(probeTimeout)); err != nil {
		return err
	}
	line, err := s.r.ReadSlice('\n')
	if err != nil {
		return err
	}
	return json.Unmarshal(line, v)
}

// Command sends one command line and decodes the reply into v.
func (s *ProbeSession) Command(cmd string, v any) error {
	if _, err := s.Process.Conn.Write([]byte(cmd + "\n")); err != nil {
		return fmt.Errorf("sandbox: send %q: %w", cmd, err)
	}
	return s.readLine(v)
}

// Close asks the worker to exit and waits for it.
func (s *ProbeSession) Close() Exit {
	s.Process.Conn.Write([]byte("exit\n"))
	t := time.AfterFunc(probeTimeout, func() { s.Process.Kill() })
	defer t.Stop()
	return s.Process.Wait()
}

// Probe runs one escape probe in this worker and judges it from the
// broker's side (see verdict). A probe that kills the worker ends the
// session.
func (s *ProbeSession) Probe(name string) ProbeResult {
	return s.probeWith(name, "probe "+name)
}

// probeWith sends cmd and judges the outcome as the probe name (tests send
// other commands to show a forged or mislabelled death is not believed).
func (s *ProbeSession) probeWith(name, cmd string) ProbeResult {
	spec, ok := lookupProbe(name)
	if !ok {
		return ProbeResult{Name: name, How: fmt.Sprintf("%v %q", errUnknownProbe, name)}
	}
	var obs observation
	var reply *ProbeResult
	var err error
	if !s.dead {
		stop := s.watchThreads(&obs, spec.name == "thread bomb")
		var r ProbeResult
		err = s.Command(cmd, &r)
		stop()
		if err == nil && r.Name == name {
			obs.vmData = procStatusField(s.Process.Pid, "VmData")
			obs.vmSize = procStatusField(s.Process.Pid, "VmSize")
			reply = &r
		}
	}
	if reply != nil {
		return verdict(spec, reply, nil, obs, s.memoryLimit)
	}
	s.Process.Kill()
	e := s.Process.Wait()
	if err != nil && errors.Is(err, os.ErrDeadlineExceeded) {
		return ProbeResult{Name: name, Phase: spec.phase, How: fmt.Sprintf("no verdict (%v): %s", err, e.String())}
	}
	return verdict(spec, nil, &e, obs, s.memoryLimit)
}

// observation is what the broker read of the worker's /proc files during
// a probe: the kernel writes them, the worker cannot.
type observation struct {
	vmData     int64 // bytes of VmData after the reply, -1 unknown
	vmSize     int64 // bytes of VmSize after the reply (shared mappings count here), -1 unknown
	maxThreads int   // most threads seen while the probe ran
}

// watchThreads polls the worker's thread count until the returned
// function is called; off, it does nothing.
func (s *ProbeSession) watchThreads(obs *observation, on bool) func() {
	if !on {
		return func() {}
	}
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			if n := procStatusField(s.Process.Pid, "Threads"); n > int64(obs.maxThreads) {
				obs.maxThreads = int(n)
			}
			select {
			case <-done:
				return
			case <-s.Process.Done():
				return
			case <-time.After(500 * time.Microsecond):
			}
		}
	}()
	return func() { close(done); <-stopped }
}

// procStatusField reads a number from /proc/PID/status (kB fields in
// bytes); -1 when it cannot.
func procStatusField(pid int, key string) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return -1
	}
	for _, l := range strings.Split(string(b), "\n") {
		v, ok := strings.CutPrefix(l, key+":")
		if !ok {
			continue
		}
		f := strings.Fields(v)
		if len(f) == 0 {
			return -1
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return -1
		}
		if len(f) > 1 && f[1] == "kB" {
			n <<= 10
		}
		return n
	}
	return -1
}

// verdict decides a probe from the broker's evidence. A worker that
// answered is believed only as far as the kernel's accounting agrees
// (VmData for the memory probes, the thread count for the thread bomb).
// A worker that died was blocked by seccomp only if the wait status says
// SIGSYS and, where the kernel's audit record names the killed call, the
// call is one the probe makes; its stderr is never evidence.
func verdict(spec probeSpec, reply *ProbeResult, e *Exit, obs observation, memoryLimit int64) ProbeResult {
	r := ProbeResult{Name: spec.name, Phase: spec.phase}
	bomb := spec.name == "thread bomb"
	if reply != nil {
		r.Blocked, r.How, r.Evidence = reply.Blocked, reply.How, "the worker's reply"
		switch {
		case spec.name == "map private memory past the cap":
			r.Evidence = fmt.Sprintf("the worker's reply; VmData %d bytes read by the broker", obs.vmData)
			if memoryLimit > 0 && obs.vmData > memoryLimit {
				r.Blocked, r.How = false, fmt.Sprintf("VmData %d bytes, past the %d-byte cap", obs.vmData, memoryLimit)
			}
		case spec.name == "map shared memory past the cap":
			// RLIMIT_DATA does not count shared memory: the mapping shows
			// in VmSize only.
			r.Evidence = fmt.Sprintf("the worker's reply; VmSize %d bytes read by the broker", obs.vmSize)
			if obs.vmSize >= pastTheCap(memoryLimit) {
				r.Blocked, r.How = false, fmt.Sprintf("VmSize %d bytes: the %d-byte mapping is there", obs.vmSize, pastTheCap(memoryLimit))
			}
		case bomb:
			r.Evidence = fmt.Sprintf("the worker's reply; at most %d threads seen by the broker", obs.maxThreads)
			if obs.maxThreads >= bombThreads {
				r.Blocked, r.How = false, fmt.Sprintf("%d threads", obs.maxThreads)
			}
		}
		return r
	}
	switch {
	case e.Signal == syscall.SIGSYS && e.Syscall != "":
		r.Evidence = "wait status SIGSYS; the kernel's audit record names " + e.Syscall
		if slices.Contains(spec.calls, e.Syscall) {
			r.Blocked, r.How = true, "SIGSYS"
		} else {
			r.How = "killed by seccomp for " + e.Syscall + ", not a call of this probe (" + strings.Join(spec.calls, ", ") + ")"
		}
	case e.Signal == syscall.SIGSYS:
		r.Blocked, r.How = true, "SIGSYS"
		r.Evidence = "wait status SIGSYS; the killed call is UNCONFIRMED (the kernel log is unreadable here, or its records were rate-limited)"
	case bomb && obs.maxThreads < bombThreads:
		r.Blocked, r.How = true, "the worker could not create its threads: "+e.String()
		r.Evidence = fmt.Sprintf("wait status; at most %d threads seen by the broker", obs.maxThreads)
	default:
		r.How = "worker ended without a verdict: " + e.String()
		r.Evidence = "wait status"
	}
	return r
}

// RunProbes runs each named probe in a fresh probe worker and returns the
// results and the first worker's report.
// In seccomp-log mode no probe runs (it would really happen): each is
// reported as not blocked.
func RunProbes(cfg Config, names []string) ([]ProbeResult, Report, error) {
	var rep Report
	out := make([]ProbeResult, 0, len(names))
	if cfg.SeccompLog {
		s, err := StartProbeWorker(cfg)
		if err != nil {
			return nil, rep, err
		}
		rep = s.Report
		rep.Layers = append(append([]Layer(nil), s.Process.Report.Layers...), rep.Layers...)
		s.Close()
		for _, n := range names {
			out = append(out, ProbeResult{Name: n, How: "not run: sandbox_seccomp_log logs calls instead of blocking them"})
		}
		return out, rep, nil
	}
	for _, n := range names {
		spec, ok := lookupProbe(n)
		if !ok {
			return out, rep, fmt.Errorf("sandbox: %w %q", errUnknownProbe, n)
		}
		early := ""
		if spec.phase != PhaseServing {
			early = n
		}
		s, err := startProbe(cfg, early)
		if err != nil {
			return out, rep, err
		}
		if len(rep.Layers) == 0 && !s.dead {
			rep = s.Report
			rep.Layers = append(append([]Layer(nil), s.Process.Report.Layers...), rep.Layers...)
		}
		out = append(out, s.Probe(n))
		select {
		case <-s.Process.Done():
		default:
			s.Close()
		}
	}
	return out, rep, nil
}
