package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lisa-llm/lisa/internal/shared"
)

// jobWorkerSeen reports whether a child of pid ran as a one-job worker
// in a user namespace other than this process's, polling /proc until
// done is closed.
func jobWorkerSeen(pid int, done <-chan struct{}) bool {
	self, _ := os.Readlink("/proc/self/ns/user")
	for {
		select {
		case <-done:
			return false
		default:
		}
		dirs, _ := os.ReadDir("/proc")
		for _, d := range dirs {
			child, err := strconv.Atoi(d.Name())
			if err != nil {
				continue
			}
			stat, err := os.ReadFile("/proc/" + d.Name() + "/stat")
			if err != nil {
				continue
			}
			// The fields after the command name, which is in parentheses.
			i := bytes.LastIndexByte(stat, ')')
			f := strings.Fields(string(stat[i+1:]))
			if len(f) < 2 || f[1] != strconv.Itoa(pid) {
				continue
			}
			cmdline, _ := os.ReadFile("/proc/" + d.Name() + "/cmdline")
			args := strings.Split(string(cmdline), "\x00")
			ns, err := os.Readlink("/proc/" + strconv.Itoa(child) + "/ns/user")
			if len(args) > 1 && args[1] == jobWorkerArg && err == nil && ns != self {
				return true
			}
		}
		time.Sleep(200 * time.Microsecond)
	}
}

// runWatched runs the lisa binary with args and reports its output and
// whether a sandboxed one-job worker was seen among its children.
func runWatched(t *testing.T, bin string, args ...string) (stdout, stderr string, worker bool) {
	t.Helper()
	var out, errb bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	seen := make(chan bool, 1)
	go func() { seen <- jobWorkerSeen(cmd.Process.Pid, done) }()
	// Stop polling as soon as a worker is seen, or when the command ends.
	werr := make(chan error, 1)
	go func() { werr <- cmd.Wait() }()
	select {
	case worker = <-seen:
		err := <-werr
		close(done)
		if err != nil {
			t.Fatalf("lisa %v: %v\n%s", args, err, errb.String())
		}
	case err := <-werr:
		close(done)
		worker = <-seen
		if err != nil {
			t.Fatalf("lisa %v: %v\n%s", args, err, errb.String())
		}
	}
	return out.String(), errb.String(), worker
}

// TestModelCommandsSandboxed runs each command that reads a model in the
// built binary: by default its parse happens in a sandboxed one-job
// worker (a child in its own user namespace) and prints what the
// in-process path (--no-sandbox, which warns) prints.
func TestModelCommandsSandboxed(t *testing.T) {
	vocab := shared.Path(t, "ref/vocab/ggml-vocab-llama-spm.gguf")
	model := shared.Model(t, "stories260K.gguf")
	bin := e2eBinary(t)
	dir := t.TempDir()
	text := filepath.Join(dir, "in.txt")
	if err := os.WriteFile(text, []byte("Hello world\n\xff</s>"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		args []string
		file string // the output file compared, when not stdout
	}{
		{"tokenize pieces", []string{"tokenize", "-m", vocab, "-f", text}, ""},
		{"tokenize json special", []string{"tokenize", "-m", model, "--json", "--special", "Once upon a time</s>"}, ""},
		{"inspect", []string{"gguf", "inspect", model}, ""},
		{"inspect json full", []string{"gguf", "inspect", "--json", "--full", vocab}, ""},
		{"tensor raw", []string{"gguf", "tensor", model, "token_embd.weight", "-o", "-"}, ""},
		{"tensor f32", []string{"gguf", "tensor", model, "blk.0.attn_q.weight", "--f32", "-o", "OUT"}, "OUT"},
		{"synth vocab", []string{"gguf", "synth", "--shape", "mini", "--type", "f16", "--vocab", vocab, "-o", "OUT"}, "OUT"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			outputs := map[bool]string{}
			for _, noSandbox := range []bool{false, true} {
				args := c.args
				file := ""
				if c.file != "" {
					file = filepath.Join(t.TempDir(), "out")
					args = nil
					for _, a := range c.args {
						if a == c.file {
							a = file
						}
						args = append(args, a)
					}
				}
				if noSandbox {
					args = append(args, "--no-sandbox")
				}
				stdout, stderr, worker := runWatched(t, bin, args...)
				warned := strings.Contains(stderr, noSandboxWarning)
				if worker == noSandbox || warned != noSandbox {
					t.Errorf("--no-sandbox %v: sandboxed worker seen %v, warned %v (stderr %q)", noSandbox, worker, warned, stderr)
				}
				if file != "" {
					b, err := os.ReadFile(file)
					if err != nil {
						t.Fatal(err)
					}
					stdout = string(b)
				}
				if stdout == "" {
					t.Errorf("--no-sandbox %v: no output", noSandbox)
				}
				outputs[noSandbox] = stdout
			}
			if outputs[false] != outputs[true] {
				t.Errorf("sandboxed output (%d bytes) differs from in-process output (%d bytes)", len(outputs[false]), len(outputs[true]))
			}
		})
	}
}

// TestModelCommandsSandboxedErrors checks that what a job reports comes
// back as the command's one error line, as in process.
func TestModelCommandsSandboxedErrors(t *testing.T) {
	model := shared.Model(t, "stories260K.gguf")
	bin := e2eBinary(t)
	notGGUF := filepath.Join(t.TempDir(), "x.gguf")
	if err := os.WriteFile(notGGUF, []byte("not a gguf file at all"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"gguf", "tensor", model, "nope", "-o", "-"}, `lisa gguf tensor: no tensor named "nope"`},
		{[]string{"gguf", "inspect", notGGUF}, "lisa gguf inspect: gguf: "},
		{[]string{"tokenize", "-m", notGGUF, "x"}, "lisa tokenize: gguf: "},
		{[]string{"gguf", "synth", "--shape", "qwen2-tiny", "--vocab", model, "-o", filepath.Join(t.TempDir(), "o")}, "tokens, shape qwen2-tiny needs"},
	}
	for _, c := range cases {
		var lines [2]string
		for i, extra := range [][]string{nil, {"--no-sandbox"}} {
			var out, errb bytes.Buffer
			cmd := exec.Command(bin, append(c.args, extra...)...)
			cmd.Stdout, cmd.Stderr = &out, &errb
			err := cmd.Run()
			lines[i] = commandLines(errb.String())
			if cmd.ProcessState.ExitCode() != 1 || strings.Count(lines[i], "\n") != 1 || !strings.Contains(lines[i], c.want) || out.Len() != 0 {
				t.Errorf("%v %v: %v, stdout %d bytes, stderr %q; want exit 1 and one line with %q", c.args, extra, err, out.Len(), errb.String(), c.want)
			}
		}
		if lines[0] != lines[1] {
			t.Errorf("%v: sandboxed error %q, in process %q", c.args, lines[0], lines[1])
		}
	}
}

// TestBenchSyntheticVocabSandboxed runs `lisa bench --synthetic --vocab`
// sandboxed: the vocabulary is parsed by a one-job worker, the model
// measured by the bench worker.
func TestBenchSyntheticVocabSandboxed(t *testing.T) {
	vocab := shared.Path(t, "ref/vocab/ggml-vocab-llama-spm.gguf")
	bin := e2eBinary(t)
	stdout, stderr, worker := runWatched(t, bin, "bench", "--synthetic", "mini:q8_0", "--vocab", vocab,
		"-p", "4", "-n", "1", "-r", "1", "-t", "1", "-o", "json")
	if !worker || strings.Contains(stderr, noSandboxWarning) {
		t.Errorf("vocabulary parsed in a sandboxed worker: %v; stderr %q", worker, stderr)
	}
	var rs []map[string]any
	if err := json.Unmarshal([]byte(stdout), &rs); err != nil || len(rs) == 0 {
		t.Errorf("results %q: %v", stdout, err)
	}
}
