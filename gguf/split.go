package gguf

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// The metadata keys of a split GGUF file, as llama.cpp's gguf-split
// writes them into every shard.
const (
	// KeySplitNo is the shard's 0-based index (uint16).
	KeySplitNo = "split.no"
	// KeySplitCount is the number of shards (uint16).
	KeySplitCount = "split.count"
	// KeySplitTensors is the number of tensors in all shards (int32).
	KeySplitTensors = "split.tensors.count"
)

// ErrSplit is wrapped by every *SplitError.
var ErrSplit = errors.New("gguf: bad split file")

// SplitError reports a split GGUF file whose shards cannot be put
// together: the shard at fault (1-based, as in the shards' names; 0 when
// no one shard is), the number of shards, the shard's path when known,
// what is wrong and the underlying error, if any (the shard's
// *FormatError, say). It unwraps to ErrSplit and to that error.
type SplitError struct {
	Shard, Count int
	Path         string
	Msg          string
	Err          error
}

// Error returns "gguf: split GGUF: shard 2 of 3 (name) not given" and
// the like.
func (e *SplitError) Error() string {
	var b strings.Builder
	b.WriteString("gguf: split GGUF:")
	if e.Shard > 0 {
		fmt.Fprintf(&b, " shard %d of %d", e.Shard, e.Count)
	}
	if e.Path != "" {
		fmt.Fprintf(&b, " (%s)", filepath.Base(e.Path))
	}
	b.WriteString(" " + e.Msg)
	if e.Err != nil {
		b.WriteString(": " + e.Err.Error())
	}
	return b.String()
}

// Unwrap returns ErrSplit and the underlying error.
func (e *SplitError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrSplit}
	}
	return []error{ErrSplit, e.Err}
}

// SplitInfo is what a file's split keys say. A file without them is the
// only shard of one: No 0, Count 1, Tensors its number of tensors.
type SplitInfo struct {
	No      int // 0-based index of the shard
	Count   int // number of shards
	Tensors int // tensors in all shards (the first shard's split.tensors.count), -1 when not stated
}

// Split reads f's split keys with llama.cpp's types: split.count and
// split.no uint16, split.tensors.count int32. A file of more than one
// shard must say which it is (split.no), and the first must say how many
// tensors all hold; a count of 1 is a file of its own.
func (f *File) Split() (SplitInfo, error) {
	info := SplitInfo{Count: 1, Tensors: len(f.Tensors)}
	count, ok, err := f.splitKey(KeySplitCount, TypeUint16)
	if err != nil || !ok || count <= 1 {
		if err == nil && ok && count == 0 {
			err = f.splitKeyErr(KeySplitCount, "a count of 0 shards")
		}
		return info, err
	}
	info.Count = int(count)
	no, ok, err := f.splitKey(KeySplitNo, TypeUint16)
	if err != nil {
		return info, err
	}
	if !ok {
		return info, f.splitKeyErr(KeySplitNo, "absent, but split.count is %d", count)
	}
	if no >= count {
		return info, f.splitKeyErr(KeySplitNo, "shard index %d, but split.count is %d", no, count)
	}
	info.No = int(no)
	n, ok, err := f.splitKey(KeySplitTensors, TypeInt32)
	switch {
	case err != nil:
		return info, err
	case ok && n < 0:
		return info, f.splitKeyErr(KeySplitTensors, "negative count %d", n)
	case ok:
		info.Tensors = int(n)
	case info.No == 0:
		return info, f.splitKeyErr(KeySplitTensors, "absent from the first shard")
	default:
		info.Tensors = -1
	}
	return info, nil
}

// splitKey reads an integer split key that must have type typ.
func (f *File) splitKey(key string, typ ValueType) (int64, bool, error) {
	v, at, err := f.get(key)
	if errors.Is(err, ErrNotFound) {
		return 0, false, nil
	}
	if v.Type() != typ {
		return 0, false, wrongType(key, at, typ.String(), v)
	}
	n, _ := v.Int64()
	return n, true, nil
}

func (f *File) splitKeyErr(key, format string, args ...any) error {
	_, at, _ := f.get(key)
	return formatErr(at, ErrValueType, "%s: %s", key, fmt.Sprintf(format, args...))
}

// splitSuffix is llama.cpp's shard name ending, "-%05d-of-%05d.gguf".
const splitSuffixLen = len("-00001-of-00003.gguf")

// parseSplitName splits a shard's path into its prefix, 1-based shard
// number and count, or reports that the name has no shard suffix.
func parseSplitName(path string) (prefix string, no, count int, ok bool) {
	if len(path) < splitSuffixLen {
		return "", 0, 0, false
	}
	prefix, suf := path[:len(path)-splitSuffixLen], path[len(path)-splitSuffixLen:]
	if suf[0] != '-' || suf[6:10] != "-of-" || suf[15:] != ".gguf" {
		return "", 0, 0, false
	}
	digits := func(s string) (int, bool) {
		for i := 0; i < len(s); i++ {
			if s[i] < '0' || s[i] > '9' {
				return 0, false
			}
		}
		n, err := strconv.Atoi(s)
		return n, err == nil
	}
	no, ok1 := digits(suf[1:6])
	count, ok2 := digits(suf[10:15])
	if !ok1 || !ok2 || count < 1 || no < 1 || no > count {
		return "", 0, 0, false
	}
	return prefix, no, count, true
}

// shardPath is llama.cpp's llama_split_path: the path of 1-based shard no.
func shardPath(prefix string, no, count int) string {
	return fmt.Sprintf("%s-%05d-of-%05d.gguf", prefix, no, count)
}

// SplitPaths returns the paths of all shards of a split GGUF file, in
// order, from the path of its first shard, named as llama.cpp's
// gguf-split names shards: "<prefix>-00001-of-00003.gguf" gives it and
// "<prefix>-00002-of-00003.gguf", "<prefix>-00003-of-00003.gguf". It
// reads nothing: a broker can open and check every shard before handing
// them to the worker, which checks that their split keys agree. A path
// without that ending is a file of its own, returned alone. The path of
// a later shard is an error: as in llama.cpp, a split model is loaded
// from its first shard.
func SplitPaths(path string) ([]string, error) {
	prefix, no, count, ok := parseSplitName(path)
	if !ok {
		return []string{path}, nil
	}
	if no != 1 {
		return nil, &SplitError{Shard: no, Count: count, Path: path,
			Msg: "is not the first shard: load the model from " + filepath.Base(shardPath(prefix, 1, count))}
	}
	paths := make([]string, count)
	for i := range paths {
		paths[i] = shardPath(prefix, i+1, count)
	}
	return paths, nil
}

// checkWhole refuses a shard of a split file given alone: the error names
// the first shard missing (with its path, derived from name, when name is
// a shard's).
func checkWhole(f *File, name string) error {
	info, err := f.Split()
	if err != nil {
		return err
	}
	if info.Count <= 1 {
		return nil
	}
	prefix, _, _, named := parseSplitName(name)
	if info.No != 0 {
		e := &SplitError{Shard: info.No + 1, Count: info.Count, Path: name,
			Msg: "is not the first shard: load the model from shard 1"}
		if named {
			e.Msg = "is not the first shard: load the model from " + filepath.Base(shardPath(prefix, 1, info.Count))
		}
		return e
	}
	e := &SplitError{Shard: 2, Count: info.Count, Msg: "not given (only the first shard was)"}
	if named {
		e.Path = shardPath(prefix, 2, info.Count)
	}
	return e
}

// JoinSplit presents the shards of a split GGUF file as one File.
// shards[0] must be the first shard (split.no 0, which holds the model's
// metadata) and shards[i] the shard whose split.no is i; each was parsed
// as a single file (Parse, ParseBytes or the shards of OpenSplit and
// LoadSplit), so each is as checked as one. JoinSplit checks what
// llama.cpp checks and a little more: every shard states the same
// split.count and its own split.no, the number of shards given is that
// count, no tensor name repeats across shards, and the shards hold
// split.tensors.count tensors in all. Errors are *SplitError values
// naming the shard at fault.
//
// The File's metadata (KV, Version, Alignment, DataOffset) is the first
// shard's, its tensors are all the shards' in shard order, TensorData
// reads each tensor from its shard, FileSize is the shards' total and
// Close closes every shard. On error the shards are left to the caller.
// A single file that is not split joins to itself.
func JoinSplit(shards []*File) (*File, error) {
	if len(shards) == 0 {
		return nil, &SplitError{Msg: "no shard given"}
	}
	first, err := shards[0].Split()
	if err != nil {
		return nil, &SplitError{Shard: 1, Count: max(first.Count, len(shards)), Msg: "bad split keys", Err: err}
	}
	if first.No != 0 {
		return nil, &SplitError{Shard: first.No + 1, Count: first.Count,
			Msg: "was given first: the first shard must come first"}
	}
	if len(shards) == 1 && first.Count == 1 {
		return shards[0], nil
	}
	if len(shards) < first.Count {
		return nil, &SplitError{Shard: len(shards) + 1, Count: first.Count, Msg: "not given"}
	}
	if len(shards) > first.Count {
		return nil, &SplitError{Shard: first.Count + 1, Count: first.Count,
			Msg: fmt.Sprintf("given, but split.count is %d", first.Count)}
	}
	j := &File{Version: shards[0].Version, Alignment: shards[0].Alignment, DataOffset: shards[0].DataOffset,
		KV: shards[0].KV, kvIndex: shards[0].kvIndex, kvOffset: shards[0].kvOffset,
		shards: shards, tensorIndex: map[string]int{}}
	for i, s := range shards {
		if i > 0 {
			info, err := s.Split()
			switch {
			case err != nil:
				return nil, &SplitError{Shard: i + 1, Count: first.Count, Msg: "bad split keys", Err: err}
			case info.Count != first.Count:
				return nil, &SplitError{Shard: i + 1, Count: first.Count,
					Msg: fmt.Sprintf("says split.count %d, the first shard %d", info.Count, first.Count)}
			case info.No != i:
				return nil, &SplitError{Shard: i + 1, Count: first.Count,
					Msg: fmt.Sprintf("is shard %d (split.no %d)", info.No+1, info.No)}
			}
		}
		j.FileSize += s.FileSize
		for _, t := range s.Tensors {
			if k, dup := j.tensorIndex[t.Name]; dup {
				return nil, &SplitError{Shard: i + 1, Count: first.Count,
					Msg: fmt.Sprintf("repeats tensor %q of shard %d", t.Name, j.shardOf[k]+1)}
			}
			j.tensorIndex[t.Name] = len(j.Tensors)
			j.Tensors = append(j.Tensors, t)
			j.shardOf = append(j.shardOf, int32(i))
		}
	}
	if len(j.Tensors) != first.Tensors {
		return nil, &SplitError{Count: first.Count,
			Msg: fmt.Sprintf("the shards hold %d tensors, split.tensors.count says %d", len(j.Tensors), first.Tensors)}
	}
	return j, nil
}

// OpenSplit opens the shards of a split GGUF file from open files, the
// first shard first, as OpenFile opens one file (mapped read-only when
// the platform allows), and joins them with JoinSplit. A file that is not
// split can be opened this way too, alone. It does not close the files.
// Errors name the shard at fault.
func OpenSplit(fhs []*os.File, lim Limits) (*File, error) {
	return openShards(fhs, lim, openFile)
}

// LoadSplit is OpenSplit with each shard read into private memory, as
// LoadFile reads one file.
func LoadSplit(fhs []*os.File, lim Limits) (*File, error) {
	return openShards(fhs, lim, loadFile)
}

func openShards(fhs []*os.File, lim Limits, open func(*os.File, Limits) (*File, error)) (*File, error) {
	shards := make([]*File, 0, len(fhs))
	closeAll := func() {
		for _, s := range shards {
			s.Close()
		}
	}
	for i, fh := range fhs {
		s, err := open(fh, lim)
		if err != nil {
			closeAll()
			if len(fhs) == 1 {
				// One file is no split: its error is the file's own.
				return nil, err
			}
			return nil, &SplitError{Shard: i + 1, Count: len(fhs), Path: fh.Name(), Msg: "cannot be read", Err: err}
		}
		shards = append(shards, s)
	}
	f, err := JoinSplit(shards)
	if err != nil {
		closeAll()
		var se *SplitError
		if errors.As(err, &se) && se.Shard > 0 && se.Shard <= len(fhs) && se.Path == "" {
			se.Path = fhs[se.Shard-1].Name()
		}
		return nil, err
	}
	return f, nil
}

// openPathSplit opens the model at path, with all its shards when path
// is the first shard of a split file, by open (openFile or loadFile).
func openPathSplit(path string, lim Limits, open func(*os.File, Limits) (*File, error)) (*File, error) {
	paths, err := SplitPaths(path)
	if err != nil {
		return nil, err
	}
	fhs := make([]*os.File, 0, len(paths))
	defer func() {
		for _, fh := range fhs {
			fh.Close()
		}
	}()
	for i, p := range paths {
		fh, err := os.Open(p)
		if err != nil {
			if len(paths) == 1 {
				return nil, fmt.Errorf("gguf: %w", err)
			}
			return nil, &SplitError{Shard: i + 1, Count: len(paths), Path: p, Msg: "cannot be opened", Err: err}
		}
		fhs = append(fhs, fh)
	}
	if len(fhs) == 1 {
		f, err := open(fhs[0], lim)
		if err != nil {
			return nil, err
		}
		if err := checkWhole(f, path); err != nil {
			f.Close()
			return nil, err
		}
		return keepOpen(f, &fhs), nil
	}
	f, err := openShards(fhs, lim, open)
	if err != nil {
		return nil, err
	}
	for _, s := range f.shards {
		keepOpen(s, &fhs)
	}
	return f, nil
}

// keepOpen hands the file behind f (the first of *fhs still open) to f
// when f reads from it (fallback mode): Close then closes it.
func keepOpen(f *File, fhs *[]*os.File) *File {
	fh := (*fhs)[0]
	*fhs = (*fhs)[1:]
	if f.data != nil {
		f.r = nil
		fh.Close()
	} else {
		f.owned = fh
	}
	return f
}
