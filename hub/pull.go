package hub

import (
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// Revision is the branch pulled.
const Revision = "main"

// DefaultAttempts is how many times a file's download is tried, each
// resuming where the last stopped.
const DefaultAttempts = 3

// ErrDigest is wrapped when a downloaded file is not what the listing's
// digest says; its partial file has been deleted.
var ErrDigest = errors.New("digest mismatch")

// ErrNoSpace is wrapped when the models directory's file system has too
// little free space for a download.
var ErrNoSpace = errors.New("not enough space")

// Event reports the progress of one file of a pull.
type Event struct {
	File         string // path in the repository
	Index, Count int    // this is file Index (from 1) of Count
	Done, Total  int64  // bytes on disk, bytes the file has
	Resumed      int64  // bytes that were already there when this attempt started
	Waiting      bool   // another pull holds this file; this one waits
	Retry        error  // this attempt failed with Retry and the next resumes
	Finished     bool   // verified and in place
}

// Puller downloads models into a Store.
type Puller struct {
	Client   *Client
	Store    Store
	Progress func(Event) // may be nil
	Attempts int         // per file; 0 is DefaultAttempts
}

// Pull resolves ref against the repository's listing and downloads each
// file of the model that is not already in place and verified.
func (p *Puller) Pull(ctx context.Context, ref Ref) (*Local, error) {
	files, err := p.Client.List(ctx, ref.Repo, Revision)
	if err != nil {
		return nil, err
	}
	sel, err := Select(files, ref)
	if err != nil {
		return nil, err
	}
	l := &Local{Repo: ref.Repo}
	for i, f := range sel {
		lf, err := p.fetch(ctx, ref.Repo, f, i+1, len(sel))
		if err != nil {
			return nil, err
		}
		l.Files = append(l.Files, lf)
	}
	return l, nil
}

func (p *Puller) emit(e Event) {
	if p.Progress != nil {
		p.Progress(e)
	}
}

// fetch puts file f of repo in place under the file's lock.
func (p *Puller) fetch(ctx context.Context, repo string, f File, index, count int) (LocalFile, error) {
	dst := p.Store.path(repo, f.Path)
	lf := LocalFile{File: f.Path, Path: dst, Size: f.Size}
	ev := Event{File: f.Path, Index: index, Count: count, Total: f.Size}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return lf, fmt.Errorf("models directory: %w", err)
	}
	unlock, err := lockFile(ctx, dst+lockSuffix, func() {
		w := ev
		w.Waiting = true
		p.emit(w)
	})
	if err != nil {
		return lf, fmt.Errorf("%s: %w", f.Path, err)
	}
	defer unlock()
	if d, ok := inPlace(dst, f); ok {
		lf.SHA256 = d
		ev.Done, ev.Finished = f.Size, true
		p.emit(ev)
		return lf, nil
	}
	attempts := p.Attempts
	if attempts <= 0 {
		attempts = DefaultAttempts
	}
	partial := dst + partialSuffix
	for attempt := 1; ; attempt++ {
		lf.SHA256, err = p.download(ctx, repo, f, partial, ev)
		if err == nil {
			break
		}
		var r retryable
		if !errors.As(err, &r) || ctx.Err() != nil {
			return lf, fmt.Errorf("%s: %w", f.Path, err)
		}
		if attempt >= attempts && errors.Is(err, ErrDigest) {
			return lf, fmt.Errorf("%s: %w", f.Path, err) // nothing kept to resume
		}
		if attempt >= attempts {
			return lf, fmt.Errorf("%s: %w (after %d attempts; the partial download is kept: pull again to resume)", f.Path, err, attempt)
		}
		e := ev
		e.Retry = err
		p.emit(e)
	}
	// The old digest goes first and the new one comes last, so that a
	// crash in between leaves a model without a digest (pulled again)
	// rather than a digest naming other bytes.
	if err := os.Remove(dst + digestSuffix); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return lf, fmt.Errorf("%s: %w", f.Path, err)
	}
	if err := os.Rename(partial, dst); err != nil {
		return lf, fmt.Errorf("%s: %w", f.Path, err)
	}
	if err := writeDigest(dst, lf.SHA256); err != nil {
		return lf, fmt.Errorf("%s: %w", f.Path, err)
	}
	syncDir(filepath.Dir(dst))
	ev.Done, ev.Finished = f.Size, true
	p.emit(ev)
	return lf, nil
}

// inPlace reports whether dst already holds f, verified by an earlier
// pull, and returns its digest. A file kept in git is small; its blob
// digest is recomputed to compare with the listing's.
func inPlace(dst string, f File) (string, bool) {
	d := readDigest(dst)
	st, err := os.Lstat(dst)
	if d == "" || err != nil || !st.Mode().IsRegular() || st.Size() != f.Size {
		return "", false
	}
	if f.SHA256 != "" {
		return d, d == f.SHA256
	}
	fh, err := os.Open(dst)
	if err != nil {
		return "", false
	}
	defer fh.Close()
	h := newDigests(f)
	if _, err := io.Copy(h, fh); err != nil {
		return "", false
	}
	got, err := h.check(f)
	return got, err == nil && got == d
}

// retryable marks a failure that a new attempt may get past: the
// connection dropped or stalled, or a resumed download did not verify.
type retryable struct{ err error }

func (r retryable) Error() string { return r.err.Error() }
func (r retryable) Unwrap() error { return r.err }

// errStall cancels a download that received nothing for the stall time.
var errStall = errors.New("no data received")

// download brings partial up to f's size, resuming from what it holds,
// and verifies it. It returns the SHA-256 of the whole file.
func (p *Puller) download(ctx context.Context, repo string, f File, partial string, ev Event) (string, error) {
	fh, err := os.OpenFile(partial, os.O_RDWR|os.O_CREATE|syscallNoFollow, 0o644)
	if err != nil {
		return "", err
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return "", err
	}
	have := st.Size()
	if have > f.Size { // not a prefix of this file
		if err := fh.Truncate(0); err != nil {
			return "", err
		}
		have = 0
	}
	h := newDigests(f)
	if have > 0 {
		if _, err := io.Copy(h, io.NewSectionReader(fh, 0, have)); err != nil {
			return "", fmt.Errorf("reading the partial download: %w", err)
		}
	}
	resumed := have
	if free := freeBytes(filepath.Dir(partial)); free >= 0 && free < f.Size-have {
		return "", fmt.Errorf("%w: %s needs %d more bytes in %s, which has %d free", ErrNoSpace, f.Path, f.Size-have, filepath.Dir(partial), free)
	}
	if have < f.Size {
		if have, err = p.receive(ctx, repo, f, fh, h, have, ev); err != nil {
			return "", err
		}
	}
	if err := fh.Truncate(have); err != nil {
		return "", err
	}
	if err := fh.Sync(); err != nil {
		return "", err
	}
	got, err := h.check(f)
	if err != nil {
		fh.Close()
		os.Remove(partial)
		if resumed > 0 {
			// The bytes kept from before may be another revision's.
			return "", retryable{fmt.Errorf("%w after resuming at byte %d; the partial download was deleted", err, resumed)}
		}
		return "", fmt.Errorf("%w; the partial download was deleted", err)
	}
	return got, nil
}

// receive downloads f from byte have on into fh, feeding h, and returns
// how many bytes fh then holds (f.Size on success).
func (p *Puller) receive(ctx context.Context, repo string, f File, fh *os.File, h *digests, have int64, ev Event) (int64, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stall := time.AfterFunc(p.Client.stall, func() { cancel(errStall) })
	defer stall.Stop()
	resp, err := p.Client.get(ctx, p.Client.resolveURL(repo, Revision, f.Path), "download "+repo+"/"+f.Path, have)
	if err != nil {
		return have, p.transient(ctx, err)
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
		if have > 0 { // the server ignored the range: start over
			if err := fh.Truncate(0); err != nil {
				return have, err
			}
			h.reset(f)
			have = 0
		}
	case http.StatusPartialContent:
		if err := checkContentRange(resp.Header.Get("Content-Range"), have, f.Size); err != nil {
			return have, err
		}
	default: // 416: what we hold is not a prefix the server knows
		return 0, retryable{fmt.Errorf("download %s: hub answered %s to a resume at byte %d", f.Path, resp.Status, have)}
	}
	want := f.Size - have
	if resp.ContentLength >= 0 && resp.ContentLength != want {
		return have, fmt.Errorf("download %s: hub sends %d bytes, the listing says %d", f.Path, resp.ContentLength, want)
	}
	if _, err := fh.Seek(have, io.SeekStart); err != nil {
		return have, err
	}
	ev.Resumed, ev.Done = have, have
	p.emit(ev)
	buf := make([]byte, 256<<10)
	for have < f.Size {
		n, rerr := resp.Body.Read(buf[:min(int64(len(buf)), f.Size-have)])
		if n > 0 {
			stall.Reset(p.Client.stall)
			if _, err := fh.Write(buf[:n]); err != nil {
				return have, err
			}
			h.Write(buf[:n])
			have += int64(n)
			ev.Done = have
			p.emit(ev)
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return have, p.transient(ctx, fmt.Errorf("download %s: interrupted at byte %d of %d: %w", f.Path, have, f.Size, rerr))
		}
	}
	if have < f.Size {
		return have, retryable{fmt.Errorf("download %s: connection ended at byte %d of %d", f.Path, have, f.Size)}
	}
	var one [1]byte
	if n, _ := resp.Body.Read(one[:]); n > 0 {
		return have, fmt.Errorf("download %s: hub sends more than the %d bytes listed", f.Path, f.Size)
	}
	return have, nil
}

// transient marks err retryable unless it is a refusal (access, HTTPS,
// not found) or the caller's own cancellation; a stall is retryable.
func (p *Puller) transient(ctx context.Context, err error) error {
	if errors.Is(context.Cause(ctx), errStall) {
		return retryable{fmt.Errorf("%w for %v: %w", errStall, p.Client.stall, err)}
	}
	if errors.Is(err, ErrAuth) || errors.Is(err, ErrInsecure) || errors.Is(err, ErrNotFound) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if se := (*StatusError)(nil); errors.As(err, &se) && se.Code < 500 && se.Code != http.StatusTooManyRequests {
		return err
	}
	return retryable{err}
}

// checkContentRange checks that a 206 answer starts at from and covers the
// file to its end.
func checkContentRange(cr string, from, size int64) error {
	want := fmt.Sprintf("bytes %d-%d/%d", from, size-1, size)
	if cr != want {
		return fmt.Errorf("resume: Content-Range %q, want %q", trunc(cr), want)
	}
	return nil
}

// digests computes the SHA-256 of a download and, for a file kept in git,
// its blob SHA-1 (the hash of "blob SIZE\0" and the content).
type digests struct {
	sha256 hash.Hash
	git    hash.Hash // nil for an LFS file
}

func newDigests(f File) *digests {
	d := &digests{}
	d.reset(f)
	return d
}

func (d *digests) reset(f File) {
	d.sha256 = sha256.New()
	d.git = nil
	if f.SHA256 == "" {
		d.git = sha1.New()
		d.git.Write([]byte("blob " + strconv.FormatInt(f.Size, 10) + "\x00"))
	}
}

func (d *digests) Write(p []byte) (int, error) {
	d.sha256.Write(p)
	if d.git != nil {
		d.git.Write(p)
	}
	return len(p), nil
}

// check compares the digests with f's and returns the SHA-256.
func (d *digests) check(f File) (string, error) {
	got := hex.EncodeToString(d.sha256.Sum(nil))
	if f.SHA256 != "" && got != f.SHA256 {
		return "", fmt.Errorf("%w: %s has SHA-256 %s but the repository says %s", ErrDigest, f.Path, got, f.SHA256)
	}
	if d.git != nil {
		if g := hex.EncodeToString(d.git.Sum(nil)); g != f.GitOID {
			return "", fmt.Errorf("%w: %s has git blob SHA-1 %s but the repository says %s", ErrDigest, f.Path, g, f.GitOID)
		}
	}
	return got, nil
}

// syncDir makes a rename in dir durable; failure only weakens that.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
}
