package sandbox

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lisa-llm/lisa/gguf"
)

// probeHello is the probe worker's first line on fd 3.
type probeHello struct {
	Report Report `json:"report"`
	Error  string `json:"error,omitempty"`
	Model  string `json:"model,omitempty"`
}

// ProbeWorker is the main function of a probe worker: a worker that locks
// itself down exactly as a serving worker does, loads the model with
// package gguf and touches every page of its tensors, enters seccomp
// stage 2, reports its layers on fd 3 and then obeys line commands on fd 3: "probe NAME" (attempt one escape and
// report how it was stopped, if it survives), "work N" (touch the model
// from N goroutines under GC pressure), "echo TEXT", "exit". It is reached
// only as `lisa sandbox-check`'s worker and from this package's tests; the
// probes refuse to run unless the sandbox is fully applied. args are the
// worker's arguments from WorkerFlag on; it returns the exit status.
func ProbeWorker(args []string) int {
	conn := os.NewFile(FDIPC, "ipc")
	wc, err := WorkerFlags(args)
	if err != nil {
		return helloFail(conn, err)
	}
	env := probeEnv{hostModel: wc.HostModelPath, memoryLimit: wc.MemoryLimit}
	if len(wc.Args) > 0 {
		env.brokerPid, _ = strconv.Atoi(wc.Args[0])
	}
	// An early probe (one that runs before seccomp or under stage 1 alone)
	// is named on the command line: it runs during the lock-down.
	var early probeSpec
	var earlyResult *ProbeResult
	if len(wc.Args) > 1 {
		var ok bool
		if early, ok = lookupProbe(wc.Args[1]); !ok || early.phase == PhaseServing {
			return helloFail(conn, fmt.Errorf("sandbox: %q is not a probe that runs during the lock-down", wc.Args[1]))
		}
	}
	var setupErr error
	wc.hooks = &lockHooks{
		beforeLandlock: func() {
			if early.name == "connect to an abstract unix socket past seccomp (Landlock scope)" ||
				early.name == "signal a process outside the domain (Landlock scope)" {
				setupErr = prepareScopeProbes(&env)
			}
		},
		afterLandlock: func(rep *Report) {
			if early.phase == PhaseLandlock && setupErr == nil {
				r := runProbe(rep, early, PhaseLandlock, env)
				earlyResult = &r
			}
		},
	}
	model, rep, err := LockDown(wc)
	if err == nil {
		err = setupErr
	}
	if err != nil {
		return helloFail(conn, err)
	}
	if early.phase == PhaseLoading {
		r := runProbe(&rep, early, PhaseLoading, env)
		earlyResult = &r
	}
	m, err := loadModel(model)
	if err != nil {
		return helloFail(conn, err)
	}
	m.touch(max(1, wc.Threads))
	if err := EnterServing(&rep); err != nil {
		return helloFail(conn, err)
	}
	if err := writeJSONLine(conn, probeHello{Report: rep, Model: m.describe()}); err != nil {
		return 1
	}
	return probeLoop(conn, &rep, m, env, earlyResult)
}

func helloFail(conn io.Writer, err error) int {
	fmt.Fprintln(os.Stderr, "sandbox worker:", err)
	writeJSONLine(conn, probeHello{Error: err.Error()})
	return 1
}

func writeJSONLine(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// probeLoop serves commands until "exit" or the end of the connection.
// early is the result of the probe run during the lock-down, if any.
func probeLoop(conn *os.File, rep *Report, m *mappedModel, env probeEnv, early *ProbeResult) int {
	sc := bufio.NewScanner(conn)
	sc.Buffer(make([]byte, 4096), 4096)
	for sc.Scan() {
		cmd, arg, _ := strings.Cut(sc.Text(), " ")
		var reply any
		switch cmd {
		case "probe":
			spec, ok := lookupProbe(arg)
			switch {
			case early != nil && early.Name == arg:
				reply = *early
			case !ok:
				reply = ProbeResult{Name: arg, How: fmt.Sprintf("%v %q", errUnknownProbe, arg)}
			default:
				reply = runProbe(rep, spec, PhaseServing, env)
			}
		case "work":
			n, err := strconv.Atoi(arg)
			if err != nil || n < 1 || n > 64 {
				reply = map[string]string{"error": "work: bad thread count " + strconv.Quote(arg)}
				break
			}
			reply = map[string]uint64{"sum": m.touch(n)}
		case "alloc":
			n, err := strconv.Atoi(arg)
			if err != nil || n < 1 || n > 1<<20 {
				reply = map[string]string{"error": "alloc: bad size " + strconv.Quote(arg)}
				break
			}
			reply = map[string]int{"allocated_mib": allocate(n)}
		case "forge":
			// What a compromised worker could write: a seccomp trap's
			// report on stderr, then an exit. The broker must not believe it.
			os.Stderr.WriteString("SIGSYS: bad system call\nPC=0x4711 m=0 sigcode=1\n\nrax    0x29\n")
			return 2
		case "getppid":
			// A harmless call on no list: killed, or logged in log mode.
			reply = map[string]int{"ppid": unix.Getppid()}
		case "echo":
			reply = map[string]string{"echo": arg}
		case "exit":
			return 0
		default:
			reply = map[string]string{"error": "unknown command " + strconv.Quote(cmd)}
		}
		if err := writeJSONLine(conn, reply); err != nil {
			return 1
		}
	}
	return 0
}

// mappedModel is the parsed model and its tensor data, used in place.
type mappedModel struct {
	// fhs are fds 4, 5, …, kept referenced: under stage 2 a finalizer's
	// close would be a kill, as in the serving worker.
	fhs     []*os.File
	file    *gguf.File
	tensors [][]byte
}

// loadModel parses the model (all its shards, when it is split) with the
// project's GGUF reader (mapping it read-only) and collects every
// tensor's data.
func loadModel(fhs []*os.File) (*mappedModel, error) {
	g, err := gguf.OpenSplit(fhs, gguf.DefaultLimits())
	if err != nil {
		return nil, fmt.Errorf("sandbox: load model: %w", err)
	}
	m := &mappedModel{fhs: fhs, file: g}
	for i := range g.Tensors {
		b, err := g.TensorData(&g.Tensors[i])
		if err != nil {
			g.Close()
			return nil, fmt.Errorf("sandbox: load model: tensor %d: %w", i, err)
		}
		m.tensors = append(m.tensors, b)
	}
	return m, nil
}

// describe names the model in one line.
func (m *mappedModel) describe() string {
	return fmt.Sprintf("GGUF v%d, %d tensors, architecture %q", m.file.Version, len(m.file.Tensors), m.file.Architecture())
}

// touch reads every page of every tensor from n goroutines while
// allocating garbage, as loading and serving do, and returns a checksum.
func (m *mappedModel) touch(n int) uint64 {
	const page = 4096
	var wg sync.WaitGroup
	sums := make([]uint64, n)
	for g := 0; g < n; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			var junk [][]byte
			for ti, data := range m.tensors {
				if ti%n != g {
					continue
				}
				for off := 0; off < len(data); off += page {
					sums[g] += uint64(data[off])
					if off%(16*page) == 0 {
						junk = append(junk, make([]byte, 64<<10))
					}
					if len(junk) > 64 {
						junk = nil
						runtime.Gosched()
					}
				}
			}
			time.Sleep(time.Millisecond)
		}(g)
	}
	wg.Wait()
	runtime.GC()
	var s uint64
	for _, v := range sums {
		s += v
	}
	return s
}

// allocate holds mib MiB of touched heap at once and returns mib; past the
// worker's memory limit the runtime dies of "out of memory" instead.
func allocate(mib int) int {
	chunks := make([][]byte, 0, mib)
	for i := 0; i < mib; i++ {
		c := make([]byte, 1<<20)
		for j := 0; j < len(c); j += 4096 {
			c[j] = byte(i)
		}
		chunks = append(chunks, c)
	}
	runtime.KeepAlive(chunks)
	return len(chunks)
}
