package gguf

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lisa-llm/lisa/tensor"
)

// shardSpec describes one shard for writeShards: its split keys (nil
// leaves a key out) and tensors.
type shardSpec struct {
	no, count, tensors *Value
	names              []string
	extra              []KV
}

func u16(n uint16) *Value { v := Uint16Value(n); return &v }
func i32(n int32) *Value  { v := Int32Value(n); return &v }

// splitSpecs is a valid split of tensors t0..t(n-1) over count shards, as
// gguf-split writes it: the model's metadata in the first shard only.
func splitSpecs(count, perShard int) []shardSpec {
	specs := make([]shardSpec, count)
	for i := range specs {
		s := shardSpec{no: u16(uint16(i)), count: u16(uint16(count)), tensors: i32(int32(count * perShard))}
		for k := 0; k < perShard; k++ {
			s.names = append(s.names, fmt.Sprintf("t%d", i*perShard+k))
		}
		if i == 0 {
			s.extra = []KV{{"general.architecture", StringValue("llama")}, {"general.name", StringValue("split test")}}
		}
		specs[i] = s
	}
	return specs
}

// writeShards writes the shards of specs; data maps each tensor name to
// its bytes.
func writeShards(t testing.TB, specs []shardSpec) (shards [][]byte, data map[string][]byte) {
	t.Helper()
	data = map[string][]byte{}
	for _, s := range specs {
		w := NewWriter()
		for _, kv := range s.extra {
			if err := w.Add(kv.Key, kv.Value); err != nil {
				t.Fatal(err)
			}
		}
		for _, k := range []struct {
			key string
			v   *Value
		}{{KeySplitNo, s.no}, {KeySplitCount, s.count}, {KeySplitTensors, s.tensors}} {
			if k.v != nil {
				if err := w.Add(k.key, *k.v); err != nil {
					t.Fatal(err)
				}
			}
		}
		for i, name := range s.names {
			data[name] = addTensor(t, w, name, tensor.F32, []uint64{uint64(4 + i), 3})
		}
		var buf bytes.Buffer
		if _, err := w.WriteTo(&buf); err != nil {
			t.Fatal(err)
		}
		shards = append(shards, buf.Bytes())
	}
	return shards, data
}

func parseShards(t testing.TB, shards [][]byte) []*File {
	t.Helper()
	fs := make([]*File, len(shards))
	for i, b := range shards {
		f, err := ParseBytes(b, DefaultLimits())
		if err != nil {
			t.Fatalf("shard %d: %v", i+1, err)
		}
		fs[i] = f
	}
	return fs
}

// checkJoined checks that f holds every tensor of data with its bytes.
func checkJoined(t *testing.T, f *File, data map[string][]byte, size int64) {
	t.Helper()
	if len(f.Tensors) != len(data) {
		t.Fatalf("%d tensors, want %d", len(f.Tensors), len(data))
	}
	for name, want := range data {
		ti, ok := f.Tensor(name)
		if !ok {
			t.Fatalf("tensor %s missing", name)
		}
		got, err := f.TensorData(ti)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("tensor %s: data differs", name)
		}
	}
	if f.FileSize != size {
		t.Errorf("FileSize %d, want %d", f.FileSize, size)
	}
	if got := f.Architecture(); got != "llama" {
		t.Errorf("metadata: architecture %q, want the first shard's", got)
	}
}

func totalSize(shards [][]byte) int64 {
	n := 0
	for _, s := range shards {
		n += len(s)
	}
	return int64(n)
}

func TestJoinSplit(t *testing.T) {
	for _, count := range []int{2, 3, 5} {
		shards, data := writeShards(t, splitSpecs(count, 2))
		f, err := JoinSplit(parseShards(t, shards))
		if err != nil {
			t.Fatalf("%d shards: %v", count, err)
		}
		checkJoined(t, f, data, totalSize(shards))
		info, err := f.Split()
		if err != nil || info.Count != count || info.No != 0 || info.Tensors != 2*count {
			t.Errorf("Split() = %+v, %v", info, err)
		}
		if err := f.Close(); err != nil {
			t.Error(err)
		}
	}
}

// TestJoinSplitRefuses builds broken splits: each must fail with a
// *SplitError naming the shard at fault (0: none in particular) and
// saying why.
func TestJoinSplitRefuses(t *testing.T) {
	for _, tc := range []struct {
		name  string
		edit  func(s []shardSpec) []shardSpec
		shard int
		msg   string
	}{
		{"shard 3 missing", func(s []shardSpec) []shardSpec { return s[:2] }, 3, "shard 3 of 3 not given"},
		{"shards 2 and 3 missing", func(s []shardSpec) []shardSpec { return s[:1] }, 2, "shard 2 of 3 not given"},
		{"one shard too many", func(s []shardSpec) []shardSpec {
			x := s[2]
			x.no = u16(3)
			x.names = []string{"extra"}
			return append(s, x)
		}, 4, "split.count is 3"},
		{"later shard first", func(s []shardSpec) []shardSpec { s[0], s[1] = s[1], s[0]; return s }, 2, "the first shard must come first"},
		{"shards out of order", func(s []shardSpec) []shardSpec { s[1], s[2] = s[2], s[1]; return s }, 2, "is shard 3 (split.no 2)"},
		{"count differs", func(s []shardSpec) []shardSpec { s[2].count = u16(4); return s }, 3, "says split.count 4, the first shard 3"},
		{"later shard not split", func(s []shardSpec) []shardSpec { s[1].count, s[1].no = nil, nil; return s }, 2, "says split.count 1"},
		{"split.no missing", func(s []shardSpec) []shardSpec { s[1].no = nil; return s }, 2, "split.no: absent"},
		{"split.no past the count", func(s []shardSpec) []shardSpec { s[2].no = u16(7); return s }, 3, "shard index 7"},
		{"split.no as uint32", func(s []shardSpec) []shardSpec { v := Uint32Value(1); s[1].no = &v; return s }, 2, "uint16"},
		{"split.count as int32", func(s []shardSpec) []shardSpec { s[0].count = i32(3); return s }, 1, "uint16"},
		{"split.count 0", func(s []shardSpec) []shardSpec { s[0].count = u16(0); return s }, 1, "a count of 0"},
		{"tensors.count missing", func(s []shardSpec) []shardSpec { s[0].tensors = nil; return s }, 1, "absent from the first shard"},
		{"tensors.count as uint32", func(s []shardSpec) []shardSpec { v := Uint32Value(6); s[0].tensors = &v; return s }, 1, "int32"},
		{"tensors.count negative", func(s []shardSpec) []shardSpec { s[0].tensors = i32(-1); return s }, 1, "negative"},
		{"tensors.count too high", func(s []shardSpec) []shardSpec { s[0].tensors = i32(7); return s }, 0, "hold 6 tensors, split.tensors.count says 7"},
		{"tensors.count too low", func(s []shardSpec) []shardSpec { s[0].tensors = i32(5); return s }, 0, "hold 6 tensors, split.tensors.count says 5"},
		{"tensor in two shards", func(s []shardSpec) []shardSpec { s[2].names = []string{"t0", "t5"}; return s }, 3, `repeats tensor "t0" of shard 1`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			shards, _ := writeShards(t, tc.edit(splitSpecs(3, 2)))
			_, err := JoinSplit(parseShards(t, shards))
			var se *SplitError
			if !errors.As(err, &se) || !errors.Is(err, ErrSplit) {
				t.Fatalf("error %v, want a *SplitError", err)
			}
			if se.Shard != tc.shard || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("error %q (shard %d), want shard %d and %q", err, se.Shard, tc.shard, tc.msg)
			}
		})
	}
}

// TestJoinSplitKeyErrors checks that a shard's bad split key is reported
// with the shard and the key's offset (the shard's *FormatError).
func TestJoinSplitKeyErrors(t *testing.T) {
	specs := splitSpecs(2, 1)
	v := StringValue("two")
	specs[1].count = &v
	shards, _ := writeShards(t, specs)
	_, err := JoinSplit(parseShards(t, shards))
	var fe *FormatError
	if !errors.As(err, &fe) || !errors.Is(err, ErrValueType) || fe.Offset <= 0 || !strings.Contains(err.Error(), "shard 2 of 2") {
		t.Fatalf("error %v, want shard 2's ErrValueType at the key", err)
	}
}

func TestNotSplitJoinsToItself(t *testing.T) {
	b := sampleFile(t, 32)
	f, err := ParseBytes(b, DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	j, err := JoinSplit([]*File{f})
	if err != nil || j != f {
		t.Fatalf("JoinSplit(one file) = %p, %v; want the file itself", j, err)
	}
	if _, err := JoinSplit(nil); !errors.Is(err, ErrSplit) {
		t.Errorf("JoinSplit(nil) = %v", err)
	}
}

func TestSplitPaths(t *testing.T) {
	for _, tc := range []struct {
		path string
		want []string
		err  string
	}{
		{"/m/model-00001-of-00003.gguf", []string{"/m/model-00001-of-00003.gguf", "/m/model-00002-of-00003.gguf", "/m/model-00003-of-00003.gguf"}, ""},
		{"a-00001-of-00001.gguf", []string{"a-00001-of-00001.gguf"}, ""},
		{"/m/model.gguf", []string{"/m/model.gguf"}, ""},
		{"-00001-of-00002.gguf", []string{"-00001-of-00002.gguf", "-00002-of-00002.gguf"}, ""},
		{"/m/model-00002-of-00003.gguf", nil, "shard 2 of 3 (model-00002-of-00003.gguf) is not the first shard: load the model from model-00001-of-00003.gguf"},
		{"/m/model-00004-of-00003.gguf", []string{"/m/model-00004-of-00003.gguf"}, ""}, // not a shard name
		{"/m/model-00000-of-00003.gguf", []string{"/m/model-00000-of-00003.gguf"}, ""},
		{"/m/model-0001-of-00003.gguf", []string{"/m/model-0001-of-00003.gguf"}, ""},
		{"/m/model-00001-of-0000x.gguf", []string{"/m/model-00001-of-0000x.gguf"}, ""},
		{"/m/model-00001-of-00003.GGUF", []string{"/m/model-00001-of-00003.GGUF"}, ""},
		{"/m/model-+0001-of-00003.gguf", []string{"/m/model-+0001-of-00003.gguf"}, ""},
	} {
		got, err := SplitPaths(tc.path)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) || !errors.Is(err, ErrSplit) {
				t.Errorf("SplitPaths(%q) error %v, want %q", tc.path, err, tc.err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("SplitPaths(%q) = %q, %v; want %q", tc.path, got, err, tc.want)
		}
	}
}

// writeSplitDir writes the shards as gguf-split names them.
func writeSplitDir(t *testing.T, shards [][]byte) []string {
	t.Helper()
	dir := t.TempDir()
	var paths []string
	for i, b := range shards {
		p := filepath.Join(dir, fmt.Sprintf("model-%05d-of-%05d.gguf", i+1, len(shards)))
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	return paths
}

func openAll(t *testing.T, paths []string) []*os.File {
	t.Helper()
	var fhs []*os.File
	for _, p := range paths {
		fh, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { fh.Close() })
		fhs = append(fhs, fh)
	}
	return fhs
}

// TestSplitFromFiles opens a split model the ways a model is opened: by
// path (all shards found beside the first), from open files (OpenSplit,
// LoadSplit), and by the single-file entry points, which must name the
// missing shard instead of parsing a partial model.
func TestSplitFromFiles(t *testing.T) {
	shards, data := writeShards(t, splitSpecs(3, 2))
	paths := writeSplitDir(t, shards)
	size := totalSize(shards)

	for name, open := range map[string]func(string, Limits) (*File, error){"Open": Open, "Load": Load} {
		f, err := open(paths[0], DefaultLimits())
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		checkJoined(t, f, data, size)
		if err := f.Close(); err != nil {
			t.Errorf("%s: Close: %v", name, err)
		}
		_, err = open(paths[1], DefaultLimits())
		if want := "shard 2 of 3 (model-00002-of-00003.gguf) is not the first shard"; err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s(shard 2) = %v, want %q", name, err, want)
		}
	}
	for name, open := range map[string]func([]*os.File, Limits) (*File, error){"OpenSplit": OpenSplit, "LoadSplit": LoadSplit} {
		f, err := open(openAll(t, paths), DefaultLimits())
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		checkJoined(t, f, data, size)
		f.Close()
		_, err = open(openAll(t, paths[:2]), DefaultLimits())
		if want := "split GGUF: shard 3 of 3 not given"; err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s(2 of 3) = %v, want %q", name, err, want)
		}
	}
	for name, open := range map[string]func(*os.File, Limits) (*File, error){"OpenFile": OpenFile, "LoadFile": LoadFile} {
		_, err := open(openAll(t, paths[:1])[0], DefaultLimits())
		var se *SplitError
		want := "gguf: split GGUF: shard 2 of 3 (model-00002-of-00003.gguf) not given"
		if !errors.As(err, &se) || se.Shard != 2 || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%s(first shard) = %v, want %q", name, err, want)
		}
		_, err = open(openAll(t, paths[2:])[0], DefaultLimits())
		if want := "shard 3 of 3 (model-00003-of-00003.gguf) is not the first shard"; err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s(shard 3) = %v, want %q", name, err, want)
		}
	}

	// A missing shard file is named by Open.
	if err := os.Remove(paths[1]); err != nil {
		t.Fatal(err)
	}
	_, err := Open(paths[0], DefaultLimits())
	if want := "shard 2 of 3 (model-00002-of-00003.gguf) cannot be opened"; err == nil || !strings.Contains(err.Error(), want) || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Open with shard 2 missing = %v, want %q", err, want)
	}
}

// TestSplitBadShard checks that a shard is checked as a single file:
// a truncated shard fails with its *FormatError, named by shard.
func TestSplitBadShard(t *testing.T) {
	shards, _ := writeShards(t, splitSpecs(3, 2))
	shards[2] = shards[2][:len(shards[2])-5]
	paths := writeSplitDir(t, shards)
	_, err := OpenSplit(openAll(t, paths), DefaultLimits())
	var fe *FormatError
	if !errors.As(err, &fe) || !errors.Is(err, ErrLayout) && !errors.Is(err, ErrTruncated) ||
		!strings.Contains(err.Error(), "shard 3 of 3 (model-00003-of-00003.gguf) cannot be read") {
		t.Errorf("OpenSplit with a truncated shard = %v", err)
	}
	_, err = Open(paths[0], DefaultLimits())
	if err == nil || !strings.Contains(err.Error(), "shard 3 of 3") {
		t.Errorf("Open with a truncated shard = %v", err)
	}
}

// FuzzJoinSplit joins three arbitrary shards: it must never panic, every
// error must be a *SplitError, and a joined file must hold the tensors
// split.tensors.count says, each readable from its shard.
func FuzzJoinSplit(f *testing.F) {
	add := func(specs []shardSpec) {
		s, _ := writeShards(f, specs)
		for len(s) < 3 {
			s = append(s, nil)
		}
		f.Add(s[0], s[1], s[2])
	}
	add(splitSpecs(3, 2))
	add(splitSpecs(2, 1))
	add(splitSpecs(1, 2))
	bad := splitSpecs(3, 1)
	bad[2].names = []string{"t0"}
	add(bad)
	f.Fuzz(func(t *testing.T, a, b, c []byte) {
		lim := Limits{MaxArrayLen: 1 << 16, MaxElements: 1 << 18}
		var shards []*File
		for _, d := range [][]byte{a, b, c} {
			if len(d) == 0 {
				break
			}
			s, err := ParseBytes(d, lim)
			if err != nil {
				break
			}
			shards = append(shards, s)
		}
		if len(shards) == 0 {
			return
		}
		j, err := JoinSplit(shards)
		if err != nil {
			if !errors.Is(err, ErrSplit) {
				t.Fatalf("error %v is not a *SplitError", err)
			}
			return
		}
		info, err := j.Split()
		if err != nil || info.Tensors != len(j.Tensors) || info.Count != len(shards) {
			t.Fatalf("joined %d shards, %d tensors; Split() = %+v, %v", len(shards), len(j.Tensors), info, err)
		}
		for i := range j.Tensors {
			d, err := j.TensorData(&j.Tensors[i])
			if err != nil || int64(len(d)) != j.Tensors[i].Size {
				t.Fatalf("tensor %d: %v", i, err)
			}
		}
	})
}

// FuzzSplitPaths: SplitPaths never panics, returns the path itself first,
// and every other path it returns is the shard it stands for.
func FuzzSplitPaths(f *testing.F) {
	for _, s := range []string{"m-00001-of-00003.gguf", "m-00002-of-00003.gguf", "m.gguf", "-00001-of-00001.gguf", "x-00001-of-0000\xff.gguf"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, path string) {
		paths, err := SplitPaths(path)
		if err != nil {
			if !errors.Is(err, ErrSplit) {
				t.Fatalf("error %v is not a *SplitError", err)
			}
			return
		}
		if len(paths) == 0 || paths[0] != path {
			t.Fatalf("SplitPaths(%q) = %q", path, paths)
		}
		for i, p := range paths[1:] {
			prefix, no, count, ok := parseSplitName(p)
			if !ok || no != i+2 || count != len(paths) || shardPath(prefix, 1, count) != path {
				t.Fatalf("SplitPaths(%q)[%d] = %q", path, i+1, p)
			}
		}
	})
}

// TestOpenSplitOneFileError: one file given to OpenSplit/LoadSplit fails
// with the file's own error, not a split error about "shard 1 of 1".
func TestOpenSplitOneFileError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.gguf")
	if err := os.WriteFile(path, []byte("not a gguf file at all"), 0o600); err != nil {
		t.Fatal(err)
	}
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	for name, open := range map[string]func([]*os.File, Limits) (*File, error){"OpenSplit": OpenSplit, "LoadSplit": LoadSplit} {
		_, err := open([]*os.File{fh}, DefaultLimits())
		var fe *FormatError
		var se *SplitError
		if !errors.As(err, &fe) || errors.As(err, &se) {
			t.Errorf("%s: %v, want the file's FormatError alone", name, err)
		}
	}
}
