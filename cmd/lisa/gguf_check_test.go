package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lisa-llm/lisa/gguf"
	"github.com/lisa-llm/lisa/internal/shared"
	"github.com/lisa-llm/lisa/tensor"
)

// syntheticFiles writes GGUF files the shared models do not cover: one
// tensor of every ggml type that has a layout, every metadata value type
// (arrays of each, arrays of arrays, extreme numbers), several alignments
// and a version 2 header. It returns their paths.
func syntheticFiles(t *testing.T, dir string) []string {
	t.Helper()
	var paths []string
	for _, align := range []uint64{1, 32, 4096} {
		w := gguf.NewWriter()
		w.SetAlignment(align)
		for _, kv := range []gguf.KV{
			{Key: "general.architecture", Value: gguf.StringValue("llama")},
			{Key: "s.unicode", Value: gguf.StringValue("héllo ▁wörld 🦙\x00nul")},
			{Key: "n.u8", Value: gguf.Uint8Value(255)}, {Key: "n.i8", Value: gguf.Int8Value(-128)},
			{Key: "n.u16", Value: gguf.Uint16Value(65535)}, {Key: "n.i16", Value: gguf.Int16Value(-32768)},
			{Key: "n.u32", Value: gguf.Uint32Value(math.MaxUint32)}, {Key: "n.i32", Value: gguf.Int32Value(math.MinInt32)},
			{Key: "n.u64", Value: gguf.Uint64Value(math.MaxUint64)}, {Key: "n.i64", Value: gguf.Int64Value(math.MinInt64)},
			{Key: "n.f32", Value: gguf.Float32Value(-0.1)}, {Key: "n.f64", Value: gguf.Float64Value(1e300)},
			{Key: "n.f32.nan", Value: gguf.Float32Value(float32(math.NaN()))},
			{Key: "n.f64.inf", Value: gguf.Float64Value(math.Inf(-1))},
			{Key: "b.true", Value: gguf.BoolValue(true)}, {Key: "b.false", Value: gguf.BoolValue(false)},
			{Key: "a.u8", Value: gguf.Uint8sValue([]uint8{0, 1, 255})},
			{Key: "a.i8", Value: gguf.Int8sValue([]int8{-128, 127})},
			{Key: "a.u16", Value: gguf.Uint16sValue([]uint16{65535})},
			{Key: "a.i16", Value: gguf.Int16sValue([]int16{-1, 1})},
			{Key: "a.u32", Value: gguf.Uint32sValue([]uint32{1 << 31})},
			{Key: "a.i32", Value: gguf.Int32sValue([]int32{-7, 7})},
			{Key: "a.u64", Value: gguf.Uint64sValue([]uint64{math.MaxUint64, 1 << 53, 1<<53 + 1})},
			{Key: "a.i64", Value: gguf.Int64sValue([]int64{math.MinInt64, -(1<<53 + 1)})},
			{Key: "a.f32", Value: gguf.Float32sValue([]float32{1.5, float32(math.Inf(1)), float32(math.SmallestNonzeroFloat32)})},
			{Key: "a.f64", Value: gguf.Float64sValue([]float64{math.MaxFloat64, math.Copysign(0, -1)})},
			{Key: "a.bool", Value: gguf.BoolsValue([]bool{true, false, true})},
			{Key: "a.str", Value: gguf.StringsValue([]string{"", "a", "▁b", "\n"})},
			{Key: "a.empty", Value: gguf.Int32sValue(nil)},
			{Key: "a.nested", Value: gguf.ArrayValue(gguf.TypeArray, gguf.Int32sValue([]int32{1, 2}), gguf.StringsValue([]string{"x"}), gguf.Float32sValue(nil))},
		} {
			if err := w.Add(kv.Key, kv.Value); err != nil {
				t.Fatal(err)
			}
		}
		types := 0
		for typ := tensor.Type(0); typ.Known(); typ++ {
			if !typ.Valid() {
				continue
			}
			dims := []uint64{2 * uint64(typ.BlockSize()), 3}
			n, err := typ.Bytes(dims)
			if err != nil {
				t.Fatal(err)
			}
			data := make([]byte, n)
			for i := range data {
				data[i] = byte(i*31 + int(typ))
			}
			if err := w.AddTensor("t."+typ.String(), typ, dims, data); err != nil {
				t.Fatal(err)
			}
			types++
		}
		if types < 33 {
			t.Fatalf("only %d tensor types have a layout", types)
		}
		path := filepath.Join(dir, fmt.Sprintf("every-type-align%d.gguf", align))
		writeFile(t, path, w)
		paths = append(paths, path)
	}
	// Version 2 has the same little-endian layout.
	b, err := os.ReadFile(paths[1])
	if err != nil {
		t.Fatal(err)
	}
	b[4] = 2
	v2 := filepath.Join(dir, "every-type-v2.gguf")
	if err := os.WriteFile(v2, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return append(paths, v2)
}

// TestGGUFIndependentReader runs tools/ggufcheck: `lisa gguf inspect
// --json --full` must agree with @huggingface/gguf, an independent GGUF
// reader, on every key, value, array element and tensor (name, type,
// dims, offset, byte size) of every shared model, every vocabulary file
// and the synthetic files above. It needs node; it runs npm ci first
// when the package is not installed. Without node or npm it skips,
// except on CI.
func TestGGUFIndependentReader(t *testing.T) {
	if testing.Short() {
		t.Skip("builds lisa and starts node; skipped with -short")
	}
	files := shared.Models(t)
	vocab, _ := filepath.Glob(filepath.Join(shared.Path(t, "ref/vocab"), "*.gguf"))
	if len(vocab) == 0 {
		t.Fatal("no vocabulary files in shared/ref/vocab")
	}
	dir, err := filepath.Abs(filepath.Join("..", "..", "tools", "ggufcheck"))
	if err != nil {
		t.Fatal(err)
	}
	node := shared.NodeTool(t, dir, filepath.Join("@huggingface", "gguf"))
	tmp := t.TempDir()
	bin := e2eBinary(t)
	files = append(append(files, vocab...), syntheticFiles(t, tmp)...)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append([]string{"check.mjs", "--lisa", bin}, files...)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("ggufcheck: %v\n%s", err, out)
	}
	want := fmt.Sprintf("ggufcheck: %d of %d files agree", len(files), len(files))
	if !strings.Contains(string(out), want) {
		t.Fatalf("output lacks %q:\n%s", want, out)
	}
	t.Logf("%s", out)
}

// TestGGUFInspectJSONShape checks the exact text of `inspect --json` for
// a small file against the shape the issue specifies (key order, field
// names, no extra fields; data_offset computed by hand: a 24-byte header,
// pairs of 45 and 63 bytes and a 57-byte tensor entry end at 189, padded
// to 192).
func TestGGUFInspectJSONShape(t *testing.T) {
	w := gguf.NewWriter()
	if err := w.Add("general.architecture", gguf.StringValue("llama")); err != nil {
		t.Fatal(err)
	}
	if err := w.Add("tokenizer.ggml.tokens", gguf.StringsValue([]string{"a", "b"})); err != nil {
		t.Fatal(err)
	}
	if err := w.AddTensor("token_embd.weight", tensor.Q4_K, []uint64{256, 2}, make([]byte, 288)); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "shape.gguf")
	writeFile(t, path, w)
	want := `{"version":3,"alignment":32,"data_offset":192,` +
		`"metadata":[{"key":"general.architecture","type":"string","value":"llama"},` +
		`{"key":"tokenizer.ggml.tokens","type":"array","array_type":"string","len":2}],` +
		`"tensors":[{"name":"token_embd.weight","type":"Q4_K","dims":[256,2],"offset":0,"bytes":288}]}` + "\n"
	code, out, errs := runCLI("gguf", "inspect", "--json", path)
	if code != 0 || out != want {
		t.Errorf("exit %d, stderr %q\n got %s\nwant %s", code, errs, out, want)
	}
	want = strings.Replace(want, `"len":2}`, `"len":2,"value":["a","b"]}`, 1)
	if code, out, _ := runCLI("gguf", "inspect", "--json", "--full", path); code != 0 || out != want {
		t.Errorf("--full: exit %d\n got %s\nwant %s", code, out, want)
	}
}
