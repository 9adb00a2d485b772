// Package webui is lisa serve --webui's chat page: one HTML page, its
// script and its style sheet, embedded in the binary (no external
// asset), served under a Content-Security-Policy that allows nothing but
// this origin's own script, style and API calls (no inline script or
// style, no frames, no forms posting elsewhere). The page streams answers
// from /v1/chat/completions and shows the tokens per second. Its model
// picker lists /v1/models, one entry per model (aliases in the label,
// each model's state from a server with several models, a failed
// model's error), defaults to a loaded model, else one that did not
// fail, and keeps the choice in sessionStorage. It sends the API key
// typed into it (kept in sessionStorage too) to this server's API only.
package webui

import (
	"embed"
	"net/http"
)

//go:embed static
var files embed.FS

// CSP is the Content-Security-Policy of every response of the page: the
// page's own script and style from this origin, API calls to this
// origin, nothing else.
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; " +
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// assets maps the URL paths the page uses to the embedded files and
// their types: a fixed table, so no other embedded name is reachable.
func assets(path string) (file, ctype string, ok bool) {
	switch path {
	case "/", "/index.html":
		return "static/index.html", "text/html; charset=utf-8", true
	case "/webui/app.js":
		return "static/app.js", "text/javascript; charset=utf-8", true
	case "/webui/style.css":
		return "static/style.css", "text/css; charset=utf-8", true
	case "/webui/icon.svg":
		return "static/icon.svg", "image/svg+xml", true
	}
	return "", "", false
}

// Handler returns the handler of the page: GET or HEAD of "/" (the
// page), "/webui/app.js" and "/webui/style.css"; 404 for anything else,
// 405 for other methods.
func Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", CSP)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		h.Set("Cache-Control", "no-cache")
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			h.Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		name, ctype, ok := assets(r.URL.Path)
		if !ok {
			http.NotFound(w, r)
			return
		}
		b, err := files.ReadFile(name)
		if err != nil { // the table names only embedded files
			http.Error(w, "page missing from the binary", http.StatusInternalServerError)
			return
		}
		h.Set("Content-Type", ctype)
		if r.Method == http.MethodHead {
			return
		}
		_, _ = w.Write(b)
	})
}
