package webui

import (
	"bufio"
	"encoding/base64"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lisa-llm/lisa/broker"
	"github.com/lisa-llm/lisa/broker/brokertest"
	"github.com/lisa-llm/lisa/config"
)

// testOutDir is where the browser test keeps its screenshot: $LISA_TEST_OUT
// or .test-output at the repository's root (ignored by git).
func testOutDir(t *testing.T) string {
	dir := os.Getenv("LISA_TEST_OUT")
	if dir == "" {
		dir = filepath.Join("..", ".test-output")
	}
	dir = filepath.Join(dir, "webui")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// startChromium starts headless Chromium with the DevTools protocol on a
// free port and returns its browser endpoint. It skips the test when
// Chromium is not installed (fails it when CI is set: .ci/run installs
// Debian's chromium).
func startChromium(t *testing.T) string {
	t.Helper()
	bin := ""
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			bin = p
			break
		}
	}
	if bin == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("chromium not found on CI (.ci/run installs Debian's chromium)")
		}
		t.Skip("chromium not found: install it (Debian: apt-get install chromium) to run the chat page's browser test")
	}
	if testing.Short() {
		t.Skip("starts a browser; skipped with -short")
	}
	args := []string{"--headless", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
		"--disable-dev-shm-usage", "--remote-debugging-port=0", "--window-size=1000,700",
		"--user-data-dir=" + t.TempDir(), "about:blank"}
	if os.Geteuid() == 0 {
		// Chromium refuses to run its own sandbox as root (CI containers).
		args = append(args, "--no-sandbox")
	}
	cmd := exec.Command(bin, args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var log strings.Builder
	endpoint := make(chan string, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(stderr)
		re := regexp.MustCompile(`DevTools listening on (ws://\S+)`)
		for sc.Scan() {
			mu.Lock()
			if log.Len() < 64<<10 {
				log.WriteString(sc.Text() + "\n")
			}
			mu.Unlock()
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				endpoint <- m[1]
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
		_ = cmd.Wait()
		if t.Failed() {
			mu.Lock()
			t.Logf("chromium stderr:\n%s", log.String())
			mu.Unlock()
		}
	})
	select {
	case ep := <-endpoint:
		return ep
	case <-done:
		t.Fatalf("chromium exited before listening:\n%s", log.String())
	case <-time.After(60 * time.Second):
		t.Fatal("chromium did not open its DevTools endpoint within 60 s")
	}
	return ""
}

// TestChatPageInChromium loads the chat page in a real headless Chromium
// against a real broker (a fake model behind it) that requires an API
// key: the page must show that a key is needed, take the key typed in,
// show the model's name (its alias beside it, in a picker with nothing
// else to pick), send the message typed in, stream the reply
// (seen growing piece by piece), and show the tokens per second, with no
// console error or CSP violation. A screenshot is kept in the test
// output directory.
func TestChatPageInChromium(t *testing.T) {
	endpoint := startChromium(t)

	const key = "webui-test-key-0123456789abcdefXYZ"
	d, err := config.HashKey(key)
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.Model = "webui-test-model.gguf" // never opened: the fake backend is the model; the name is served
	cfg.APIKeys = []string{d.String()}
	cfg.ModelAliases = []string{"gpt-4o-mini"} // listed after the name: the picker shows one model
	if err := cfg.Resolve(); err != nil {
		t.Fatal(err)
	}
	pieces := []string{"Hello", ",", " I", " am", " the", " fake", " model", "."}
	fake := brokertest.New(pieces...)
	fake.Model.Name = "webui-test-model"
	fake.FirstDelay = 100 * time.Millisecond
	fake.Delay = 60 * time.Millisecond
	srv, err := broker.NewServer(&cfg, fake, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	srv.MountWebUI(Handler())
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()

	c := openPage(t, endpoint, ts.URL+"/")
	text, waitFor := c.text(t), c.waitFor(t)
	const statusJS = `document.getElementById("status").textContent`
	const modelJS = `document.getElementById("model").value`

	// Without a key the server answers 401 and the page says so.
	waitFor("the page asks for a key", statusJS, func(s string) bool { return strings.Contains(s, "API key") })
	if m := text(modelJS); m == "webui-test-model" {
		t.Fatalf("model shown without a key: %q", m)
	}

	// Type the key; leaving the field (focus to the prompt) commits it.
	if err := c.eval(`document.getElementById("key").focus(), ""`, nil); err != nil {
		t.Fatal(err)
	}
	if err := c.call("Input.insertText", map[string]any{"text": key}, nil); err != nil {
		t.Fatal(err)
	}
	if err := c.eval(`document.getElementById("prompt").focus(), ""`, nil); err != nil {
		t.Fatal(err)
	}
	waitFor("the model's name", modelJS, func(s string) bool { return s == "webui-test-model" })
	// One model: one option, the alias in its label, nothing to pick.
	opts := text(`[...document.getElementById("model").options].map(o => o.value + "=" + o.textContent).join("|") +
		"|disabled=" + document.getElementById("model").disabled`)
	if opts != "webui-test-model=webui-test-model (alias gpt-4o-mini)|disabled=true" {
		t.Errorf("picker %q, want the one model, its alias in the label, disabled", opts)
	}
	if got := text(`sessionStorage.getItem("lisa-api-key") || ""`); got != key {
		t.Errorf("sessionStorage key %q, want the key typed", got)
	}

	// Type a message and press Enter.
	const question = "Hi there, who are you?"
	if err := c.call("Input.insertText", map[string]any{"text": question}, nil); err != nil {
		t.Fatal(err)
	}
	for _, typ := range []string{"keyDown", "keyUp"} {
		if err := c.call("Input.dispatchKeyEvent", map[string]any{"type": typ, "key": "Enter", "code": "Enter",
			"windowsVirtualKeyCode": 13, "nativeVirtualKeyCode": 13}, nil); err != nil {
			t.Fatal(err)
		}
	}
	const replyJS = `(document.querySelector(".msg.assistant .content") || {textContent: ""}).textContent`
	seen := map[string]bool{}
	want := strings.Join(pieces, "")
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		r := text(replyJS)
		if r != "" {
			seen[r] = true
		}
		if r == want && strings.HasPrefix(text(statusJS), "done") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("reply %q, status %q; want %q; problems: %q", r, text(statusJS), want, c.problems())
		}
	}
	// Streamed: the reply was seen at several lengths before the whole.
	if len(seen) < 3 {
		t.Errorf("reply seen at %d lengths, want it growing as it streams: %v", len(seen), seen)
	}
	for s := range seen {
		if !strings.HasPrefix(want, s) {
			t.Errorf("partial reply %q is no prefix of %q", s, want)
		}
	}
	if u := text(`document.querySelector(".msg.user .content").textContent`); u != question {
		t.Errorf("user message shown %q, want %q", u, question)
	}
	tps := text(`document.getElementById("tps").textContent`)
	m := regexp.MustCompile(`^(\d+) tokens, ([0-9.]+) tokens/s$`).FindStringSubmatch(tps)
	if m == nil {
		t.Fatalf("tokens/s shown %q", tps)
	}
	if n, _ := strconv.Atoi(m[1]); n != len(pieces) {
		t.Errorf("tokens shown %s, want %d", m[1], len(pieces))
	}
	// The fake sends a piece every 60 ms: about 16 tokens/s.
	if r, _ := strconv.ParseFloat(m[2], 64); r < 4 || r > 40 {
		t.Errorf("tokens/s %v, want about 16 (a piece every 60 ms)", r)
	}
	// The message reached the server in the request.
	reqs := fake.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d generations, want 1", len(reqs))
	}
	if ms := reqs[0].Messages; len(ms) != 1 || ms[0].Role != "user" || ms[0].Content != question {
		t.Errorf("messages the server got %+v, want the question alone", ms)
	}
	// (The 401 is the page's first call, made before the key is typed.)
	if p := c.problems("status of 401"); len(p) != 0 {
		t.Errorf("console errors or CSP violations: %q", p)
	}

	c.screenshot(t, "chat.png")
}

// openPage opens a new tab of the browser at endpoint on url, with the
// runtime, log and page events on.
func openPage(t *testing.T, endpoint, url string) *cdp {
	t.Helper()
	ws, err := dialWS(endpoint, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.c.Close() })
	c := &cdp{ws: ws, timeout: 30 * time.Second}
	var target struct {
		TargetID string `json:"targetId"`
	}
	if err := c.call("Target.createTarget", map[string]any{"url": "about:blank"}, &target); err != nil {
		t.Fatal(err)
	}
	var att struct {
		SessionID string `json:"sessionId"`
	}
	if err := c.call("Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}, &att); err != nil {
		t.Fatal(err)
	}
	c.session = att.SessionID
	for _, m := range []string{"Runtime.enable", "Log.enable", "Page.enable"} {
		if err := c.call(m, map[string]any{}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.call("Page.navigate", map[string]any{"url": url}, nil); err != nil {
		t.Fatal(err)
	}
	return c
}

// text returns a function evaluating a string expression in the page.
func (c *cdp) text(t *testing.T) func(expr string) string {
	return func(expr string) string {
		t.Helper()
		var s string
		if err := c.eval(expr, &s); err != nil {
			t.Fatal(err)
		}
		return s
	}
}

// waitFor returns a function polling a string expression until ok
// accepts its value (20 s at most), returning that value.
func (c *cdp) waitFor(t *testing.T) func(what, expr string, ok func(string) bool) string {
	return func(what, expr string, ok func(string) bool) string {
		t.Helper()
		var last string
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			var s string
			if err := c.eval(expr, &s); err == nil {
				last = s
				if ok(s) {
					return s
				}
			}
		}
		t.Fatalf("%s: still %q after 20 s; problems: %q", what, last, c.problems())
		return ""
	}
}

// screenshot keeps a PNG of the page in the test output directory.
func (c *cdp) screenshot(t *testing.T, name string) {
	t.Helper()
	var shot struct {
		Data string `json:"data"`
	}
	if err := c.call("Page.captureScreenshot", map[string]any{"format": "png"}, &shot); err != nil {
		t.Fatal(err)
	}
	png, err := base64.StdEncoding.DecodeString(shot.Data)
	if err != nil || len(png) < 8 || string(png[1:4]) != "PNG" {
		t.Fatalf("screenshot: %v, %d bytes", err, len(png))
	}
	out := filepath.Join(testOutDir(t), name)
	if err := os.WriteFile(out, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", out)
}
