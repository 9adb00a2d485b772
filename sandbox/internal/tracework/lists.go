//go:build linux

package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"

	"github.com/lisa-llm/lisa/sandbox/seccomp"
)

// trace is what one strace -f log says the worker's threads called, by
// the stage they were in. strace -f follows only the broker's descendants:
// the broker is the first pid of the log and every thread it clones (its
// clone returns host tids), except the worker; every other pid is one of
// the worker's threads (whose clone returns tids of its PID namespace).
type trace struct {
	workerPid int
	broker    map[int]bool
	pending   map[int]bool // broker threads in an unfinished clone(CLONE_NEWUSER)
	stage     int
	calls     [3]map[string]int // before any filter, stage 1, stage 2
}

// lists reads an strace -f log, keeps the lines of the worker (pid given,
// plus every thread it cloned), splits them at its seccomp() calls, and
// compares each stage's calls with the compiled lists.
func lists(args []string) error {
	fs := flag.NewFlagSet("lists", flag.ContinueOnError)
	pid := fs.Int("pid", 0, "the worker's host pid (0: every child cloned with CLONE_NEWUSER, one after another)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 || *pid < 0 {
		return fmt.Errorf("usage: lists [-pid PID] STRACE.LOG")
	}
	f, err := os.Open(fs.Arg(0))
	if err != nil {
		return err
	}
	defer f.Close()
	tr, err := parseTrace(f, *pid)
	if err != nil {
		return err
	}
	for st := 1; st <= 2; st++ {
		report(tr.calls[st], seccomp.Stage(st))
	}
	return nil
}

// parseTrace reads an strace -f log; pid is the worker's, or 0 to take
// every child the broker cloned with CLONE_NEWUSER.
func parseTrace(r io.Reader, pid int) (*trace, error) {
	tr := &trace{workerPid: pid, pending: map[int]bool{}}
	for i := range tr.calls {
		tr.calls[i] = map[string]int{}
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		tr.line(sc.Text())
	}
	return tr, sc.Err()
}

// line handles one strace line: "PID  name(args) = ret" or a resumed call.
func (tr *trace) line(l string) {
	p, rest, ok := strings.Cut(strings.TrimSpace(l), " ")
	if !ok {
		return
	}
	pid, err := strconv.Atoi(p)
	if err != nil {
		return
	}
	if tr.broker == nil {
		tr.broker = map[int]bool{pid: true}
	}
	rest = strings.TrimSpace(rest)
	if strings.HasPrefix(rest, "<... ") {
		name, _, _ := strings.Cut(strings.TrimPrefix(rest, "<... "), " ")
		if tr.broker[pid] {
			if tr.pending[pid] && (name == "clone" || name == "clone3") {
				rest += " CLONE_NEWUSER" // the flags were on the unfinished line
				delete(tr.pending, pid)
			}
			tr.result(name, rest)
		}
		return
	}
	name, _, ok := strings.Cut(rest, "(")
	if !ok || strings.ContainsAny(name, " +-") {
		return // signals, exits
	}
	if tr.broker[pid] {
		if strings.Contains(rest, "CLONE_NEWUSER") && strings.HasSuffix(rest, "<unfinished ...>") {
			tr.pending[pid] = true
		}
		tr.result(name, rest)
		return
	}
	tr.calls[tr.stage][name]++
	if name == "seccomp" && strings.Contains(rest, "SECCOMP_SET_MODE_FILTER") && tr.stage < 2 {
		tr.stage++
	}
}

// result follows the broker's new threads: a clone that returned a pid
// other than the worker's adds it.
func (tr *trace) result(name, rest string) {
	if name != "clone" && name != "clone3" {
		return
	}
	i := strings.LastIndex(rest, "= ")
	if i < 0 {
		return
	}
	f := strings.Fields(rest[i+2:])
	if len(f) == 0 {
		return
	}
	child, err := strconv.Atoi(f[0])
	switch {
	case err != nil || child <= 0:
	case child == tr.workerPid || (tr.workerPid == 0 && strings.Contains(rest, "CLONE_NEWUSER")):
		tr.stage = 0 // a new worker: its calls start before any filter
	default:
		tr.broker[child] = true
	}
}

func report(seen map[string]int, st seccomp.Stage) {
	p, err := seccomp.Compile(seccomp.Options{Arch: runtime.GOARCH, Stage: st, SelfPid: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	listed := map[string]string{}
	for _, r := range p.Rules {
		listed[r.Name] = r.String()
	}
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	sort.Strings(names)
	fmt.Printf("%v: %d distinct calls seen, %d rules\n", st, len(names), len(p.Rules))
	for _, n := range names {
		mark := "  ok     "
		if listed[n] == "" {
			mark = "  MISSING"
		}
		fmt.Printf("%s %-20s %6d  %s\n", mark, n, seen[n], listed[n])
		delete(listed, n)
	}
	var unused []string
	for n := range listed {
		unused = append(unused, n)
	}
	sort.Strings(unused)
	fmt.Printf("  listed but not seen: %s\n", strings.Join(unused, " "))
}
