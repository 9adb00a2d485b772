package hub

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
)

// EnvModels names the environment variable that sets the models directory.
const EnvModels = "LISA_MODELS"

// Suffixes of the files kept beside a model.
const (
	partialSuffix = ".partial" // a download in progress
	lockSuffix    = ".lock"    // held while a pull writes the model
	digestSuffix  = ".sha256"  // the verified SHA-256, sha256sum's format
	maxDigestFile = 4 << 10
)

// DefaultDir returns the models directory when no flag names one:
// $LISA_MODELS (read with getenv) if set, otherwise lisa/models in the
// user's cache directory (~/.cache/lisa/models on Linux).
func DefaultDir(getenv func(string) string) (string, error) {
	if d := getenv(EnvModels); d != "" {
		return d, nil
	}
	c, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("models directory: %w (set %s or --models-dir)", err, EnvModels)
	}
	return filepath.Join(c, "lisa", "models"), nil
}

// Store is a models directory.
type Store struct{ Dir string }

// path returns where file p of repo lives. Both are checked names.
func (s Store) path(repo, p string) string {
	return filepath.Join(s.Dir, filepath.FromSlash(repo), filepath.FromSlash(p))
}

// LocalFile is one verified file on disk.
type LocalFile struct {
	File   string // path in the repository
	Path   string // path on disk
	Size   int64
	SHA256 string // verified digest, lower-case hex
}

// Local is a model on disk: one file or all shards of a split model.
type Local struct {
	Repo  string
	Files []LocalFile // the first shard first
}

// Name returns the model's name for lisa models: REPO/FILE of its first file.
func (l *Local) Name() string { return l.Repo + "/" + l.Files[0].File }

// Path returns the path of the model's first file, the one to load.
func (l *Local) Path() string { return l.Files[0].Path }

// SHA256 returns the verified digest of the model's first file.
func (l *Local) SHA256() string { return l.Files[0].SHA256 }

// Size returns the bytes of all the model's files.
func (l *Local) Size() int64 {
	var n int64
	for _, f := range l.Files {
		n += f.Size
	}
	return n
}

// Quant returns the quantisation tag of the model's file name, or "".
func (l *Local) Quant() string { return QuantOf(l.Files[0].File) }

// readDigest returns the digest recorded beside the model at p, or ""
// when there is none or it is malformed.
func readDigest(p string) string {
	f, err := os.Open(p + digestSuffix)
	if err != nil {
		return ""
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxDigestFile))
	if err != nil || len(data) < 64 || !isHex(string(data[:64]), 64) {
		return ""
	}
	return string(bytes.ToLower(data[:64]))
}

// writeDigest records digest beside the model at p, atomically.
func writeDigest(p, digest string) error {
	tmp := p + digestSuffix + ".tmp"
	line := digest + "  " + filepath.Base(p) + "\n"
	if err := os.WriteFile(tmp, []byte(line), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, p+digestSuffix)
}

// localFiles returns the verified .gguf files of repo in s, as File
// values for Select, and their LocalFile records by path.
func (s Store) localFiles(repo string) ([]File, map[string]LocalFile, error) {
	root := filepath.Join(s.Dir, filepath.FromSlash(repo))
	var files []File
	byPath := map[string]LocalFile{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && p == root {
				return fs.SkipAll
			}
			return err
		}
		if !d.Type().IsRegular() || !IsGGUF(p) {
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		digest := readDigest(p)
		if CheckPath(rel) != nil || digest == "" {
			return nil // not a file a pull completed
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		files = append(files, File{Path: rel, Size: info.Size(), SHA256: digest})
		byPath[rel] = LocalFile{File: rel, Path: p, Size: info.Size(), SHA256: digest}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("models directory: %w", err)
	}
	return files, byPath, nil
}

// Find returns the downloaded model ref names, without the network.
// It wraps ErrNotFound when there is none.
func (s Store) Find(ref Ref) (*Local, error) {
	files, byPath, err := s.localFiles(ref.Repo)
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%w: nothing of %s in %s", ErrNotFound, ref.Repo, s.Dir)
	}
	sel, err := Select(files, ref)
	if err != nil {
		return nil, err
	}
	l := &Local{Repo: ref.Repo}
	for _, f := range sel {
		l.Files = append(l.Files, byPath[f.Path])
	}
	return l, nil
}

// List returns every downloaded model in s, sorted by name. The files of a
// split model missing a shard are listed one by one.
func (s Store) List() ([]*Local, error) {
	owners, err := os.ReadDir(s.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("models directory: %w", err)
	}
	var out []*Local
	for _, o := range owners {
		names, err := os.ReadDir(filepath.Join(s.Dir, o.Name()))
		if err != nil || !o.IsDir() {
			continue
		}
		for _, n := range names {
			repo := o.Name() + "/" + n.Name()
			if !n.IsDir() || CheckRepo(repo) != nil {
				continue
			}
			files, byPath, err := s.localFiles(repo)
			if err != nil {
				return nil, err
			}
			models, err := groupModels(files)
			if err != nil {
				models = models[:0]
				for _, f := range files {
					models = append(models, model{f})
				}
			}
			for _, m := range models {
				l := &Local{Repo: repo}
				for _, f := range m {
					l.Files = append(l.Files, byPath[f.Path])
				}
				out = append(out, l)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out, nil
}

// Remove deletes the downloaded model ref names (all its shards, their
// digests and any partial download), waiting for a pull of it to end,
// and the directories it leaves empty.
func (s Store) Remove(ctx context.Context, ref Ref, waiting func()) (*Local, error) {
	l, err := s.Find(ref)
	if err != nil {
		return nil, err
	}
	for _, f := range l.Files {
		unlock, err := lockFile(ctx, f.Path+lockSuffix, waiting)
		if err != nil {
			return nil, err
		}
		for _, p := range []string{f.Path, f.Path + digestSuffix, f.Path + partialSuffix} {
			if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
				unlock()
				return nil, fmt.Errorf("remove: %w", err)
			}
		}
		unlock()
		s.pruneDirs(l.Repo, f.File)
	}
	return l, nil
}

// pruneDirs removes the directories above file p of repo that are empty,
// up to the owner's, never the models directory itself. repo and p are
// checked names, so every step stays below it.
func (s Store) pruneDirs(repo, p string) {
	for rel := path.Dir(repo + "/" + p); rel != "." && rel != "/"; rel = path.Dir(rel) {
		if os.Remove(filepath.Join(s.Dir, filepath.FromSlash(rel))) != nil {
			return // not empty
		}
	}
}
