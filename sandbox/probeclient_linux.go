package sandbox

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
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
}

// StartProbeWorker starts a probe worker with cfg (whose Executable and
// ExecArgs must lead to ProbeWorker) and reads its report.
func StartProbeWorker(cfg Config) (*ProbeSession, error) {
	cfg.Args = append([]string{strconv.Itoa(os.Getpid())}, cfg.Args...)
	p, err := Start(cfg)
	if err != nil {
		return nil, err
	}
	s := &ProbeSession{Process: p, r: bufio.NewReaderSize(p.Conn, 64<<10)}
	var h probeHello
	if err := s.readLine(&h); err != nil {
		p.Kill()
		return nil, fmt.Errorf("sandbox: probe worker's report: %w (%v)", err, p.Wait())
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

// Probe runs one escape probe in this worker. A probe that kills the worker
// ends the session: the result is then read from how the worker died.
func (s *ProbeSession) Probe(name string) ProbeResult {
	var r ProbeResult
	err := s.Command("probe "+name, &r)
	if err == nil && r.Name == name {
		return r
	}
	s.Process.Kill()
	e := s.Process.Wait()
	switch {
	case e.Seccomp:
		return ProbeResult{Name: name, Blocked: true, How: "SIGSYS"}
	case err != nil && !errors.Is(err, os.ErrDeadlineExceeded):
		return ProbeResult{Name: name, How: "worker ended without a verdict: " + e.String()}
	}
	return ProbeResult{Name: name, How: fmt.Sprintf("no verdict (%v): %s", err, e.String())}
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
	for i, n := range names {
		s, err := StartProbeWorker(cfg)
		if err != nil {
			return out, rep, err
		}
		if i == 0 {
			rep = s.Report
			rep.Layers = append(append([]Layer(nil), s.Process.Report.Layers...), rep.Layers...)
		}
		r := s.Probe(n)
		out = append(out, r)
		select {
		case <-s.Process.Done():
		default:
			s.Close()
		}
	}
	return out, rep, nil
}
