package hub

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Bounds on what a listing may make us read and keep.
const (
	maxListingBytes   = 16 << 20 // bytes of one page of the tree listing
	maxListingEntries = 100_000  // entries over all pages
	maxFileSize       = 1 << 42  // 4 TiB: no GGUF is larger
)

// ErrListing is wrapped by every error about a malformed or hostile file
// listing.
var ErrListing = errors.New("bad file listing")

// File is one .gguf file of a repository as its listing describes it.
type File struct {
	Path   string // path in the repository, checked by CheckPath
	Size   int64  // bytes
	SHA256 string // LFS oid: the SHA-256 of the content, lower-case hex; "" for a file kept in git
	GitOID string // git blob SHA-1, lower-case hex; checked when SHA256 is ""
}

// listEntry is one element of the hub's tree API answer
// (GET /api/models/OWNER/NAME/tree/REV?recursive=true).
type listEntry struct {
	Type string `json:"type"` // "file" or "directory"
	Path string `json:"path"`
	Size int64  `json:"size"`
	OID  string `json:"oid"`
	LFS  *struct {
		OID  string `json:"oid"`
		Size int64  `json:"size"`
	} `json:"lfs"`
}

// decodeListing reads one page of a tree listing from r: a JSON array of
// entries. It keeps the .gguf files and returns how many entries it saw;
// it stops with an error past maxEntries entries or maxListingBytes bytes,
// on any .gguf entry with an unsafe name or inconsistent sizes and digests,
// and on a path listed twice. Entries that are not .gguf files are skipped
// unused, whatever their names.
func decodeListing(r io.Reader, maxEntries int, seen map[string]bool) ([]File, int, error) {
	lr := &io.LimitedReader{R: r, N: maxListingBytes + 1}
	dec := json.NewDecoder(lr)
	tok, err := dec.Token()
	if err != nil {
		return nil, 0, listErr(lr, "not JSON: %v", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '[' {
		return nil, 0, listErr(lr, "not a JSON array")
	}
	var files []File
	n := 0
	for dec.More() {
		if n >= maxEntries {
			return nil, n, fmt.Errorf("%w: more than %d entries", ErrListing, maxListingEntries)
		}
		var e listEntry
		if err := dec.Decode(&e); err != nil {
			return nil, n, listErr(lr, "entry %d: %v", n, err)
		}
		n++
		f, keep, err := checkEntry(e)
		if err != nil {
			return nil, n, fmt.Errorf("%w: entry %d: %w", ErrListing, n-1, err)
		}
		if !keep {
			continue
		}
		if seen[f.Path] {
			return nil, n, fmt.Errorf("%w: %s listed twice", ErrListing, f.Path)
		}
		seen[f.Path] = true
		files = append(files, f)
	}
	if _, err := dec.Token(); err != nil {
		return nil, n, listErr(lr, "after entry %d: %v", n, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, n, listErr(lr, "data after the array")
	}
	return files, n, nil
}

// listErr words a decoding error, saying so when it came from the size
// bound rather than the data.
func listErr(lr *io.LimitedReader, format string, args ...any) error {
	if lr.N <= 0 {
		return fmt.Errorf("%w: larger than %d bytes", ErrListing, maxListingBytes)
	}
	return fmt.Errorf("%w: %s", ErrListing, fmt.Sprintf(format, args...))
}

// checkEntry validates one entry and reports whether it is a .gguf file.
func checkEntry(e listEntry) (File, bool, error) {
	switch e.Type {
	case "directory":
		return File{}, false, nil
	case "file":
	default:
		return File{}, false, fmt.Errorf("type %q", e.Type)
	}
	if !IsGGUF(e.Path) {
		return File{}, false, nil
	}
	if err := CheckPath(e.Path); err != nil {
		return File{}, false, err
	}
	if e.Size < 0 || e.Size > maxFileSize {
		return File{}, false, fmt.Errorf("%s: size %d out of range", e.Path, e.Size)
	}
	f := File{Path: e.Path, Size: e.Size}
	if e.LFS != nil {
		if !isHex(e.LFS.OID, 64) {
			return File{}, false, fmt.Errorf("%s: lfs.oid %q is not a SHA-256", e.Path, trunc(e.LFS.OID))
		}
		if e.LFS.Size != e.Size {
			return File{}, false, fmt.Errorf("%s: lfs.size %d is not size %d", e.Path, e.LFS.Size, e.Size)
		}
		f.SHA256 = strings.ToLower(e.LFS.OID)
	} else {
		if !isHex(e.OID, 40) {
			return File{}, false, fmt.Errorf("%s: no lfs digest and oid %q is not a git SHA-1", e.Path, trunc(e.OID))
		}
		f.GitOID = strings.ToLower(e.OID)
	}
	return f, true, nil
}

func isHex(s string, n int) bool {
	return len(s) == n && strings.Trim(strings.ToLower(s), "0123456789abcdef") == ""
}

// trunc bounds a hostile string quoted in an error.
func trunc(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}
