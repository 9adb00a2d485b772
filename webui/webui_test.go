package webui

import (
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

// TestHandler checks each URL's answer: the page and its assets with
// their types, 404 and 405 otherwise, the CSP and the other headers on
// every answer.
func TestHandler(t *testing.T) {
	tests := []struct {
		method, path string
		status       int
		ctype        string
		body         string // a part of the body
	}{
		{"GET", "/", 200, "text/html; charset=utf-8", `<script src="/webui/app.js" defer></script>`},
		{"GET", "/index.html", 200, "text/html; charset=utf-8", "<title>"},
		{"GET", "/webui/app.js", 200, "text/javascript; charset=utf-8", "/v1/chat/completions"},
		{"GET", "/webui/style.css", 200, "text/css; charset=utf-8", "body"},
		{"GET", "/webui/icon.svg", 200, "image/svg+xml", "<svg"},
		{"HEAD", "/", 200, "text/html; charset=utf-8", ""},
		{"GET", "/webui/", 404, "", ""},
		{"GET", "/webui/../webui.go", 404, "", ""},
		{"GET", "/static/index.html", 404, "", ""},
		{"POST", "/", 405, "", ""},
	}
	h := Handler()
	for _, tt := range tests {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(tt.method, tt.path, nil))
		res := rec.Result()
		body, _ := io.ReadAll(res.Body)
		if res.StatusCode != tt.status {
			t.Errorf("%s %s: status %d, want %d", tt.method, tt.path, res.StatusCode, tt.status)
			continue
		}
		if got := res.Header.Get("Content-Security-Policy"); got != CSP {
			t.Errorf("%s %s: CSP %q", tt.method, tt.path, got)
		}
		if res.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s %s: no nosniff", tt.method, tt.path)
		}
		if tt.ctype != "" && res.Header.Get("Content-Type") != tt.ctype {
			t.Errorf("%s %s: type %q, want %q", tt.method, tt.path, res.Header.Get("Content-Type"), tt.ctype)
		}
		if !strings.Contains(string(body), tt.body) {
			t.Errorf("%s %s: body lacks %q", tt.method, tt.path, tt.body)
		}
		if tt.method == "HEAD" && len(body) != 0 {
			t.Errorf("HEAD %s: %d bytes of body", tt.path, len(body))
		}
	}
	if res := httptest.NewRecorder(); true {
		h.ServeHTTP(res, httptest.NewRequest("POST", "/", nil))
		if res.Header().Get("Allow") != "GET, HEAD" {
			t.Errorf("405 without Allow: %q", res.Header().Get("Allow"))
		}
	}
}

// TestCSPIsStrict checks the policy allows nothing inline, nothing
// evaluated and nothing from another origin.
func TestCSPIsStrict(t *testing.T) {
	for _, bad := range []string{"unsafe-inline", "unsafe-eval", "http:", "https:", "data:", "*", "blob:"} {
		if strings.Contains(CSP, bad) {
			t.Errorf("CSP allows %q: %s", bad, CSP)
		}
	}
	for _, need := range []string{"default-src 'none'", "script-src 'self'", "style-src 'self'", "connect-src 'self'", "frame-ancestors 'none'"} {
		if !strings.Contains(CSP, need) {
			t.Errorf("CSP lacks %q", need)
		}
	}
}

// TestPageHasNoInlineCodeOrExternalAsset checks the embedded page: no
// inline script, style or event handler (the CSP would block them), no
// URL of another origin, and every local URL it names is served.
func TestPageHasNoInlineCodeOrExternalAsset(t *testing.T) {
	page, err := fs.ReadFile(files, "static/index.html")
	if err != nil {
		t.Fatal(err)
	}
	html := string(page)
	checks := []struct {
		name string
		re   string
	}{
		{"inline script", `<script(\s[^>]*)?>\s*[^<\s]`},
		{"style element", `<style`},
		{"style attribute", `\sstyle=`},
		{"event handler attribute", `\son[a-z]+=`},
		{"javascript URL", `javascript:`},
		{"external URL", `(src|href)="(https?:)?//`},
	}
	for _, c := range checks {
		if m := regexp.MustCompile(`(?i)` + c.re).FindString(html); m != "" {
			t.Errorf("%s in index.html: %q", c.name, m)
		}
	}
	for _, tag := range regexp.MustCompile(`(?i)<script[^>]*>`).FindAllString(html, -1) {
		if !strings.Contains(tag, ` src="`) {
			t.Errorf("script element without src: %q", tag)
		}
	}
	h := Handler()
	refs := regexp.MustCompile(`(?:src|href)="([^"]+)"`).FindAllStringSubmatch(html, -1)
	if len(refs) < 3 {
		t.Fatalf("found %d asset references in index.html, want the script, the style sheet and the icon", len(refs))
	}
	for _, m := range refs {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", m[1], nil))
		if rec.Code != http.StatusOK {
			t.Errorf("index.html names %s, served with %d", m[1], rec.Code)
		}
	}
	js, err := fs.ReadFile(files, "static/app.js")
	if err != nil {
		t.Fatal(err)
	}
	// The script writes server text as text, never as HTML, and keeps the
	// key in sessionStorage only.
	for _, bad := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "localStorage", "http://", "https://"} {
		if strings.Contains(string(js), bad) {
			t.Errorf("app.js uses %q", bad)
		}
	}
}
