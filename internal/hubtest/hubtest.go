// Package hubtest is a local Hugging Face hub for tests: an httptest TLS
// server on loopback that speaks the API shapes package hub uses (the
// recursive tree listing with LFS oids and pages, resolve URLs that
// redirect LFS files to a storage path, byte ranges, gated repositories),
// with switches for the faults tests need.
package hubtest

import (
	"bytes"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// File is one file of a repository.
type File struct {
	Data []byte
	// NoLFS lists the file as kept in git: a blob SHA-1 oid and no lfs
	// object, and resolve serves it without a redirect.
	NoLFS bool
	// SHA256, when set, is the LFS oid the listing claims instead of the
	// data's own.
	SHA256 string
	// DropAt, when above 0, makes the first download of the file end
	// after that many bytes with the connection closed.
	DropAt int64
	// BeforeServe, when set, runs before the bytes of each download are
	// sent (after the redirect).
	BeforeServe func(*http.Request)

	dropped bool
}

// Repo is one model repository.
type Repo struct {
	Files map[string]*File
	// Gated repositories answer 401 without a token and 403 with a wrong
	// one.
	Gated bool
	// Listing, when set, is sent as the tree listing instead of the one
	// made from Files.
	Listing []byte
}

// Request is one request the server received.
type Request struct {
	Path  string // URL path
	Range string // the Range header
	Auth  bool   // whether it carried the server's token
}

// Server is a running local hub.
type Server struct {
	*httptest.Server
	// Token is what gated repositories accept as "Bearer TOKEN".
	Token string
	// PageSize, when above 0, splits listings into pages of that many
	// entries linked by rel="next".
	PageSize int
	// Handle, when set, sees every request first and reports whether it
	// answered it.
	Handle func(w http.ResponseWriter, r *http.Request) bool

	mu    sync.Mutex
	repos map[string]*Repo
	reqs  []Request
}

// New starts a hub on loopback, closed when t ends. Set fields before the
// first request.
func New(t testing.TB) *Server {
	s := &Server{Token: "hf_testtoken", repos: map[string]*Repo{}}
	s.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.reqs = append(s.reqs, Request{Path: r.URL.Path, Range: r.Header.Get("Range"), Auth: r.Header.Get("Authorization") == "Bearer "+s.Token})
		s.mu.Unlock()
		if s.Handle != nil && s.Handle(w, r) {
			return
		}
		s.route(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

// Add puts repository name ("owner/name") on the server.
func (s *Server) Add(name string, r *Repo) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.repos[name] = r
}

// Requests returns the requests received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

// CertPEM returns the server's certificate in PEM, for a process that
// trusts it through SSL_CERT_FILE.
func (s *Server) CertPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Certificate().Raw})
}

// route dispatches the three kinds of path: /api/models/O/N/tree/main,
// /O/N/resolve/main/FILE and /storage/O/N/FILE.
func (s *Server) route(w http.ResponseWriter, r *http.Request) {
	parts := strings.SplitN(strings.TrimPrefix(r.URL.Path, "/"), "/", 6)
	set := func(owner, name, file string) {
		r.SetPathValue("owner", owner)
		r.SetPathValue("name", name)
		r.SetPathValue("file", file)
	}
	switch {
	case r.Method != http.MethodGet:
		http.Error(w, "method", http.StatusMethodNotAllowed)
	case len(parts) == 6 && parts[0] == "api" && parts[1] == "models" && parts[4] == "tree" && parts[5] == "main":
		set(parts[2], parts[3], "")
		s.tree(w, r)
	case len(parts) >= 4 && parts[0] == "storage":
		set(parts[1], parts[2], strings.Join(parts[3:], "/"))
		s.storage(w, r)
	case len(parts) >= 5 && parts[2] == "resolve" && parts[3] == "main":
		set(parts[0], parts[1], strings.Join(parts[4:], "/"))
		s.resolve(w, r)
	default:
		http.NotFound(w, r)
	}
}

// repo returns the repository of r's path, answering 404 or the gate's
// 401/403 itself when it returns nil.
func (s *Server) repo(w http.ResponseWriter, r *http.Request) *Repo {
	s.mu.Lock()
	repo := s.repos[r.PathValue("owner")+"/"+r.PathValue("name")]
	s.mu.Unlock()
	switch auth := r.Header.Get("Authorization"); {
	case repo == nil:
		http.Error(w, `{"error":"Repository not found"}`, http.StatusNotFound)
	case repo.Gated && auth == "":
		http.Error(w, `{"error":"Access to this model is restricted"}`, http.StatusUnauthorized)
	case repo.Gated && auth != "Bearer "+s.Token:
		http.Error(w, `{"error":"Forbidden"}`, http.StatusForbidden)
	default:
		return repo
	}
	return nil
}

type lfs struct {
	OID         string `json:"oid"`
	Size        int    `json:"size"`
	PointerSize int    `json:"pointerSize"`
}

type entry struct {
	Type string `json:"type"`
	OID  string `json:"oid"`
	Size int    `json:"size"`
	Path string `json:"path"`
	LFS  *lfs   `json:"lfs,omitempty"`
}

// entries lists r's files and the directories above them, sorted.
func entries(r *Repo) []entry {
	dirs := map[string]bool{}
	var out []entry
	for p, f := range r.Files {
		blob := sha1.Sum(append([]byte("blob "+strconv.Itoa(len(f.Data))+"\x00"), f.Data...))
		e := entry{Type: "file", OID: hex.EncodeToString(blob[:]), Size: len(f.Data), Path: p}
		if !f.NoLFS {
			e.LFS = &lfs{OID: lfsOID(f), Size: len(f.Data), PointerSize: 134}
		}
		out = append(out, e)
		for d := p; strings.Contains(d, "/"); {
			d = d[:strings.LastIndex(d, "/")]
			if !dirs[d] {
				dirs[d] = true
				out = append(out, entry{Type: "directory", OID: strings.Repeat("0", 40), Path: d})
			}
		}
	}
	out = append(out, entry{Type: "file", OID: strings.Repeat("1", 40), Size: 2, Path: "README.md"})
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

func lfsOID(f *File) string {
	if f.SHA256 != "" {
		return f.SHA256
	}
	sum := sha256.Sum256(f.Data)
	return hex.EncodeToString(sum[:])
}

func (s *Server) tree(w http.ResponseWriter, r *http.Request) {
	repo := s.repo(w, r)
	if repo == nil {
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if repo.Listing != nil {
		w.Write(repo.Listing)
		return
	}
	all := entries(repo)
	from, _ := strconv.Atoi(r.URL.Query().Get("cursor"))
	page := all[min(from, len(all)):]
	if s.PageSize > 0 && len(page) > s.PageSize {
		page = page[:s.PageSize]
		next := *r.URL
		next.Scheme, next.Host = "https", r.Host
		q := next.Query()
		q.Set("cursor", strconv.Itoa(from+s.PageSize))
		next.RawQuery = q.Encode()
		w.Header().Set("Link", fmt.Sprintf(`<%s>; rel="next"`, next.String()))
	}
	json.NewEncoder(w).Encode(page)
}

func (s *Server) file(w http.ResponseWriter, r *http.Request) *File {
	repo := s.repo(w, r)
	if repo == nil {
		return nil
	}
	f := repo.Files[r.PathValue("file")]
	if f == nil {
		http.Error(w, `{"error":"Entry not found"}`, http.StatusNotFound)
	}
	return f
}

// resolve redirects an LFS file to its storage path, as the hub sends
// LFS files to a CDN, and serves a git file itself.
func (s *Server) resolve(w http.ResponseWriter, r *http.Request) {
	f := s.file(w, r)
	if f == nil {
		return
	}
	if f.NoLFS {
		s.serve(w, r, f)
		return
	}
	w.Header().Set("X-Linked-Size", strconv.Itoa(len(f.Data)))
	w.Header().Set("X-Linked-Etag", `"`+lfsOID(f)+`"`)
	http.Redirect(w, r, "/storage/"+r.PathValue("owner")+"/"+r.PathValue("name")+"/"+r.PathValue("file")+"?X-Signature=test", http.StatusFound)
}

func (s *Server) storage(w http.ResponseWriter, r *http.Request) {
	if f := s.file(w, r); f != nil {
		s.serve(w, r, f)
	}
}

// serve sends f's bytes with byte-range support, cutting the connection
// at f.DropAt the first time.
func (s *Server) serve(w http.ResponseWriter, r *http.Request, f *File) {
	if f.BeforeServe != nil {
		f.BeforeServe(r)
	}
	s.mu.Lock()
	drop := f.DropAt > 0 && !f.dropped
	f.dropped = f.dropped || drop
	s.mu.Unlock()
	var out http.ResponseWriter = w
	if drop {
		out = &dropper{ResponseWriter: w, left: f.DropAt}
	}
	http.ServeContent(out, r, "", time.Time{}, bytes.NewReader(f.Data))
}

// dropper passes through left bytes, then aborts the handler, which makes
// net/http close the connection in the middle of the body.
type dropper struct {
	http.ResponseWriter
	left int64
}

func (d *dropper) Write(p []byte) (int, error) {
	if int64(len(p)) > d.left {
		d.ResponseWriter.Write(p[:d.left])
		d.ResponseWriter.(http.Flusher).Flush()
		panic(http.ErrAbortHandler)
	}
	d.left -= int64(len(p))
	return d.ResponseWriter.Write(p)
}
