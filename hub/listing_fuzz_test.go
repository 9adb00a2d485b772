package hub

import (
	"bytes"
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzDecodeListing: any bytes either decode into .gguf files whose
// names, sizes and digests pass the checks, or fail with ErrListing or
// ErrName; never a panic, never more entries than allowed.
func FuzzDecodeListing(f *testing.F) {
	for _, s := range []string{
		`[]`,
		`[{"type":"directory","oid":"0000000000000000000000000000000000000000","size":0,"path":"Q4_K_M"},` +
			`{"type":"file","oid":"1111111111111111111111111111111111111111","size":4,"path":"Q4_K_M/m-00001-of-00001.gguf",` +
			`"lfs":{"oid":"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855","size":4,"pointerSize":134}},` +
			`{"type":"file","oid":"2222222222222222222222222222222222222222","size":9,"path":"README.md"}]`,
		`[{"type":"file","oid":"2222222222222222222222222222222222222222","size":9,"path":"tiny.gguf"}]`,
		`[{"type":"file","oid":"x","size":9,"path":"../../x.gguf"}]`,
		`[{"type":"file","size":1e99,"path":"a.gguf"}]`,
		`{"error":"x"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		seen := map[string]bool{}
		files, n, err := decodeListing(bytes.NewReader(data), 50, seen)
		if err != nil {
			if !errors.Is(err, ErrListing) && !errors.Is(err, ErrName) {
				t.Fatalf("error %v is neither ErrListing nor ErrName", err)
			}
			return
		}
		if n > 50 || len(files) > n {
			t.Fatalf("%d files of %d entries", len(files), n)
		}
		for _, f := range files {
			if CheckPath(f.Path) != nil || !IsGGUF(f.Path) || f.Size < 0 || f.Size > maxFileSize || !seen[f.Path] {
				t.Fatalf("accepted %+v", f)
			}
			if (f.SHA256 == "") == (f.GitOID == "") || f.SHA256 != "" && !isHex(f.SHA256, 64) || f.GitOID != "" && !isHex(f.GitOID, 40) {
				t.Fatalf("digests of %+v", f)
			}
		}
	})
}

// FuzzNames: a name accepted by ParseRef or CheckPath can never climb
// out of the models directory, and a reference prints back as given.
func FuzzNames(f *testing.F) {
	for _, s := range []string{"o/n", "o/n:Q4_K_M", "o/n/d/m-00001-of-00002.gguf", "o/../x", "o/n/../../x.gguf", "o/n/a\\b.gguf"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if r, err := ParseRef(s); err == nil {
			if r.String() != s {
				t.Fatalf("%q prints as %q", s, r.String())
			}
			if r.File != "" && (CheckPath(r.File) != nil || !IsGGUF(r.File)) {
				t.Fatalf("%q: file %q accepted", s, r.File)
			}
			s = r.Repo + "/" + r.File
		} else if !errors.Is(err, ErrName) {
			t.Fatalf("%q: %v is not ErrName", s, err)
		}
		if CheckPath(s) != nil {
			return
		}
		dir := "/models"
		p := (Store{Dir: dir}).path("o/n", s)
		if rel, err := filepath.Rel(dir, p); err != nil || strings.HasPrefix(rel, "..") || !strings.HasPrefix(p, dir+"/o/n/") {
			t.Fatalf("%q lands at %q", s, p)
		}
		_, _, _, _ = shardOf(s)
		_ = MatchQuant(s, "Q4_K_M")
	})
}
