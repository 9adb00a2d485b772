package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lisa-llm/lisa/hub"
	"github.com/lisa-llm/lisa/internal/hubtest"
	"github.com/lisa-llm/lisa/internal/shared"
)

// hubEnv returns the environment under which a lisa process talks to the
// local hub h and keeps models in dir: HF_ENDPOINT is h, and h's
// certificate is trusted through SSL_CERT_FILE, the standard way to add a
// CA, so the process runs the production TLS checks unchanged.
func hubEnv(t *testing.T, h *hubtest.Server, dir string) []string {
	t.Helper()
	cert := filepath.Join(t.TempDir(), "hub.pem")
	if err := os.WriteFile(cert, h.CertPEM(), 0o644); err != nil {
		t.Fatal(err)
	}
	var env []string
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); k != hub.EnvToken && k != hub.EnvEndpoint && k != hub.EnvModels && k != "SSL_CERT_FILE" && k != "SSL_CERT_DIR" {
			env = append(env, kv)
		}
	}
	return append(env, hub.EnvEndpoint+"="+h.URL, "SSL_CERT_FILE="+cert, hub.EnvModels+"="+dir)
}

// lisaCmd runs the lisa binary with env and returns its exit code, stdout
// and stderr.
func lisaCmd(t *testing.T, env []string, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, e2eBinary(t), args...)
	cmd.Env = env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("lisa %q: %v", args, err)
		}
		code = ee.ExitCode()
	}
	return code, out.String(), errb.String()
}

func hexSHA(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// TestPullCommands: lisa pull, lisa models and lisa models rm as a user
// runs them, against the local hub, piped (so without progress).
func TestPullCommands(t *testing.T) {
	h := hubtest.New(t)
	data := bytes.Repeat([]byte("GGUF model bytes "), 40000)
	h.Add("owner/Model-GGUF", &hubtest.Repo{Files: map[string]*hubtest.File{
		"Model-Q4_K_M.gguf": {Data: data}, "Model-Q8_0.gguf": {Data: data[:100]}}})
	h.Add("owner/Gated-GGUF", &hubtest.Repo{Gated: true, Files: map[string]*hubtest.File{"Gated-Q8_0.gguf": {Data: data[:10]}}})
	dir := t.TempDir()
	env := hubEnv(t, h, dir)

	code, out, errOut := lisaCmd(t, env, "pull", "owner/Model-GGUF:q4_k_m")
	path := filepath.Join(dir, "owner", "Model-GGUF", "Model-Q4_K_M.gguf")
	if code != 0 || !strings.HasPrefix(out, path+"\t") || !strings.Contains(out, "sha256:"+hexSHA(data)) {
		t.Fatalf("pull: exit %d\nstdout %q\nstderr %q", code, out, errOut)
	}
	if errOut != "" {
		t.Errorf("a piped pull printed progress: %q", errOut)
	}
	if got, _ := os.ReadFile(path); !bytes.Equal(got, data) {
		t.Error("pulled file differs")
	}

	code, out, _ = lisaCmd(t, env, "models")
	if code != 0 || !strings.Contains(out, "owner/Model-GGUF/Model-Q4_K_M.gguf") || !strings.Contains(out, "Q4_K_M") ||
		!strings.Contains(out, hexSHA(data)) || !strings.Contains(out, formatBytes(int64(len(data)))) {
		t.Errorf("models: exit %d\n%s", code, out)
	}

	code, _, errOut = lisaCmd(t, env, "pull", "owner/Gated-GGUF")
	if code != 1 || !strings.Contains(errOut, "HF_TOKEN") {
		t.Errorf("gated without a token: exit %d, %q", code, errOut)
	}
	code, _, errOut = lisaCmd(t, append(env, hub.EnvToken+"="+h.Token), "pull", "owner/Gated-GGUF")
	if code != 0 {
		t.Errorf("gated with the token: exit %d, %q", code, errOut)
	}

	for _, bad := range []string{"../x", "owner/Model-GGUF/../../x.gguf", "owner/Model-GGUF:Q4 K"} {
		if code, _, errOut := lisaCmd(t, env, "pull", bad); code != 2 || !strings.Contains(errOut, "bad name") {
			t.Errorf("pull %q: exit %d, %q", bad, code, errOut)
		}
	}

	code, out, errOut = lisaCmd(t, env, "models", "rm", "owner/Model-GGUF/Model-Q4_K_M.gguf")
	if code != 0 || !strings.Contains(out, "removed owner/Model-GGUF/Model-Q4_K_M.gguf") {
		t.Errorf("models rm: exit %d %q %q", code, out, errOut)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("file after rm: %v", err)
	}
	if code, _, errOut := lisaCmd(t, env, "models", "rm", "owner/Model-GGUF:Q4_K_M"); code != 1 || !strings.Contains(errOut, "not found") {
		t.Errorf("second rm: exit %d %q", code, errOut)
	}
}

// TestServeHF: lisa serve -hf pulls stories260K from the local hub, pins
// its digest and serves what llama.cpp generates; started again with the
// hub gone it serves the pulled file; a different --model-sha256 is
// refused.
func TestServeHF(t *testing.T) {
	data, err := os.ReadFile(shared.Path(t, "models/stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	h := hubtest.New(t)
	h.Add("tiny/stories-GGUF", &hubtest.Repo{Files: map[string]*hubtest.File{
		"stories260K-F32.gguf": {Data: data, DropAt: int64(len(data) / 3)}, // resumed within the pull
		"mmproj-F32.gguf":      {Data: data[:64]},
	}})
	dir := t.TempDir()
	env := hubEnv(t, h, dir)

	s := startServeHF(t, env, "tiny/stories-GGUF:f32")
	logs := s.logs.String()
	if !strings.Contains(logs, "download interrupted; resuming") {
		t.Errorf("the dropped connection was not resumed:\n%s", logs)
	}
	if !strings.Contains(logs, `"model_sha256":"`+hexSHA(data)+`"`) {
		t.Errorf("logs do not pin the digest %s:\n%s", hexSHA(data), logs)
	}
	resp, err := http.Get(s.url + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), `"stories260K-F32"`) {
		t.Errorf("/v1/models: %s", body)
	}
	want := refGreedy(t)["Once upon a time"]
	code, res := s.post(t, "/v1/completions", map[string]any{"prompt": "Once upon a time", "max_tokens": 64, "temperature": 0})
	if text, _, _ := completion(t, res); code != http.StatusOK || text != want {
		t.Errorf("completion %d %q, want %q", code, text, want)
	}
	_ = s.cmd.Process.Kill()
	<-s.done
	s.done <- nil

	// The hub is gone: the pulled model is found on disk.
	h.Close()
	s = startServeHF(t, env, "tiny/stories-GGUF:F32")
	if !strings.Contains(s.logs.String(), hexSHA(data)) || strings.Contains(s.logs.String(), "pulling the model") {
		t.Errorf("second start:\n%s", s.logs.String())
	}
	_ = s.cmd.Process.Kill()
	<-s.done
	s.done <- nil

	code, _, errOut := lisaCmd(t, env, "serve", "-hf", "tiny/stories-GGUF:F32", "--listen", "127.0.0.1:"+strconv.Itoa(freePort(t)),
		"--model-sha256", strings.Repeat("0", 64))
	if code != 1 || !strings.Contains(errOut, "verified SHA-256 "+hexSHA(data)) {
		t.Errorf("a different --model-sha256: exit %d\n%s", code, errOut)
	}
}

// startServeHF starts lisa serve -hf ref with env and waits for /health.
func startServeHF(t *testing.T, env []string, ref string) *server {
	t.Helper()
	return startServer(t, []string{"-hf", ref}, env, "", 60*time.Second)
}

// readmeHub starts a local hub holding every repository the README pulls
// or serves with -hf (each file stories260K under the name its tag
// implies) and returns the environment that points lisa at it, so the
// README's real commands run in TestReadmeRuns without the network.
func readmeHub(t *testing.T, readme, sharedDir string) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(sharedDir, "models", "stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	h := hubtest.New(t)
	for _, m := range regexp.MustCompile(`(?:-hf|lisa pull)\s+(\S+)`).FindAllStringSubmatch(readme, -1) {
		ref, err := hub.ParseRef(m[1])
		if err != nil {
			t.Fatalf("README names %q: %v", m[1], err)
		}
		file := ref.File
		if file == "" {
			q := ref.Quant
			if q == "" {
				q = "Q4_K_M"
			}
			_, name, _ := strings.Cut(ref.Repo, "/")
			file = strings.TrimSuffix(name, "-GGUF") + "-" + q + ".gguf"
		}
		h.Add(ref.Repo, &hubtest.Repo{Files: map[string]*hubtest.File{file: {Data: data}}})
	}
	return slices.Clip(hubEnv(t, h, t.TempDir()))
}

// TestPullProgressTerminal: with stderr on a terminal, lisa pull draws
// its progress line and ends it with the verified size.
func TestPullProgressTerminal(t *testing.T) {
	h := hubtest.New(t)
	data := bytes.Repeat([]byte("0123456789abcdef"), 1<<17) // 2 MiB
	h.Add("owner/Bar-GGUF", &hubtest.Repo{Files: map[string]*hubtest.File{"Bar-Q8_0.gguf": {Data: data}}})
	ptm, pts := openPTY(t)
	shown := readAll(ptm)
	cmd := exec.Command(e2eBinary(t), "pull", "owner/Bar-GGUF")
	cmd.Env = hubEnv(t, h, t.TempDir())
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, pts
	if err := cmd.Run(); err != nil {
		t.Fatalf("lisa pull on a terminal: %v", err)
	}
	pts.Close()
	got := <-shown
	if !strings.Contains(got, "\rBar-Q8_0.gguf 100.0% 2.0 MiB / 2.0 MiB  verified") || !strings.Contains(out.String(), hexSHA(data)) {
		t.Errorf("terminal shows %q, stdout %q", got, out.String())
	}
}
