package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lisa-llm/lisa/internal/shared"
)

// The end-to-end tests run the real lisa binary, as a user does: lisa
// serve with the sandboxed worker serving stories260K, driven over HTTP.

// server is one running lisa serve.
type server struct {
	cmd  *exec.Cmd
	url  string
	logs *lockedBuffer
	done chan error
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// freePort returns a loopback port nobody listens on right now.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startServe starts lisa serve on stories260K with extra flags and waits
// until /health says ok.
func startServe(t *testing.T, extra ...string) *server {
	t.Helper()
	return startServeModel(t, shared.Path(t, "models/stories260K.gguf"), extra...)
}

// startServeModel starts lisa serve on the model at path (sandbox on).
func startServeModel(t *testing.T, model string, extra ...string) *server {
	t.Helper()
	// A relative model path, as a user types it, resolved from the
	// server's working directory.
	rel, err := filepath.Rel(filepath.Dir(model), model)
	if err != nil {
		t.Fatal(err)
	}
	return startServer(t, append([]string{"-m", rel}, extra...), nil, filepath.Dir(model), 30*time.Second)
}

// startServer runs lisa serve with args (and --listen on a free port,
// JSON logs) in dir with env (nil: this process's), and waits up to ready
// for /health to say "ok"; the server is killed when the test ends.
func startServer(t *testing.T, args, env []string, dir string, ready time.Duration) *server {
	t.Helper()
	addr := "127.0.0.1:" + strconv.Itoa(freePort(t))
	args = append(append([]string{"serve"}, args...), "--listen", addr, "--log-format", "json")
	s := &server{cmd: exec.Command(e2eBinary(t), args...), url: "http://" + addr, logs: &lockedBuffer{}, done: make(chan error, 1)}
	s.cmd.Dir, s.cmd.Env = dir, env
	s.cmd.Stdout, s.cmd.Stderr = s.logs, s.logs
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { s.done <- s.cmd.Wait() }()
	t.Cleanup(func() {
		_ = s.cmd.Process.Kill()
		<-s.done
		if t.Failed() {
			t.Logf("lisa %v logs:\n%s", args, s.logs.String())
		}
	})
	for deadline := time.Now().Add(ready); ; time.Sleep(50 * time.Millisecond) {
		select {
		case err := <-s.done:
			s.done <- err
			t.Fatalf("lisa %v exited: %v\n%s", args, err, s.logs.String())
		default:
		}
		if resp, err := http.Get(s.url + "/health"); err == nil {
			var st struct{ Status string }
			_ = json.NewDecoder(resp.Body).Decode(&st)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK && st.Status == "ok" {
				return s
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("lisa %v not ready after %v\n%s", args, ready, s.logs.String())
		}
	}
}

// post sends a JSON body and decodes the JSON answer.
func (s *server) post(t *testing.T, path string, body any) (int, map[string]any) {
	t.Helper()
	data, _ := json.Marshal(body)
	resp, err := http.Post(s.url+path, "application/json", bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("%s: decode: %v", path, err)
	}
	return resp.StatusCode, out
}

// completion returns the text and finish reason of a /v1/completions answer.
func completion(t *testing.T, out map[string]any) (string, string, map[string]any) {
	t.Helper()
	choices, _ := out["choices"].([]any)
	if len(choices) != 1 {
		t.Fatalf("answer %v", out)
	}
	c := choices[0].(map[string]any)
	usage, _ := out["usage"].(map[string]any)
	text, _ := c["text"].(string)
	finish, _ := c["finish_reason"].(string)
	return text, finish, usage
}

// refGreedy is llama.cpp's greedy text for each stories260K reference prompt.
func refGreedy(t *testing.T) map[string]string {
	t.Helper()
	data, err := os.ReadFile(shared.Path(t, "ref/reference/stories260K.gguf.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Prompts []struct {
			Prompt   string   `json:"prompt"`
			Pieces   []string `json:"generated_pieces"`
			FirstEOG int      `json:"first_eog_gen_index"`
		} `json:"prompts"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, p := range doc.Prompts {
		n := len(p.Pieces)
		if p.FirstEOG >= 0 {
			n = p.FirstEOG
		}
		out[p.Prompt] = strings.Join(p.Pieces[:n], "")
	}
	return out
}

// TestServeEndToEnd: the served model says what llama.cpp says, alone and
// with four clients at once, streams, honours stop strings, and runs in a
// worker that is locked down while it serves.
func TestServeEndToEnd(t *testing.T) {
	s := startServe(t, "--parallel", "4", "--threads", "2")
	refs := refGreedy(t)
	for prompt, want := range refs {
		code, out := s.post(t, "/v1/completions", map[string]any{"prompt": prompt, "max_tokens": 64, "temperature": 0})
		if code != http.StatusOK {
			t.Fatalf("%q: status %d %v", prompt, code, out)
		}
		if text, _, _ := completion(t, out); text != want {
			t.Errorf("%q:\n got %q\nwant %q (llama.cpp)", prompt, text, want)
		}
	}
	t.Run("four clients at once", func(t *testing.T) {
		var wg sync.WaitGroup
		got := make(map[string]string)
		var mu sync.Mutex
		for prompt := range refs {
			wg.Go(func() {
				_, out := s.post(t, "/v1/completions", map[string]any{"prompt": prompt, "max_tokens": 64, "temperature": 0})
				text, _, _ := completion(t, out)
				mu.Lock()
				got[prompt] = text
				mu.Unlock()
			})
		}
		wg.Wait()
		for prompt, want := range refs {
			if got[prompt] != want {
				t.Errorf("%q beside three others:\n got %q\nwant %q", prompt, got[prompt], want)
			}
		}
	})
	t.Run("prefix reuse", func(t *testing.T) {
		prompt := "Once upon a time" + refs["Once upon a time"][:20]
		s.post(t, "/v1/completions", map[string]any{"prompt": prompt, "max_tokens": 4, "temperature": 0})
		_, out := s.post(t, "/v1/completions", map[string]any{"prompt": prompt + " and", "max_tokens": 4, "temperature": 0})
		_, _, usage := completion(t, out)
		details, _ := usage["prompt_tokens_details"].(map[string]any)
		if cached, _ := details["cached_tokens"].(float64); cached < 5 {
			t.Errorf("cached tokens %v for a prompt that extends the last one (usage %v)", details["cached_tokens"], usage)
		}
	})
	t.Run("stop across tokens", func(t *testing.T) {
		full := refs["Once upon a time"]
		stop := full[8:17] // inside " little" to inside "girl"
		_, out := s.post(t, "/v1/completions", map[string]any{"prompt": "Once upon a time", "max_tokens": 64, "temperature": 0, "stop": []string{stop}})
		if text, finish, _ := completion(t, out); text != full[:8] || finish != "stop" {
			t.Errorf("stop %q: %q (%s), want %q (stop)", stop, text, finish, full[:8])
		}
	})
	t.Run("stream", func(t *testing.T) {
		body, _ := json.Marshal(map[string]any{"prompt": "Once upon a time", "max_tokens": 30, "temperature": 0, "stream": true})
		resp, err := http.Post(s.url+"/v1/completions", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var text strings.Builder
		sawDone := false
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			line, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			if line == "[DONE]" {
				sawDone = true
				break
			}
			var ev struct {
				Choices []struct {
					Text string `json:"text"`
				} `json:"choices"`
			}
			if err := json.Unmarshal([]byte(line), &ev); err != nil {
				t.Fatalf("event %q: %v", line, err)
			}
			for _, c := range ev.Choices {
				text.WriteString(c.Text)
			}
		}
		if want := refs["Once upon a time"]; !sawDone || !strings.HasPrefix(want, text.String()) || text.Len() < 40 {
			t.Errorf("streamed %q (done %v), want a 30-token prefix of %q", text.String(), sawDone, want)
		}
	})
	t.Run("worker locked down while serving", func(t *testing.T) {
		pid := workerPID(t, s.cmd.Process.Pid)
		status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"Seccomp:\t2", "Seccomp_filters:\t2", "NoNewPrivs:\t1",
			"CapInh:\t0000000000000000", "CapPrm:\t0000000000000000", "CapEff:\t0000000000000000",
			"CapBnd:\t0000000000000000", "CapAmb:\t0000000000000000"} {
			if !strings.Contains(string(status), want+"\n") {
				t.Errorf("worker %d status lacks %q:\n%s", pid, want, status)
			}
		}
		for _, ns := range []string{"user", "mnt", "pid", "net", "ipc", "uts", "cgroup"} {
			mine, err1 := os.Readlink(fmt.Sprintf("/proc/%d/ns/%s", s.cmd.Process.Pid, ns))
			its, err2 := os.Readlink(fmt.Sprintf("/proc/%d/ns/%s", pid, ns))
			if err1 != nil || err2 != nil || mine == its {
				t.Errorf("%s namespace: broker %q, worker %q (%v %v)", ns, mine, its, err1, err2)
			}
		}
		entries, err := os.ReadDir(fmt.Sprintf("/proc/%d/root", pid))
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		if len(names) != 1 || names[0] != "model" {
			t.Errorf("the worker's root holds %q, want only the model", names)
		}
		if !strings.Contains(s.logs.String(), `"landlock_abi":`) || strings.Contains(s.logs.String(), "SANDBOX DISABLED") {
			t.Errorf("ready line does not report the sandbox:\n%s", s.logs.String())
		}
	})
	t.Run("stops on SIGTERM", func(t *testing.T) {
		if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-s.done:
			s.done <- err
			if err != nil {
				t.Errorf("exit after SIGTERM: %v", err)
			}
		case <-time.After(15 * time.Second):
			t.Error("lisa serve still running 15 s after SIGTERM")
		}
	})
}

// workerPID finds the sandboxed worker: the process whose parent is the
// broker (the worker may sit below an init in its PID namespace; the
// broker's direct child is what the host sees).
func workerPID(t *testing.T, broker int) int {
	t.Helper()
	// Any of the broker's threads may have started it.
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", broker))
	if err != nil {
		t.Fatal(err)
	}
	var fields []string
	for _, f := range tasks {
		data, err := os.ReadFile(f)
		if err != nil {
			continue // the thread ended
		}
		fields = append(fields, strings.Fields(string(data))...)
	}
	if len(fields) != 1 {
		t.Fatalf("broker %d has children %q, want one worker", broker, fields)
	}
	pid, err := strconv.Atoi(fields[0])
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// TestServeOpenAIClient runs the official openai npm client against lisa
// serve on the real model (tools/openai-check), greedy text checked
// against llama.cpp's.
func TestServeOpenAIClient(t *testing.T) {
	dir, err := filepath.Abs(filepath.Join("..", "..", "tools", "openai-check"))
	if err != nil {
		t.Fatal(err)
	}
	node := shared.NodeTool(t, dir, "openai")
	s := startServe(t, "--embeddings")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "check.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "LISA_URL="+s.url+"/v1", "LISA_MAX=24", "LISA_EMBEDDINGS=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("openai-check: %v\n%s", err, out)
	}
	var res struct {
		Completion string   `json:"completion"`
		Failures   []string `json:"failures"`
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &res); err != nil {
		t.Fatalf("openai-check output %q: %v", out, err)
	}
	if len(res.Failures) != 0 {
		t.Errorf("openai-check failures: %q", res.Failures)
	}
	if want := refGreedy(t)["Once upon a time"]; !strings.HasPrefix(want, res.Completion) || len(res.Completion) < 40 {
		t.Errorf("openai client's completion %q is not a 24-token prefix of llama.cpp's %q", res.Completion, want)
	}
}

// TestLoadgen: lisa loadgen against a real server counts every generated
// token and prints both tables.
func TestLoadgen(t *testing.T) {
	s := startServe(t, "--parallel", "2", "--rate-limit-rpm", "0")
	var out, errb strings.Builder
	code := runLoadgen([]string{"--url", s.url, "--clients", "1,2", "-n", "8", "-r", "1", "--busy", "1",
		"--ttft-prompt", "16", "--vocab", "512"}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	// Random ids rarely hit an end-of-generation token at once; the
	// generated count is at most what was asked for and never zero.
	var rows int
	for _, line := range strings.Split(out.String(), "\n") {
		f := strings.Split(line, "|")
		if len(f) < 7 {
			continue
		}
		c, err1 := strconv.Atoi(strings.TrimSpace(f[1]))
		n, err2 := strconv.Atoi(strings.TrimSpace(f[2]))
		if err1 != nil || err2 != nil {
			continue
		}
		rows++
		if n < c || n > 8*c {
			t.Errorf("%d clients generated %d tokens (asked 8 each)", c, n)
		}
	}
	if rows != 2 || !strings.Contains(out.String(), "TTFT under load / idle") {
		t.Errorf("output:\n%s", out.String())
	}
	if code := runLoadgen([]string{"--clients", "0"}, &out, &errb); code != 2 {
		t.Errorf("--clients 0: exit %d", code)
	}
}
