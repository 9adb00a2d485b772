package hub

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lisa-llm/lisa/internal/hubtest"
)

// testTimeout bounds every pull of these tests.
const testTimeout = 30 * time.Second

func blob(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, 1))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// newPuller returns a puller on the local hub hub, storing into a fresh
// directory, sending token when not "".
func newPuller(t *testing.T, hub *hubtest.Server, token string) *Puller {
	t.Helper()
	c, err := NewClient(Options{Endpoint: hub.URL, Token: token, Transport: hub.Client().Transport, Stall: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return &Puller{Client: c, Store: Store{Dir: t.TempDir()}}
}

func pull(t *testing.T, p *Puller, ref string) (*Local, error) {
	t.Helper()
	r, err := ParseRef(ref)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	return p.Pull(ctx, r)
}

// storageGets counts the downloads of file bytes the hub served.
func storageGets(hub *hubtest.Server, file string) int {
	n := 0
	for _, r := range hub.Requests() {
		if strings.HasPrefix(r.Path, "/storage/") && strings.HasSuffix(r.Path, "/"+file) {
			n++
		}
	}
	return n
}

func TestPullWithProgress(t *testing.T) {
	hub := hubtest.New(t)
	data := blob(1, 3<<20+17)
	hub.Add("o/m-GGUF", &hubtest.Repo{Files: map[string]*hubtest.File{
		"m-Q4_K_M.gguf": {Data: data}, "m-Q8_0.gguf": {Data: blob(2, 100)}}})
	p := newPuller(t, hub, "")
	var events []Event
	p.Progress = func(e Event) { events = append(events, e) }
	l, err := pull(t, p, "o/m-GGUF:q4_k_m")
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(l.Path())
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("file: %v, %d bytes of %d", err, len(got), len(data))
	}
	if want := filepath.Join(p.Store.Dir, "o", "m-GGUF", "m-Q4_K_M.gguf"); l.Path() != want || l.SHA256() != sha(data) || l.Name() != "o/m-GGUF/m-Q4_K_M.gguf" {
		t.Errorf("local %+v, want path %s digest %s", l, want, sha(data))
	}
	if len(events) < 3 || !events[len(events)-1].Finished || events[len(events)-1].Done != int64(len(data)) {
		t.Fatalf("events %+v", events)
	}
	for i := 1; i < len(events); i++ {
		if events[i].Done < events[i-1].Done || events[i].Total != int64(len(data)) || events[i].Count != 1 {
			t.Fatalf("event %d %+v after %+v", i, events[i], events[i-1])
		}
	}
	if _, err := os.Stat(l.Path() + partialSuffix); !os.IsNotExist(err) {
		t.Errorf("partial file left: %v", err)
	}
	if d := readDigest(l.Path()); d != sha(data) {
		t.Errorf("recorded digest %q", d)
	}
	// Pulled again: nothing downloaded, same answer.
	l2, err := pull(t, p, "o/m-GGUF:Q4_K_M")
	if err != nil || l2.SHA256() != l.SHA256() || storageGets(hub, "m-Q4_K_M.gguf") != 1 {
		t.Errorf("second pull: %v, %d downloads", err, storageGets(hub, "m-Q4_K_M.gguf"))
	}
	// Offline, as serve -hf finds it.
	found, err := p.Store.Find(Ref{Repo: "o/m-GGUF", Quant: "Q4_K_M"})
	if err != nil || found.Path() != l.Path() || found.SHA256() != sha(data) || found.Size() != int64(len(data)) {
		t.Errorf("Find: %+v, %v", found, err)
	}
}

func TestPullResumes(t *testing.T) {
	data := blob(3, 1<<20)
	const drop = 300_000
	t.Run("next pull", func(t *testing.T) {
		hub := hubtest.New(t)
		hub.Add("o/r", &hubtest.Repo{Files: map[string]*hubtest.File{"r.gguf": {Data: data, DropAt: drop}}})
		p := newPuller(t, hub, "")
		p.Attempts = 1
		_, err := pull(t, p, "o/r")
		if err == nil || !strings.Contains(err.Error(), "pull again to resume") {
			t.Fatalf("interrupted pull: %v", err)
		}
		part := filepath.Join(p.Store.Dir, "o", "r", "r.gguf"+partialSuffix)
		if st, err := os.Stat(part); err != nil || st.Size() < drop/2 || st.Size() > drop {
			t.Fatalf("partial file after the drop: %v %v", st, err)
		}
		l, err := pull(t, p, "o/r")
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := os.ReadFile(l.Path()); !bytes.Equal(got, data) {
			t.Fatal("resumed file differs")
		}
		checkResumed(t, hub)
	})
	t.Run("same pull", func(t *testing.T) {
		hub := hubtest.New(t)
		hub.Add("o/r", &hubtest.Repo{Files: map[string]*hubtest.File{"r.gguf": {Data: data, DropAt: drop}}})
		p := newPuller(t, hub, "")
		var retries int
		p.Progress = func(e Event) {
			if e.Retry != nil {
				retries++
			}
		}
		l, err := pull(t, p, "o/r")
		if err != nil || l.SHA256() != sha(data) || retries != 1 {
			t.Fatalf("pull: %v, %d retries", err, retries)
		}
		checkResumed(t, hub)
	})
}

// TestPullRangeIgnored: a server that answers a resume with the whole
// file (200) gets the file written from the start; a partial file longer
// than the file is started over.
func TestPullRangeIgnored(t *testing.T) {
	data := blob(9, 500_000)
	hub := hubtest.New(t)
	hub.Add("o/r", &hubtest.Repo{Files: map[string]*hubtest.File{"r.gguf": {Data: data, DropAt: 200_000}}})
	hub.Handle = func(w http.ResponseWriter, r *http.Request) bool {
		r.Header.Del("Range")
		return false
	}
	p := newPuller(t, hub, "")
	l, err := pull(t, p, "o/r")
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(l.Path()); !bytes.Equal(got, data) {
		t.Fatal("file differs")
	}
	// A leftover partial file longer than the file.
	other := blob(10, 1000)
	hub.Add("o/s", &hubtest.Repo{Files: map[string]*hubtest.File{"s.gguf": {Data: other}}})
	dst := filepath.Join(p.Store.Dir, "o", "s", "s.gguf")
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst+partialSuffix, blob(11, 5000), 0o644); err != nil {
		t.Fatal(err)
	}
	if l, err := pull(t, p, "o/s"); err != nil || l.SHA256() != sha(other) {
		t.Fatalf("over a long partial file: %v", err)
	}
	// A leftover partial file of other bytes: the resume fails to verify,
	// is deleted, and the next attempt downloads it whole.
	if err := os.Remove(dst); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst+partialSuffix, blob(12, 400), 0o644); err != nil {
		t.Fatal(err)
	}
	if l, err := pull(t, p, "o/s"); err != nil || l.SHA256() != sha(other) {
		t.Fatalf("over a stale partial file: %v", err)
	}
}

// checkResumed checks that the second download asked for a range from
// where the first stopped.
func checkResumed(t *testing.T, hub *hubtest.Server) {
	t.Helper()
	var ranges []string
	for _, r := range hub.Requests() {
		if strings.HasPrefix(r.Path, "/storage/") {
			ranges = append(ranges, r.Range)
		}
	}
	if len(ranges) != 2 || ranges[0] != "" || !strings.HasPrefix(ranges[1], "bytes=") || ranges[1] == "bytes=0-" {
		t.Errorf("downloads asked for ranges %q, want the whole file then a resume", ranges)
	}
}

func TestPullDigestMismatch(t *testing.T) {
	hub := hubtest.New(t)
	hub.Add("o/bad", &hubtest.Repo{Files: map[string]*hubtest.File{"bad.gguf": {Data: blob(4, 5000), SHA256: sha([]byte("other"))}}})
	p := newPuller(t, hub, "")
	_, err := pull(t, p, "o/bad")
	if !errors.Is(err, ErrDigest) || !strings.Contains(err.Error(), "deleted") || !strings.Contains(err.Error(), sha([]byte("other"))) {
		t.Fatalf("err %v", err)
	}
	dir := filepath.Join(p.Store.Dir, "o", "bad")
	entries, _ := os.ReadDir(dir)
	if len(entries) != 0 {
		t.Errorf("left in %s: %v", dir, entries)
	}
	if storageGets(hub, "bad.gguf") != 1 {
		t.Errorf("%d downloads of a file that cannot verify, want 1", storageGets(hub, "bad.gguf"))
	}
}

func TestPullGitFile(t *testing.T) {
	hub := hubtest.New(t)
	data := blob(5, 777)
	hub.Add("o/git", &hubtest.Repo{Files: map[string]*hubtest.File{"tiny.gguf": {Data: data, NoLFS: true}}})
	p := newPuller(t, hub, "")
	l, err := pull(t, p, "o/git/tiny.gguf")
	if err != nil || l.SHA256() != sha(data) {
		t.Fatalf("%+v %v", l, err)
	}
	// A file whose bytes changed on disk is not taken as in place.
	if err := os.WriteFile(l.Path(), blob(6, 777), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := pull(t, p, "o/git/tiny.gguf"); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(l.Path()); !bytes.Equal(got, data) {
		t.Error("a changed git file was not downloaded again")
	}
}

func TestPullGated(t *testing.T) {
	hub := hubtest.New(t)
	data := blob(7, 4096)
	hub.Add("o/gated", &hubtest.Repo{Gated: true, Files: map[string]*hubtest.File{"g.gguf": {Data: data}}})
	for _, tc := range []struct {
		token string
		want  string // in the error; "" for success
	}{
		{"", "set HF_TOKEN"},
		{"hf_wrong", "the token in HF_TOKEN does not give access"},
		{hub.Token, ""},
	} {
		p := newPuller(t, hub, tc.token)
		l, err := pull(t, p, "o/gated")
		if tc.want == "" {
			if err != nil || l.SHA256() != sha(data) {
				t.Errorf("with the token: %v", err)
			}
			continue
		}
		if !errors.Is(err, ErrAuth) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("token %q: %v, want ErrAuth saying %q", tc.token, err, tc.want)
		}
		if tc.token != "" && strings.Contains(err.Error(), tc.token) {
			t.Errorf("the error shows the token: %v", err)
		}
	}
}

func TestPullSplitShards(t *testing.T) {
	hub := hubtest.New(t)
	hub.PageSize = 2 // the listing comes in pages
	files := map[string]*hubtest.File{"m-Q8_0.gguf": {Data: blob(8, 10)}}
	var shards [][]byte
	for i := 1; i <= 3; i++ {
		shards = append(shards, blob(uint64(10+i), 1000*i))
		files[fmt.Sprintf("Q4_K_M/m-Q4_K_M-%05d-of-00003.gguf", i)] = &hubtest.File{Data: shards[i-1]}
	}
	hub.Add("o/split", &hubtest.Repo{Files: files})
	p := newPuller(t, hub, "")
	l, err := pull(t, p, "o/split:Q4_K_M")
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Files) != 3 || l.Files[0].File != "Q4_K_M/m-Q4_K_M-00001-of-00003.gguf" || l.Path() != l.Files[0].Path {
		t.Fatalf("files %+v", l.Files)
	}
	for i, f := range l.Files {
		if got, _ := os.ReadFile(f.Path); !bytes.Equal(got, shards[i]) || f.SHA256 != sha(shards[i]) {
			t.Errorf("shard %d differs", i+1)
		}
	}
	if l.Size() != 6000 || l.Quant() != "Q4_K_M" {
		t.Errorf("size %d quant %q", l.Size(), l.Quant())
	}
	pages := 0
	for _, r := range hub.Requests() {
		if strings.HasPrefix(r.Path, "/api/") {
			pages++
		}
	}
	if pages < 3 {
		t.Errorf("%d listing pages fetched, want the listing's several", pages)
	}
}

// TestPullConcurrent: two pulls of one file at once; the second waits for
// the first's lock, then finds the file in place: one download.
func TestPullConcurrent(t *testing.T) {
	hub := hubtest.New(t)
	data := blob(20, 2<<20)
	waiting := make(chan struct{})
	var once sync.Once
	hub.Add("o/c", &hubtest.Repo{Files: map[string]*hubtest.File{"c.gguf": {Data: data, BeforeServe: func(r *http.Request) {
		// Hold the first download until the other pull waits for the lock.
		select {
		case <-waiting:
		case <-time.After(10 * time.Second):
		}
	}}}})
	p := newPuller(t, hub, "")
	dir := p.Store.Dir
	var wg sync.WaitGroup
	var waits atomic.Int32
	results := make([]*Local, 2)
	errs := make([]error, 2)
	for i := range 2 {
		q := newPuller(t, hub, "")
		q.Store.Dir = dir
		q.Progress = func(e Event) {
			if e.Waiting {
				waits.Add(1)
				once.Do(func() { close(waiting) })
			}
		}
		wg.Go(func() { results[i], errs[i] = pull(t, q, "o/c") })
	}
	wg.Wait()
	for i := range 2 {
		if errs[i] != nil || results[i].SHA256() != sha(data) {
			t.Fatalf("pull %d: %v", i, errs[i])
		}
	}
	if waits.Load() != 1 || storageGets(hub, "c.gguf") != 1 {
		t.Errorf("%d waits, %d downloads; want one of each", waits.Load(), storageGets(hub, "c.gguf"))
	}
	if _, err := os.Stat(filepath.Join(dir, "o", "c", "c.gguf"+lockSuffix)); !os.IsNotExist(err) {
		t.Errorf("lock file left: %v", err)
	}
}

func TestPullMaliciousListing(t *testing.T) {
	entry := func(path string) string {
		name, _ := json.Marshal(path)
		return fmt.Sprintf(`{"type":"file","oid":"%s","size":4,"path":%s,"lfs":{"oid":"%s","size":4}}`, strings.Repeat("a", 40), name, sha([]byte("GGUF")))
	}
	huge := strings.Repeat(`{"type":"file","oid":"x","size":1,"path":"r"},`, maxListingEntries) + `{}`
	for _, tc := range []struct {
		name, listing string
		want          error
	}{
		{"traversal", "[" + entry("../../../escape.gguf") + "]", ErrName},
		{"traversal inside", "[" + entry("a/../../escape.gguf") + "]", ErrName},
		{"absolute", "[" + entry("/tmp/escape.gguf") + "]", ErrName},
		{"backslash", "[" + entry(`..\escape.gguf`) + "]", ErrName},
		{"NUL", "[" + entry("a\u0000.gguf") + "]", ErrName},
		{"long name", "[" + entry(strings.Repeat("a/", 50000)+"x.gguf") + "]", ErrName},
		{"twice", "[" + entry("a.gguf") + "," + entry("a.gguf") + "]", ErrListing},
		{"negative size", `[{"type":"file","oid":"` + strings.Repeat("a", 40) + `","size":-1,"path":"a.gguf"}]`, ErrListing},
		{"bad lfs oid", `[{"type":"file","oid":"x","size":4,"path":"a.gguf","lfs":{"oid":"../x","size":4}}]`, ErrListing},
		{"lfs size differs", `[{"type":"file","oid":"x","size":4,"path":"a.gguf","lfs":{"oid":"` + sha(nil) + `","size":5}}]`, ErrListing},
		{"not an array", `{"error":"x"}`, ErrListing},
		{"unknown type", `[{"type":"symlink","path":"a.gguf"}]`, ErrListing},
		{"too many entries", "[" + huge + "]", ErrListing},
		{"too many bytes", "[" + strings.Repeat(" ", maxListingBytes) + "]", ErrListing},
		{"trailing data", "[" + entry("a.gguf") + "] []", ErrListing},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hub := hubtest.New(t)
			hub.Add("o/evil", &hubtest.Repo{Listing: []byte(tc.listing)})
			p := newPuller(t, hub, "")
			_, err := pull(t, p, "o/evil")
			if !errors.Is(err, tc.want) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
			if len(err.Error()) > 600 {
				t.Errorf("error of %d bytes", len(err.Error()))
			}
			if storageGets(hub, "") != 0 || len(hub.Requests()) != 1 {
				t.Errorf("requests after a bad listing: %+v", hub.Requests())
			}
			if entries, _ := os.ReadDir(p.Store.Dir); len(entries) != 0 {
				t.Errorf("files written: %v", entries)
			}
		})
	}
}

func TestPullRefusesPlainHTTP(t *testing.T) {
	var plainHits atomic.Int32
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		plainHits.Add(1)
		w.Write([]byte("GGUF"))
	}))
	defer plain.Close()
	for _, tc := range []struct {
		name   string
		handle func(w http.ResponseWriter, r *http.Request) bool
		want   error
	}{
		{"redirect to http", func(w http.ResponseWriter, r *http.Request) bool {
			if strings.Contains(r.URL.Path, "/resolve/") {
				http.Redirect(w, r, plain.URL+"/x.gguf", http.StatusFound)
				return true
			}
			return false
		}, ErrInsecure},
		{"next page on http", func(w http.ResponseWriter, r *http.Request) bool {
			if strings.HasPrefix(r.URL.Path, "/api/") {
				w.Header().Set("Link", "<"+plain.URL+`/api/models/o/x/tree/main?cursor=1>; rel="next"`)
				w.Write([]byte("[]"))
				return true
			}
			return false
		}, ErrListing},
		{"redirect loop", func(w http.ResponseWriter, r *http.Request) bool {
			if strings.Contains(r.URL.Path, "/resolve/") {
				http.Redirect(w, r, r.URL.Path, http.StatusFound)
				return true
			}
			return false
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hub := hubtest.New(t)
			hub.Add("o/x", &hubtest.Repo{Files: map[string]*hubtest.File{"x.gguf": {Data: []byte("GGUF")}}})
			hub.Handle = tc.handle
			p := newPuller(t, hub, "")
			_, err := pull(t, p, "o/x")
			if err == nil || tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
			if plainHits.Load() != 0 {
				t.Errorf("the plain HTTP server was reached")
			}
			if _, err := os.Stat(filepath.Join(p.Store.Dir, "o", "x", "x.gguf")); !os.IsNotExist(err) {
				t.Errorf("file in place: %v", err)
			}
		})
	}
	if _, err := NewClient(Options{Endpoint: plain.URL}); !errors.Is(err, ErrInsecure) {
		t.Errorf("plain HTTP endpoint: %v", err)
	}
}

func TestStoreListRemove(t *testing.T) {
	hub := hubtest.New(t)
	hub.Add("o/a", &hubtest.Repo{Files: map[string]*hubtest.File{
		"a-Q8_0.gguf":                 {Data: blob(30, 100)},
		"s/a-F16-00001-of-00002.gguf": {Data: blob(31, 50)},
		"s/a-F16-00002-of-00002.gguf": {Data: blob(32, 60)},
	}})
	p := newPuller(t, hub, "")
	for _, ref := range []string{"o/a:Q8_0", "o/a:F16"} {
		if _, err := pull(t, p, ref); err != nil {
			t.Fatal(err)
		}
	}
	// A partial download is not listed.
	if err := os.WriteFile(filepath.Join(p.Store.Dir, "o", "a", "b.gguf"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	list, err := p.Store.List()
	if err != nil || len(list) != 2 {
		t.Fatalf("list %+v %v", list, err)
	}
	if list[0].Name() != "o/a/a-Q8_0.gguf" || list[0].Quant() != "Q8_0" || list[0].Size() != 100 ||
		list[1].Name() != "o/a/s/a-F16-00001-of-00002.gguf" || list[1].Size() != 110 || list[1].SHA256() != sha(blob(31, 50)) {
		t.Errorf("list %+v %+v", list[0], list[1])
	}
	ctx := context.Background()
	if _, err := p.Store.Remove(ctx, Ref{Repo: "o/a", File: "s/a-F16-00002-of-00002.gguf"}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(p.Store.Dir, "o", "a", "s")); !os.IsNotExist(err) {
		t.Errorf("shard directory left: %v", err)
	}
	if _, err := p.Store.Remove(ctx, Ref{Repo: "o/a", Quant: "F16"}, nil); !errors.Is(err, ErrNotFound) {
		t.Errorf("second remove: %v", err)
	}
	os.Remove(filepath.Join(p.Store.Dir, "o", "a", "b.gguf"))
	if _, err := p.Store.Remove(ctx, Ref{Repo: "o/a"}, nil); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(p.Store.Dir); len(entries) != 0 {
		t.Errorf("left: %v", entries)
	}
	if list, err := (Store{Dir: filepath.Join(p.Store.Dir, "none")}).List(); err != nil || len(list) != 0 {
		t.Errorf("missing directory: %v %v", list, err)
	}
}

func TestDefaultDir(t *testing.T) {
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }
	d, err := DefaultDir(getenv)
	if err != nil || !strings.HasSuffix(d, filepath.Join("lisa", "models")) {
		t.Errorf("default %q %v", d, err)
	}
	env[EnvModels] = "/srv/models"
	if d, _ := DefaultDir(getenv); d != "/srv/models" {
		t.Errorf("with %s: %q", EnvModels, d)
	}
}

// TestPullTooManyPages: a listing that never ends is cut at maxPages.
func TestPullTooManyPages(t *testing.T) {
	hub := hubtest.New(t)
	hub.PageSize = 1
	files := map[string]*hubtest.File{}
	for i := range maxPages + 1 {
		files[fmt.Sprintf("m%04d.gguf", i)] = &hubtest.File{Data: []byte{byte(i)}}
	}
	hub.Add("o/pages", &hubtest.Repo{Files: files})
	_, err := pull(t, newPuller(t, hub, ""), "o/pages/m0000.gguf")
	if !errors.Is(err, ErrListing) || !strings.Contains(err.Error(), "pages") {
		t.Fatalf("err %v", err)
	}
	if n := len(hub.Requests()); n != maxPages {
		t.Errorf("%d requests, want %d", n, maxPages)
	}
}

// TestPullNotFound: a missing repository, tag or file is ErrNotFound and
// the message lists what the repository has.
func TestPullNotFound(t *testing.T) {
	hub := hubtest.New(t)
	hub.Add("o/m", &hubtest.Repo{Files: map[string]*hubtest.File{"m-Q8_0.gguf": {Data: []byte("x")}, "m-Q4_K_S.gguf": {Data: []byte("y")}}})
	p := newPuller(t, hub, "")
	for _, tc := range []struct{ ref, want string }{
		{"o/missing", "404"},
		{"o/m:Q2_K", "m-Q4_K_S.gguf (Q4_K_S) m-Q8_0.gguf (Q8_0)"},
		{"o/m/m-F16.gguf", "no file m-F16.gguf"},
	} {
		_, err := pull(t, p, tc.ref)
		if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want ErrNotFound saying %q", tc.ref, err, tc.want)
		}
	}
	if _, err := pull(t, p, "o/m"); !errors.Is(err, ErrAmbiguous) || !strings.Contains(err.Error(), "add :QUANT") {
		t.Errorf("no tag, no Q4_K_M: %v", err)
	}
}

// TestPullNoSpace: a file larger than the free space is refused before
// any byte is downloaded.
func TestPullNoSpace(t *testing.T) {
	const size = 1 << 41
	hub := hubtest.New(t)
	hub.Add("o/big", &hubtest.Repo{Listing: []byte(fmt.Sprintf(
		`[{"type":"file","oid":"%s","size":%d,"path":"big.gguf","lfs":{"oid":"%s","size":%d}}]`,
		strings.Repeat("a", 40), int64(size), sha(nil), int64(size)))})
	p := newPuller(t, hub, "")
	if free := freeBytes(p.Store.Dir); free < 0 || free >= size {
		t.Skipf("free space %d: cannot test a file larger than it", free)
	}
	_, err := pull(t, p, "o/big")
	if !errors.Is(err, ErrNoSpace) || storageGets(hub, "big.gguf") != 0 {
		t.Fatalf("err %v, %d downloads", err, storageGets(hub, "big.gguf"))
	}
}
