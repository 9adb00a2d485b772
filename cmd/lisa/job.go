package main

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"

	"github.com/lisa-llm/lisa/broker"
	"github.com/lisa-llm/lisa/config"
	"github.com/lisa-llm/lisa/gguf"
	"github.com/lisa-llm/lisa/sandbox"
)

// The commands that read a model file (tokenize, gguf inspect, gguf
// tensor, the vocabulary of gguf synth and bench --synthetic) parse it in
// a one-job sandboxed worker: the broker side opens the file, starts the
// worker with the job's name, sends the job's JSON parameters on the
// worker's socket and reads back a bounded stream of output frames ending
// in an ok or error frame. The worker looks the job up in a fixed table
// and runs it on the locked-down model. --no-sandbox runs the same job
// function in this process.

// jobWorkerArg, lisa's first argument, makes it a one-job worker.
const jobWorkerArg = "--job-worker"

// Frame kinds of the worker's reply: output bytes, then one ok or error.
const (
	frameOutput = 'o'
	frameOK     = 'k'
	frameError  = 'e'
)

const (
	// maxFrame bounds one output frame.
	maxFrame = 1 << 20
	// maxJobErr bounds the error message a worker reports.
	maxJobErr = 64 << 10
	// maxJobParams bounds the parameters sent to the worker (tokenize's
	// text is at most maxTokenizeFile, base64 in JSON).
	maxJobParams = 2*maxTokenizeFile + 1<<20
)

// jobEnv is what a job function gets: its parameters, the model and where
// its output goes.
type jobEnv struct {
	params []byte    // the JSON parameters from the command
	out    io.Writer // the reply, bounded by the broker side
	// open parses the model: the locked-down fd in the worker, the path
	// (with its split shards) in process.
	open func() (*gguf.File, error)
	// serving enters the serving seccomp stage: a job calls it once the
	// model is parsed, before working on what it read.
	serving func() error
}

// parse decodes the job's parameters into p and parses the model.
func (env *jobEnv) parse(p any) (*gguf.File, error) {
	if err := json.Unmarshal(env.params, p); err != nil {
		return nil, fmt.Errorf("parameters: %w", err)
	}
	return env.open()
}

// jobFunc is one job: it parses the model, does its work and writes its
// output to env.out.
type jobFunc func(env *jobEnv) error

// lookupJob returns the job named name: a fixed table, so a worker runs
// only these.
func lookupJob(name string) (jobFunc, bool) {
	switch name {
	case "tokenize":
		return tokenizeJob, true
	case "inspect":
		return inspectJob, true
	case "tensor":
		return tensorJob, true
	case "vocab":
		return vocabJob, true
	case "modelinfo":
		return modelInfoJob, true
	}
	return nil, false
}

// jobCall is a job the broker side runs on a model.
type jobCall struct {
	cmd       string // "lisa tokenize": the prefix of the --no-sandbox warning
	job       string // a name lookupJob knows
	model     string // the model's path
	params    any    // marshalled to JSON for the job
	noSandbox bool   // run the job in this process
	// noSandboxHint says how to go on where no sandbox can be built
	// ("": the commands' --no-sandbox).
	noSandboxHint string
	// limit returns the most bytes of output the job may write, given
	// the model's size.
	limit func(size int64) int64
}

// jobError is an error the job reported (from the worker: its message,
// escaped, as the worker is not trusted to write to a terminal).
type jobError struct {
	Job string
	Msg string
}

func (e *jobError) Error() string { return e.Msg }

// errReplyTooLarge reports a job writing more than its limit.
var errReplyTooLarge = errors.New("job output over its limit")

// noSandboxWarning is what a command prints with --no-sandbox.
const noSandboxWarning = "warning: --no-sandbox: the model is parsed in this process; a malicious model file gets your user's rights"

// runJob runs c and writes its output to out; stderr receives the
// --no-sandbox warning and the worker's own stderr.
func runJob(c jobCall, out, stderr io.Writer) error {
	job, ok := lookupJob(c.job)
	if !ok {
		return fmt.Errorf("unknown job %q", c.job)
	}
	params, err := json.Marshal(c.params)
	if err != nil {
		return err
	}
	if len(params) > maxJobParams {
		return fmt.Errorf("job parameters of %d bytes, over %d", len(params), maxJobParams)
	}
	path, err := filepath.Abs(c.model)
	if err != nil {
		return err
	}
	fh, err := os.Open(path)
	if err != nil {
		return err
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return err
	}
	limit := c.limit(st.Size())
	if c.noSandbox {
		fmt.Fprintln(stderr, c.cmd+": "+noSandboxWarning)
		var files []*gguf.File
		defer func() {
			for _, f := range files {
				f.Close()
			}
		}()
		env := &jobEnv{params: params, out: &limitWriter{w: out, n: limit},
			open: func() (*gguf.File, error) {
				f, err := gguf.Open(path, gguf.DefaultLimits())
				if err == nil {
					files = append(files, f)
				}
				return f, err
			},
			serving: func() error { return nil }}
		return job(env)
	}
	hint := c.noSandboxHint
	if hint == "" {
		hint = "--no-sandbox parses in this process"
	}
	return runJobSandboxed(c.job, path, fh, params, limit, hint, out, stderr)
}

// runJobSandboxed runs job in a sandboxed worker (the lock-down of lisa
// serve's worker) on the model fh at path and copies its output to out.
func runJobSandboxed(job, path string, fh *os.File, params []byte, limit int64, hint string, out, stderr io.Writer) error {
	// A split model's further shards go to the worker too (it parses
	// them; the command only opens them by name).
	shardPaths, shards, err := broker.OpenShards(path, sandbox.MaxShards)
	if err != nil {
		return err
	}
	defer broker.CloseShards(shards)
	proc, err := sandbox.Start(sandbox.Config{Enabled: true, ModelPath: path, Model: fh, ShardPaths: shardPaths, Shards: shards,
		MemoryLimit: config.Default().MemoryLimitBytes, ExecArgs: []string{jobWorkerArg}, Args: []string{job}, Stderr: stderr})
	if err != nil {
		// Where no sandbox can be built (off Linux, no user namespaces),
		// say how to go on anyway, knowingly.
		return fmt.Errorf("start the sandboxed worker (lisa doctor says what the host lacks; %s): %w", hint, err)
	}
	defer proc.Kill()
	// The parameters go on the socket (the text to tokenize may be larger
	// than a command-line argument), concurrently with reading the reply
	// so a worker that does not read cannot block the command.
	sent := make(chan error, 1)
	go func() {
		var n [4]byte
		binary.BigEndian.PutUint32(n[:], uint32(len(params)))
		_, err := proc.Conn.Write(append(n[:], params...))
		sent <- err
	}()
	rerr := readReply(job, proc.Conn, out, limit)
	proc.Conn.Close() // the worker exits when it sees the end of its socket
	exit := proc.Wait()
	<-sent
	var je *jobError
	switch {
	case rerr == nil:
		return nil
	case errors.As(rerr, &je), errors.Is(rerr, errReplyTooLarge):
		return rerr
	}
	return fmt.Errorf("%s worker: %w (worker: %s)", job, rerr, exit.String())
}

// readReply copies the output frames of r to out, at most limit bytes,
// and returns nil on the ok frame, a *jobError on the error frame.
func readReply(job string, r io.Reader, out io.Writer, limit int64) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var total int64
	for {
		var h [5]byte
		if _, err := io.ReadFull(br, h[:]); err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return fmt.Errorf("reply: %w", err)
		}
		n := int64(binary.BigEndian.Uint32(h[1:]))
		switch h[0] {
		case frameOutput:
			if n > maxFrame {
				return fmt.Errorf("reply: output frame of %d bytes, over %d", n, maxFrame)
			}
			if total += n; total > limit {
				return fmt.Errorf("%s: %w (%d bytes)", job, errReplyTooLarge, limit)
			}
			if _, err := io.CopyN(out, br, n); err != nil {
				if errors.Is(err, io.EOF) {
					err = io.ErrUnexpectedEOF
				}
				return fmt.Errorf("reply: %w", err)
			}
		case frameOK:
			if n != 0 {
				return fmt.Errorf("reply: ok frame of %d bytes", n)
			}
			return nil
		case frameError:
			if n > maxJobErr {
				return fmt.Errorf("reply: error frame of %d bytes, over %d", n, maxJobErr)
			}
			msg := make([]byte, n)
			if _, err := io.ReadFull(br, msg); err != nil {
				return fmt.Errorf("reply: %w", err)
			}
			return &jobError{Job: job, Msg: printable(msg)}
		default:
			return fmt.Errorf("reply: unknown frame kind %#x", h[0])
		}
	}
}

// limitWriter fails once more than n bytes are written: the same bound
// in process as for the worker.
type limitWriter struct {
	w io.Writer
	n int64
}

func (l *limitWriter) Write(p []byte) (int, error) {
	if int64(len(p)) > l.n {
		return 0, fmt.Errorf("%w (%d bytes more)", errReplyTooLarge, int64(len(p))-l.n)
	}
	l.n -= int64(len(p))
	return l.w.Write(p)
}

// frameWriter writes output frames.
type frameWriter struct{ w *bufio.Writer }

func (f frameWriter) Write(p []byte) (int, error) {
	done := 0
	for len(p) > 0 {
		n := min(len(p), maxFrame)
		if err := writeFrame(f.w, frameOutput, p[:n]); err != nil {
			return done, err
		}
		done += n
		p = p[n:]
	}
	return done, nil
}

func writeFrame(w *bufio.Writer, kind byte, p []byte) error {
	var h [5]byte
	h[0] = kind
	binary.BigEndian.PutUint32(h[1:], uint32(len(p)))
	if _, err := w.Write(h[:]); err != nil {
		return err
	}
	_, err := w.Write(p)
	return err
}

// jobWorkerMain is a one-job worker's whole life; args follow
// jobWorkerArg. It locks down as lisa serve's worker does, reads its
// parameters from the socket, runs the job on the model, writes the
// reply and waits for the command to close the socket.
func jobWorkerMain(args []string) int {
	wc, err := sandbox.WorkerFlags(args)
	if err != nil {
		fmt.Fprintln(os.Stderr, "lisa job worker:", err)
		return 2
	}
	mf, rep, err := sandbox.LockDown(wc)
	if err != nil {
		fmt.Fprintln(os.Stderr, "lisa job worker: lock-down:", err)
		return 1
	}
	// Under the serving stage close is not allowed: the model file and
	// what maps it stay referenced until exit.
	defer runtime.KeepAlive(mf)
	conn := os.NewFile(sandbox.FDIPC, "ipc")
	bw := bufio.NewWriterSize(conn, 64<<10)
	err = runWorkerJob(wc.Args, conn, mf, bw, &rep)
	if err != nil {
		msg := err.Error()
		if len(msg) > maxJobErr {
			msg = msg[:maxJobErr]
		}
		err = writeFrame(bw, frameError, []byte(msg))
	} else {
		err = writeFrame(bw, frameOK, nil)
	}
	if err != nil || bw.Flush() != nil {
		return 1
	}
	io.Copy(io.Discard, conn) // until the command closes its end
	return 0
}

// runWorkerJob reads the parameters and runs the job args name.
func runWorkerJob(args []string, conn io.Reader, mf []*os.File, bw *bufio.Writer, rep *sandbox.Report) error {
	if len(args) != 1 {
		return fmt.Errorf("want one job name, got %d arguments", len(args))
	}
	job, ok := lookupJob(args[0])
	if !ok {
		return fmt.Errorf("unknown job %q", args[0])
	}
	var n [4]byte
	if _, err := io.ReadFull(conn, n[:]); err != nil {
		return fmt.Errorf("parameters: %w", err)
	}
	size := binary.BigEndian.Uint32(n[:])
	if size > maxJobParams {
		return fmt.Errorf("parameters of %d bytes, over %d", size, maxJobParams)
	}
	params := make([]byte, size)
	if _, err := io.ReadFull(conn, params); err != nil {
		return fmt.Errorf("parameters: %w", err)
	}
	var files []*gguf.File
	defer runtime.KeepAlive(&files)
	env := &jobEnv{params: params, out: frameWriter{bw},
		open: func() (*gguf.File, error) {
			f, err := gguf.OpenSplit(mf, gguf.DefaultLimits())
			if err == nil {
				files = append(files, f)
			}
			return f, err
		},
		serving: func() error { return sandbox.EnterServing(rep) }}
	return job(env)
}
