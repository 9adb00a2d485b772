package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lisa-llm/lisa/model/synth"
)

// writeTinyModel writes a small synthetic qwen3 model (40960-token
// training context) into dir.
func writeTinyModel(t *testing.T, dir string) string {
	t.Helper()
	shape, ok := synth.Lookup("qwen3-tiny")
	if !ok {
		t.Fatal("no qwen3-tiny shape")
	}
	path := filepath.Join(dir, "tiny.gguf")
	if _, err := synth.WriteFile(path, synth.Options{Shape: shape, Type: synth.Q8_0, Seed: 1}); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestServeRefusesNonGGUFBeforeListening runs lisa serve on a text file:
// the sandboxed model check refuses it before the server listens, in one
// plain line (no log record quoting the quotes of the message).
func TestServeRefusesNonGGUFBeforeListening(t *testing.T) {
	bin := e2eBinary(t)
	dir := t.TempDir()
	bad := filepath.Join(dir, "notes.gguf")
	if err := os.WriteFile(bad, []byte("hello, this is no model\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "serve", "notes.gguf", "--port", strconv.Itoa(freePort(t)))
	cmd.Dir = dir
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
			t.Fatalf("exit %v, want 1\n%s", err, stderr.String())
		}
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("lisa serve on a text file still running after 60 s\n%s", stderr.String())
	}
	out := stderr.String()
	if strings.Contains(out, "listening") {
		t.Errorf("listened before refusing the model:\n%s", out)
	}
	want := `lisa serve: model ` + bad + `: gguf: offset 0x0: magic "hell" is not "GGUF"`
	if strings.TrimSpace(out) != want {
		t.Errorf("stderr %q, want the one line %q", out, want)
	}
	if strings.Contains(out, `\"`) {
		t.Errorf("escaped quotes in the refusal:\n%s", out)
	}
}

// TestServeLlamaServerHabits starts lisa serve as a llama-server user
// would (the model as an argument, -c past the training context, -np,
// -ngl, --alias) with the chat page, then stops it with SIGTERM.
func TestServeLlamaServerHabits(t *testing.T) {
	dir := t.TempDir()
	writeTinyModel(t, dir)
	s := startServer(t, []string{"tiny.gguf", "-c", "50000", "-np", "1", "-ngl", "99", "--alias", "tiny-chat", "--webui"},
		nil, dir, 60*time.Second)

	resp, err := http.Get(s.url + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	var models struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	err = json.NewDecoder(resp.Body).Decode(&models)
	resp.Body.Close()
	listed := false
	for _, m := range models.Data {
		listed = listed || m.ID == "tiny-chat"
	}
	if err != nil || !listed {
		t.Errorf("/v1/models: %v %+v, want tiny-chat (--alias) listed", err, models)
	}
	resp, err = http.Get(s.url + "/")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(resp.Header.Get("Content-Security-Policy"), "default-src 'none'") ||
		!strings.Contains(string(page), `<script src="/webui/app.js"`) {
		t.Errorf("GET / with --webui: %s, CSP %q, page of %d bytes", resp.Status, resp.Header.Get("Content-Security-Policy"), len(page))
	}

	logs := s.logs.String()
	warn := strings.Index(logs, "past the model's training context of 40960 tokens")
	listening := strings.Index(logs, `"msg":"listening"`)
	if warn < 0 || listening < 0 || warn > listening {
		t.Errorf("want the ctx_size warning before listening (at %d, %d):\n%s", warn, listening, logs)
	}
	if !strings.Contains(logs, "no GPU offload") {
		t.Errorf("no -ngl note:\n%s", logs)
	}

	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-s.done:
		s.done <- err
		if err != nil {
			t.Errorf("exit after SIGTERM: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("not stopped 30 s after SIGTERM")
	}
	logs = s.logs.String()
	if !strings.Contains(logs, `"msg":"worker stopped","reason":"server shutting down"`) {
		t.Errorf("no plain worker stop line:\n%s", logs)
	}
	if strings.Contains(logs, "signal 9") || strings.Contains(logs, `"level":"ERROR"`) {
		t.Errorf("the shutdown reads like a crash:\n%s", logs)
	}
}
