package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lisa-llm/lisa/gguf"
	"github.com/lisa-llm/lisa/internal/shared"
	"github.com/lisa-llm/lisa/quant"
	"github.com/lisa-llm/lisa/tensor"
)

// runCLI runs lisa in-process and returns the exit status and output.
// The test binary cannot be the commands' sandboxed worker: the gguf
// commands get --no-sandbox, and its warning is left out of stderr
// (TestModelCommandsSandboxed runs them sandboxed in the built binary).
func runCLI(args ...string) (int, string, string) {
	if len(args) > 1 && args[0] == "gguf" && slices.Contains([]string{"inspect", "tensor", "synth"}, args[1]) {
		args = append(slices.Clone(args), "--no-sandbox")
	}
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	return code, out.String(), commandLines(errb.String())
}

// decodeInspect decodes `inspect --json` output, keeping numbers exact.
func decodeInspect(t *testing.T, s string) map[string]any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("bad JSON: %v", err)
	}
	return m
}

// jsonScalar formats a metadata scalar the way the JSON output must hold it.
func jsonScalar(v gguf.Value) any {
	switch v.Type() {
	case gguf.TypeString:
		s, _ := v.Str()
		return strings.ToValidUTF8(s, "\uFFFD")
	case gguf.TypeBool:
		b, _ := v.Bool()
		return b
	case gguf.TypeFloat32:
		x, _ := v.Float64()
		return json.Number(strconv.FormatFloat(x, 'g', -1, 32))
	case gguf.TypeFloat64:
		x, _ := v.Float64()
		return json.Number(strconv.FormatFloat(x, 'g', -1, 64))
	}
	return json.Number(fmt.Sprint(v.Interface()))
}

// checkInspectJSON compares `inspect --json` output with the reader's view.
func checkInspectJSON(t *testing.T, f *gguf.File, m map[string]any) {
	t.Helper()
	if m["version"] != json.Number(fmt.Sprint(f.Version)) || m["alignment"] != json.Number(fmt.Sprint(f.Alignment)) ||
		m["data_offset"] != json.Number(fmt.Sprint(f.DataOffset)) {
		t.Errorf("header %v %v %v", m["version"], m["alignment"], m["data_offset"])
	}
	md, _ := m["metadata"].([]any)
	if len(md) != len(f.KV) {
		t.Fatalf("%d metadata entries, want %d", len(md), len(f.KV))
	}
	for i, kv := range f.KV {
		e := md[i].(map[string]any)
		if e["key"] != kv.Key || e["type"] != kv.Value.Type().String() {
			t.Errorf("entry %d: %v %v, want %s %s", i, e["key"], e["type"], kv.Key, kv.Value.Type())
		}
		if kv.Value.Type() == gguf.TypeArray {
			if e["array_type"] != kv.Value.ArrayType().String() || e["len"] != json.Number(strconv.Itoa(kv.Value.Len())) {
				t.Errorf("%s: array_type %v len %v", kv.Key, e["array_type"], e["len"])
			}
			continue
		}
		if want := jsonScalar(kv.Value); !reflect.DeepEqual(e["value"], want) {
			t.Errorf("%s: value %#v, want %#v", kv.Key, e["value"], want)
		}
	}
	ts, _ := m["tensors"].([]any)
	if len(ts) != len(f.Tensors) {
		t.Fatalf("%d tensors, want %d", len(ts), len(f.Tensors))
	}
	for i, ti := range f.Tensors {
		e := ts[i].(map[string]any)
		dims := make([]any, len(ti.Dims))
		for j, d := range ti.Dims {
			dims[j] = json.Number(strconv.FormatUint(d, 10))
		}
		if e["name"] != ti.Name || e["type"] != ti.Type.String() || !reflect.DeepEqual(e["dims"], dims) ||
			e["offset"] != json.Number(strconv.FormatUint(ti.Offset, 10)) || e["bytes"] != json.Number(strconv.FormatInt(ti.Size, 10)) {
			t.Errorf("tensor %d: %v, want %+v", i, e, ti)
		}
	}
}

func TestGGUFInspectModels(t *testing.T) {
	for _, path := range shared.Models(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			f, err := gguf.Open(path, gguf.DefaultLimits())
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			code, out, errs := runCLI("gguf", "inspect", path)
			if code != 0 || errs != "" {
				t.Fatalf("exit %d: %s", code, errs)
			}
			for _, want := range []string{"architecture:  " + f.Architecture(), "parameters:", fmt.Sprintf("%d bytes", f.FileSize)} {
				if !strings.Contains(out, want) {
					t.Errorf("summary lacks %q", want)
				}
			}
			for _, ti := range f.Tensors {
				if !strings.Contains(out, ti.Name) {
					t.Errorf("summary lacks tensor %s", ti.Name)
				}
			}
			code, out, errs = runCLI("gguf", "inspect", path, "--json")
			if code != 0 || errs != "" {
				t.Fatalf("--json: exit %d: %s", code, errs)
			}
			checkInspectJSON(t, f, decodeInspect(t, out))
		})
	}
}

// TestGGUFInspectFull checks --full array values, including the values
// JSON cannot hold as numbers.
func TestGGUFInspectFull(t *testing.T) {
	w := gguf.NewWriter()
	for _, kv := range []gguf.KV{
		{Key: "f", Value: gguf.Float32sValue([]float32{float32(math.NaN()), float32(math.Inf(1)), 0.1})},
		{Key: "b", Value: gguf.Uint8sValue([]uint8{0, 255})},
		{Key: "n", Value: gguf.ArrayValue(gguf.TypeArray, gguf.Int32sValue([]int32{-1}), gguf.StringsValue([]string{"a"}))},
		{Key: "u", Value: gguf.Uint64Value(math.MaxUint64)},
		{Key: "d", Value: gguf.Float64Value(math.Inf(-1))},
	} {
		if err := w.Add(kv.Key, kv.Value); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(t.TempDir(), "full.gguf")
	writeFile(t, path, w)
	code, out, errs := runCLI("gguf", "inspect", "--json", "--full", path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	want := `"metadata":[{"key":"f","type":"array","array_type":"float32","len":3,"value":["NaN","+Inf",0.1]},` +
		`{"key":"b","type":"array","array_type":"uint8","len":2,"value":[0,255]},` +
		`{"key":"n","type":"array","array_type":"array","len":2,"value":[[-1],["a"]]},` +
		`{"key":"u","type":"uint64","value":18446744073709551615},{"key":"d","type":"float64","value":"-Inf"}]`
	if !strings.Contains(out, want) {
		t.Errorf("got %s\nwant it to contain %s", out, want)
	}
	if code, out, _ := runCLI("gguf", "inspect", "--full", path); code != 0 || !strings.Contains(out, "[2 × uint8] 0, 255") {
		t.Errorf("text --full: exit %d\n%s", code, out)
	}
}

func writeFile(t *testing.T, path string, w *gguf.Writer) {
	t.Helper()
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestGGUFTensor(t *testing.T) {
	path := shared.Model(t, "mini-24m-q8_0.gguf")
	f, err := gguf.Open(path, gguf.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dir := t.TempDir()
	for _, c := range []struct {
		name string
		typ  tensor.Type
	}{{"output_norm.weight", tensor.F32}, {"blk.0.attn_q.weight", tensor.Q8_0}, {"token_embd.weight", tensor.Q8_0}} {
		ti, ok := f.Tensor(c.name)
		if !ok || ti.Type != c.typ {
			t.Fatalf("tensor %s missing or not %s", c.name, c.typ)
		}
		raw, err := f.TensorData(ti)
		if err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(dir, c.name)
		if code, _, errs := runCLI("gguf", "tensor", path, c.name, "-o", out); code != 0 {
			t.Fatalf("raw %s: exit %d: %s", c.name, code, errs)
		}
		if got, _ := os.ReadFile(out); !bytes.Equal(got, raw) {
			t.Errorf("raw %s: output differs from the tensor data", c.name)
		}
		if code, _, errs := runCLI("gguf", "tensor", "--f32", path, c.name, "-o", out); code != 0 {
			t.Fatalf("--f32 %s: exit %d: %s", c.name, code, errs)
		}
		got, _ := os.ReadFile(out)
		want := raw
		if c.typ != tensor.F32 {
			vals := make([]float32, ti.Elements())
			if err := quant.Dequantize(ti.Type, raw, vals); err != nil {
				t.Fatal(err)
			}
			want = make([]byte, 4*len(vals))
			for i, x := range vals {
				binary.LittleEndian.PutUint32(want[4*i:], math.Float32bits(x))
			}
		}
		if !bytes.Equal(got, want) {
			t.Errorf("--f32 %s: %d bytes differ from the expected %d", c.name, len(got), len(want))
		}
	}
}

func TestGGUFUsage(t *testing.T) {
	path := filepath.Join(t.TempDir(), "empty.gguf")
	writeFile(t, path, gguf.NewWriter())
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"gguf"}, 2, "usage"},
		{[]string{"gguf", "frobnicate"}, 2, "unknown subcommand"},
		{[]string{"gguf", "inspect"}, 2, "usage"},
		{[]string{"gguf", "inspect", "--bogus", path}, 2, "bogus"},
		{[]string{"gguf", "inspect", path, path}, 2, "usage"},
		{[]string{"gguf", "tensor", path, "x"}, 2, "usage"},
		{[]string{"gguf", "tensor", path, "x", "-o", "-"}, 1, `no tensor named "x"`},
		{[]string{"gguf", "inspect", path + ".missing"}, 1, "no such file"},
		{[]string{"gguf", "inspect", filepath.Dir(path)}, 1, "not a regular file"},
		{[]string{"gguf", "inspect", path}, 0, ""},
	} {
		code, _, errs := runCLI(c.args...)
		if code != c.code || !strings.Contains(errs, c.msg) {
			t.Errorf("%v: exit %d, stderr %q; want %d with %q", c.args, code, errs, c.code, c.msg)
		}
	}
}

// hostileSeeds returns the hostile files committed in the gguf package's
// fuzz corpus.
func hostileSeeds(t *testing.T) map[string][]byte {
	t.Helper()
	paths, _ := filepath.Glob(filepath.Join("..", "..", "gguf", "testdata", "fuzz", "FuzzRead", "hostile-*"))
	if len(paths) < 40 {
		t.Fatalf("only %d hostile seeds in the gguf corpus", len(paths))
	}
	seeds := map[string][]byte{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.SplitN(string(b), "\n", 2)
		body := strings.TrimSpace(lines[1])
		s, err := strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(body, "[]byte("), ")"))
		if lines[0] != "go test fuzz v1" || err != nil {
			t.Fatalf("%s: not a corpus file: %v", p, err)
		}
		seeds[filepath.Base(p)] = []byte(s)
	}
	return seeds
}

// bigTableDuplicate returns the largest tensor table the default limits
// admit (2^18 entries) whose last name repeats the first: the whole
// table is read before the error, so it is the costliest hostile file
// per byte (9 MiB of table, 8 MiB of data).
func bigTableDuplicate(t *testing.T) []byte {
	t.Helper()
	w := gguf.NewWriter()
	for i := range gguf.DefaultMaxTensors {
		if err := w.AddTensor(fmt.Sprintf("t%05x", i), tensor.F32, []uint64{1}, make([]byte, 4)); err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	last := fmt.Sprintf("t%05x", gguf.DefaultMaxTensors-1)
	b := buf.Bytes()
	i := bytes.LastIndex(b, []byte(last))
	if i < 0 {
		t.Fatalf("no %s in the table", last)
	}
	copy(b[i:], "t00000")
	return b
}

// TestGGUFBinaryHostile builds lisa and runs `gguf inspect` on every
// hostile file: exit 1, one line on stderr, no panic, fast and small.
func TestGGUFBinaryHostile(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "lisa")
	if runtime.GOOS == "windows" {
		bin += ".exe"
	}
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	seeds := hostileSeeds(t)
	seeds["big-table-duplicate"] = bigTableDuplicate(t)
	for name, data := range seeds {
		path := filepath.Join(dir, name+".gguf")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		// In process the parse must be fast; the sandboxed worker adds its
		// start-up. Either way the one line is the parser's error. The
		// limit is on the command's CPU time, which other tests running
		// beside this one do not stretch (its wall time they do: 1.2 s
		// against a 1 s limit under load); the wall time is bounded too,
		// loosely, to catch a hang that does not spin.
		for _, mode := range []struct {
			args  []string
			limit time.Duration
		}{{[]string{"--no-sandbox"}, time.Second}, {nil, 10 * time.Second}} {
			var stdout, stderr bytes.Buffer
			cmd := exec.Command(bin, append([]string{"gguf", "inspect", "--json", path}, mode.args...)...)
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			start := time.Now()
			err := cmd.Run()
			elapsed := time.Since(start)
			code := cmd.ProcessState.ExitCode()
			msg := commandLines(stderr.String())
			if err == nil || code != 1 {
				t.Errorf("%s %v: exit %d (%v)", name, mode.args, code, err)
			}
			if strings.Count(msg, "\n") != 1 || !strings.HasSuffix(msg, "\n") || !strings.HasPrefix(msg, "lisa gguf inspect: gguf: ") ||
				strings.Contains(msg, "panic") || strings.Contains(msg, "goroutine") || stdout.Len() != 0 {
				t.Errorf("%s %v: stderr %q, stdout %d bytes", name, mode.args, stderr.String(), stdout.Len())
			}
			if cpu := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(); cpu > mode.limit {
				t.Errorf("%s %v: took %v of CPU time", name, mode.args, cpu)
			}
			if elapsed > 5*mode.limit {
				t.Errorf("%s %v: took %v", name, mode.args, elapsed)
			}
		}
	}
	checkHostileRSS(t, bin, dir)
}

// checkHostileRSS measures the peak memory of `gguf inspect` on every
// hostile file in dir. A child's peak RSS includes its parent's at the
// time it started, so the runs go through a small helper process (this
// test binary re-executed) and the helper reports each run's figure.
func checkHostileRSS(t *testing.T, bin, dir string) {
	helper := exec.Command(os.Args[0], "-test.run=^TestGGUFHelperRSS$")
	helper.Env = append(os.Environ(), "LISA_GGUF_RSS_BIN="+bin, "LISA_GGUF_RSS_DIR="+dir)
	out, err := helper.Output()
	if err != nil {
		t.Fatalf("helper: %v", err)
	}
	lines, peak := 0, int64(0)
	for _, line := range strings.Split(string(out), "\n") {
		var name string
		var rss int64
		if n, _ := fmt.Sscanf(line, "rss %s %d", &name, &rss); n != 2 {
			continue
		}
		lines++
		peak = max(peak, rss)
		if rss > 100<<20 {
			t.Errorf("%s: peak RSS %d bytes, over 100 MiB", name, rss)
		}
	}
	if lines == 0 && maxRSS(helper.ProcessState) != 0 {
		t.Errorf("helper reported nothing:\n%s", out)
	}
	t.Logf("peak RSS over %d hostile files: %d KiB", lines, peak>>10)
}

// TestGGUFHelperRSS is the helper process of checkHostileRSS; it does
// nothing in a normal test run.
func TestGGUFHelperRSS(t *testing.T) {
	bin, dir := os.Getenv("LISA_GGUF_RSS_BIN"), os.Getenv("LISA_GGUF_RSS_DIR")
	if bin == "" || dir == "" {
		t.Skip("helper process only")
	}
	paths, _ := filepath.Glob(filepath.Join(dir, "*.gguf"))
	for _, p := range paths {
		cmd := exec.Command(bin, "gguf", "inspect", "--no-sandbox", p)
		_ = cmd.Run() // the exit status is checked by the parent test
		if rss := maxRSS(cmd.ProcessState); rss > 0 {
			fmt.Printf("rss %s %d\n", filepath.Base(p), rss)
		}
	}
}

// commandLines drops from a command's stderr the lines that are not its
// own: the --no-sandbox warning and the sandbox's notes on its layers
// (which depend on the host, e.g. running as root).
func commandLines(stderr string) string {
	var out strings.Builder
	for _, l := range strings.SplitAfter(stderr, "\n") {
		if strings.HasPrefix(l, "sandbox: ") || strings.Contains(l, noSandboxWarning) {
			continue
		}
		out.WriteString(l)
	}
	return out.String()
}

// maxRSS returns the peak resident memory of a finished process in bytes,
// or 0 where the platform does not report it.
func maxRSS(ps *os.ProcessState) int64 {
	v := reflect.ValueOf(ps.SysUsage())
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return 0
	}
	f := v.Elem().FieldByName("Maxrss")
	if !f.IsValid() || !f.CanInt() {
		return 0
	}
	if runtime.GOOS == "darwin" {
		return f.Int() // bytes
	}
	return f.Int() << 10 // kilobytes
}

// TestGGUFInspectEscapes checks that strings from the file cannot send
// control sequences to a terminal or break the one-line error.
func TestGGUFInspectEscapes(t *testing.T) {
	w := gguf.NewWriter()
	if err := w.Add("general.name", gguf.StringValue("evil\x1b[2J\n\r")); err != nil {
		t.Fatal(err)
	}
	if err := w.Add("general.architecture", gguf.StringValue("\x07bell")); err != nil {
		t.Fatal(err)
	}
	if err := w.AddTensor("t\x1b]0;x\x07", tensor.F32, []uint64{1}, make([]byte, 4)); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "esc.gguf")
	writeFile(t, path, w)
	code, out, errs := runCLI("gguf", "inspect", "--full", path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if strings.ContainsAny(out, "\x1b\x07\r") {
		t.Errorf("raw control characters in the summary:\n%q", out)
	}
	// A hostile key name in an error stays on one line.
	bad := []byte("GGUF\x03\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\x00\x00\x00\x00\x00\x00")
	for range 2 {
		bad = append(bad, "\x04\x00\x00\x00\x00\x00\x00\x00k\n\x1bx\x04\x00\x00\x00\x01\x00\x00\x00"...)
	}
	if err := os.WriteFile(path, bad, 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errs = runCLI("gguf", "inspect", path)
	if code != 1 || strings.Count(errs, "\n") != 1 || strings.ContainsAny(errs, "\x1b") || !strings.Contains(errs, "duplicate") && !strings.Contains(errs, "repeats") {
		t.Errorf("exit %d, stderr %q", code, errs)
	}
}
