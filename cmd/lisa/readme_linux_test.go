package main

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lisa-llm/lisa/internal/shared"
)

// TestReadmeRuns runs every line of the README's shell blocks with sh, as
// a newcomer would paste them, in a directory laid out like a clone
// (./lisa, ./config, ../shared): each lisa serve line starts a server that
// must pass /health and stays up for the lines after it, until the next
// serve line; every other line must exit 0 (curl with -f: an HTTP error
// fails it; a curl line piped to grep fails when grep finds nothing). Ports 8080 and 8081 (the key section's second server)
// become free ports; lisa pull and serve -hf reach a local hub serving stories260K
// (readmeHub). make build and make test are the two lines not run here: the test
// builds lisa with the Makefile's flags itself, and make test is what
// .ci/run runs.
func TestReadmeRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the README's commands; skipped with -short")
	}
	data, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := exec.LookPath("curl"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("curl, which the README's commands use: %v", err)
		}
		t.Skipf("curl, which the README's commands use: %v", err)
	}
	sharedDir := shared.Dir(t)
	bin := buildRelease(t, "amd64")
	root := t.TempDir()
	work := filepath.Join(root, "lisa")
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, step := range []func() error{
		func() error { return os.Mkdir(work, 0o755) },
		func() error { return os.Symlink(sharedDir, filepath.Join(root, "shared")) },
		func() error { return os.Symlink(filepath.Join(repo, "config"), filepath.Join(work, "config")) },
		func() error { return os.Link(bin, filepath.Join(work, "lisa")) },
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	port, port2 := strconv.Itoa(freePort(t)), strconv.Itoa(freePort(t))
	ports := strings.NewReplacer(":8080", ":"+port, "--port 8080", "--port "+port, ":8081", ":"+port2, "--port 8081", "--port "+port2)
	env := readmeHub(t, string(data), sharedDir)
	var server *exec.Cmd
	var serverLogs *lockedBuffer
	stop := func() {
		if server != nil {
			_ = server.Process.Kill()
			_ = server.Wait()
			server = nil
		}
	}
	defer stop()
	ran := 0
	for _, line := range readmeShellLines(string(data)) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") || line == "make build" || line == "make test" {
			continue
		}
		line = ports.Replace(line)
		if strings.HasPrefix(line, "curl -s ") {
			line = "curl -f" + strings.TrimPrefix(line, "curl -") // an HTTP error fails the line
		}
		ran++
		if strings.HasPrefix(line, "./lisa serve ") && !strings.Contains(line, "--help") && !strings.Contains(line, "--check-config") {
			stop()
			serverLogs = &lockedBuffer{}
			server = exec.Command("sh", "-c", "exec "+line)
			server.Dir, server.Stdout, server.Stderr = work, serverLogs, serverLogs
			server.Env = append(env, "PWD="+work)
			if err := server.Start(); err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			p := port
			if strings.Contains(line, ":"+port2) || strings.Contains(line, "--port "+port2) {
				p = port2
			}
			waitHealthy(t, "http://127.0.0.1:"+p+"/health", line, serverLogs)
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		cmd := exec.CommandContext(ctx, "sh", "-c", line)
		cmd.Dir = work
		cmd.Env = append(env, "PWD="+work)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		cancel()
		if err != nil {
			logs := ""
			if serverLogs != nil {
				logs = serverLogs.String()
			}
			t.Errorf("README line %q: %v\n%s\nserver logs:\n%s", line, err, out.String(), logs)
		} else if strings.HasPrefix(line, "curl ") && !strings.Contains(line, "|") && !strings.Contains(out.String(), `"`) {
			// (A piped line is checked by the command it pipes to.)
			t.Errorf("README line %q answered no JSON: %q", line, out.String())
		}
	}
	if ran < 12 {
		t.Errorf("ran %d README lines; the README should hold more", ran)
	}
}

// waitHealthy polls url until it answers 200 within 30 s, failing t with
// the server's logs otherwise.
func waitHealthy(t *testing.T, url, what string, logs *lockedBuffer) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
	}
	t.Fatalf("%s: %s not healthy within 30 s; logs:\n%s", what, url, logs.String())
}
