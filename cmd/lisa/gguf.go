package main

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/lisa-llm/lisa/gguf"
	"github.com/lisa-llm/lisa/quant"
	"github.com/lisa-llm/lisa/tensor"
)

const ggufUsage = `usage:
  lisa gguf inspect FILE [--json] [--full]   summarise a GGUF file (--json: machine-readable;
                                             --full: include array values)
  lisa gguf tensor FILE NAME [--f32] -o OUT  write one tensor's raw bytes to OUT ("-": stdout);
                                             --f32: dequantized little-endian float32 instead
  lisa gguf synth --shape SHAPE [--type f32|f16|q8_0|q4_k_m|q5_k_m|q4_0|iq4_xs|q3_k_m|...] [--seed S] [--vocab FILE] -o OUT
                                             write a random-weight model of a real shape
                                             (llama, qwen2, qwen3, granite; --shape list: all)
  Each parses the file (synth: the --vocab file) in a sandboxed worker; --no-sandbox parses it
  in this process, with a warning.`

// runGGUF runs `lisa gguf SUBCOMMAND`: inspect, tensor or synth. It returns 0 on
// success, 1 when the file is invalid or cannot be read, 2 on bad usage.
func runGGUF(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, ggufUsage)
		return 2
	}
	switch args[0] {
	case "inspect":
		return ggufInspect(args[1:], stdout, stderr)
	case "tensor":
		return ggufTensor(args[1:], stdout, stderr)
	case "synth":
		return ggufSynth(args[1:], stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprintln(stdout, ggufUsage)
		return 0
	}
	fmt.Fprintf(stderr, "lisa gguf: unknown subcommand %q\n%s\n", args[0], ggufUsage)
	return 2
}

// parseInterspersed parses flags that may come before, between or after
// the positional arguments, and returns the positional ones.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// newFlagSet returns a flag set that reports errors to stderr.
func newFlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprintln(stderr, ggufUsage) }
	return fs
}

// fail prints err as one line on stderr and returns exit status 1.
func fail(stderr io.Writer, cmd string, err error) int {
	msg := strings.NewReplacer("\n", `\n`, "\r", `\r`).Replace(err.Error())
	fmt.Fprintf(stderr, "lisa gguf %s: %s\n", cmd, msg)
	return 1
}

func ggufInspect(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("inspect", stderr)
	asJSON := fs.Bool("json", false, "print JSON")
	full := fs.Bool("full", false, "include the values of arrays")
	noSandbox := fs.Bool("no-sandbox", false, "parse the file in this process instead of a sandboxed worker")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return 2
	}
	if len(pos) != 1 {
		fmt.Fprintln(stderr, ggufUsage)
		return 2
	}
	err = runJob(jobCall{cmd: "lisa gguf inspect", job: "inspect", model: pos[0], noSandbox: *noSandbox,
		params: inspectParams{Path: pos[0], JSON: *asJSON, Full: *full},
		limit:  func(int64) int64 { return maxInspectReply }}, stdout, stderr)
	if err != nil {
		return fail(stderr, "inspect", err)
	}
	return 0
}

// inspectParams are the parameters of the inspect job.
type inspectParams struct {
	Path string `json:"path"` // as the text output names the file
	JSON bool   `json:"json"`
	Full bool   `json:"full"`
}

// maxInspectReply bounds inspect's output (--full prints every array).
const maxInspectReply = 1 << 30

// inspectJob parses the file and writes its summary.
func inspectJob(env *jobEnv) error {
	var p inspectParams
	f, err := env.parse(&p)
	if err != nil {
		return err
	}
	if err := env.serving(); err != nil {
		return err
	}
	bw := bufio.NewWriter(env.out)
	if p.JSON {
		err = writeInspectJSON(bw, f, p.Full)
	} else {
		writeInspectText(bw, p.Path, f, p.Full)
	}
	if err == nil {
		err = bw.Flush()
	}
	return err
}

// inspectJSON is the shape of `lisa gguf inspect --json`.
type inspectJSON struct {
	Version    uint32       `json:"version"`
	Alignment  uint64       `json:"alignment"`
	DataOffset int64        `json:"data_offset"`
	Metadata   []kvJSON     `json:"metadata"`
	Tensors    []tensorJSON `json:"tensors"`
}

type kvJSON struct {
	Key       string `json:"key"`
	Type      string `json:"type"`
	ArrayType string `json:"array_type,omitempty"`
	Len       *int   `json:"len,omitempty"`
	Value     any    `json:"value,omitempty"`
}

type tensorJSON struct {
	Name   string   `json:"name"`
	Type   string   `json:"type"`
	Dims   []uint64 `json:"dims"`
	Offset uint64   `json:"offset"`
	Bytes  int64    `json:"bytes"`
}

func writeInspectJSON(w io.Writer, f *gguf.File, full bool) error {
	out := inspectJSON{Version: f.Version, Alignment: f.Alignment, DataOffset: f.DataOffset,
		Metadata: make([]kvJSON, 0, len(f.KV)), Tensors: make([]tensorJSON, 0, len(f.Tensors))}
	for _, kv := range f.KV {
		j := kvJSON{Key: kv.Key, Type: kv.Value.Type().String()}
		if kv.Value.Type() == gguf.TypeArray {
			n := kv.Value.Len()
			j.ArrayType, j.Len = kv.Value.ArrayType().String(), &n
			if full {
				j.Value = jsonValue(kv.Value)
			}
		} else {
			j.Value = jsonValue(kv.Value)
		}
		out.Metadata = append(out.Metadata, j)
	}
	for _, t := range f.Tensors {
		out.Tensors = append(out.Tensors, tensorJSON{Name: t.Name, Type: t.Type.String(), Dims: t.Dims, Offset: t.Offset, Bytes: t.Size})
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(out)
}

// jsonFloat encodes a float as a JSON number, or as the string "NaN",
// "+Inf" or "-Inf", which JSON numbers cannot express.
type jsonFloat struct {
	x    float64
	bits int // 32 or 64
}

// MarshalJSON implements json.Marshaler.
func (f jsonFloat) MarshalJSON() ([]byte, error) {
	switch {
	case math.IsNaN(f.x):
		return []byte(`"NaN"`), nil
	case math.IsInf(f.x, 1):
		return []byte(`"+Inf"`), nil
	case math.IsInf(f.x, -1):
		return []byte(`"-Inf"`), nil
	}
	return strconv.AppendFloat(nil, f.x, 'g', -1, f.bits), nil
}

// jsonValue converts a metadata value for encoding/json: integers stay
// exact, floats become jsonFloat, arrays become slices.
func jsonValue(v gguf.Value) any {
	switch v.Type() {
	case gguf.TypeFloat32, gguf.TypeFloat64:
		x, _ := v.Float64()
		return jsonFloat{x, 32 + 32*boolInt(v.Type() == gguf.TypeFloat64)}
	case gguf.TypeArray:
	default:
		return v.Interface()
	}
	switch a := v.Slice().(type) {
	case []string, []bool, []int32, []uint32, []int64, []uint64, []int16, []uint16, []int8:
		return a
	case []uint8:
		// encoding/json would write []byte as base64.
		out := make([]uint16, len(a))
		for i, x := range a {
			out[i] = uint16(x)
		}
		return out
	}
	out := make([]any, v.Len())
	for i := range out {
		e, _ := v.Elem(i)
		out[i] = jsonValue(e)
	}
	return out
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// safeText quotes s when printing it raw could confuse a terminal (control
// characters, invalid UTF-8), and shortens it to max runes.
func safeText(s string, max int) string {
	q := strconv.Quote(s)
	if q[1:len(q)-1] == s && !strings.ContainsAny(s, " ") && len(s) <= max {
		return s
	}
	r := []rune(s)
	if len(r) > max {
		return strconv.Quote(string(r[:max])) + "…"
	}
	return q
}

// describe formats a metadata value for the text summary; arrays show
// their first elements, or all of them when full is set.
func describe(v gguf.Value, full bool) string {
	if v.Type() == gguf.TypeString {
		s, _ := v.Str()
		if full {
			return strconv.Quote(s)
		}
		return safeText(s, 60)
	}
	if v.Type() != gguf.TypeArray {
		return v.String()
	}
	n := v.Len()
	show := min(n, 6)
	if full {
		show = n
	}
	parts := make([]string, 0, show+1)
	for i := range show {
		e, _ := v.Elem(i)
		parts = append(parts, describe(e, full))
	}
	if show < n {
		parts = append(parts, "…")
	}
	return fmt.Sprintf("[%d × %s] %s", n, v.ArrayType(), strings.Join(parts, ", "))
}

func writeInspectText(w io.Writer, path string, f *gguf.File, full bool) {
	var params int64
	type typeStat struct {
		n     int
		bytes int64
	}
	stats := map[tensor.Type]*typeStat{}
	for i := range f.Tensors {
		t := &f.Tensors[i]
		params += t.Elements()
		s := stats[t.Type]
		if s == nil {
			s = &typeStat{}
			stats[t.Type] = s
		}
		s.n++
		s.bytes += t.Size
	}
	name, _ := f.String("general.name")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "file:\t%s\n", safeText(path, 200))
	fmt.Fprintf(tw, "architecture:\t%s\n", safeText(f.Architecture(), 60))
	if name != "" {
		fmt.Fprintf(tw, "name:\t%s\n", safeText(name, 60))
	}
	fmt.Fprintf(tw, "parameters:\t%s (%d)\n", humanCount(params), params)
	fmt.Fprintf(tw, "file size:\t%s (%d bytes)\n", humanBytes(f.FileSize), f.FileSize)
	fmt.Fprintf(tw, "version:\t%d\n", f.Version)
	fmt.Fprintf(tw, "alignment:\t%d\n", f.Alignment)
	fmt.Fprintf(tw, "data offset:\t%d\n", f.DataOffset)
	fmt.Fprintf(tw, "metadata:\t%d pairs\n", len(f.KV))
	fmt.Fprintf(tw, "tensors:\t%d\n", len(f.Tensors))
	types := make([]tensor.Type, 0, len(stats))
	for t := range stats {
		types = append(types, t)
	}
	slices.Sort(types)
	for _, t := range types {
		fmt.Fprintf(tw, "  %s:\t%d tensors, %s\n", t, stats[t].n, humanBytes(stats[t].bytes))
	}
	tw.Flush()
	fmt.Fprintln(w, "\nmetadata:")
	for _, kv := range f.KV {
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", kv.Key, kv.Value.Type(), describe(kv.Value, full))
	}
	tw.Flush()
	fmt.Fprintln(w, "\ntensors:")
	fmt.Fprintln(tw, "  NAME\tTYPE\tDIMS\tOFFSET\tBYTES")
	for _, t := range f.Tensors {
		dims := make([]string, len(t.Dims))
		for i, d := range t.Dims {
			dims[i] = strconv.FormatUint(d, 10)
		}
		fmt.Fprintf(tw, "  %s\t%s\t[%s]\t%d\t%d\n", safeText(t.Name, 80), t.Type, strings.Join(dims, " "), t.Offset, t.Size)
	}
	tw.Flush()
}

func humanCount(n int64) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.2fB", float64(n)/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.2fM", float64(n)/1e6)
	case n >= 1e3:
		return fmt.Sprintf("%.2fK", float64(n)/1e3)
	}
	return strconv.FormatInt(n, 10)
}

func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	x, i := float64(n), -1
	for x >= unit && i < 4 {
		x /= unit
		i++
	}
	return fmt.Sprintf("%.1f %ciB", x, "KMGTP"[i])
}

func ggufTensor(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("tensor", stderr)
	asF32 := fs.Bool("f32", false, "write dequantized little-endian float32")
	outPath := fs.String("o", "", `output file ("-" for stdout)`)
	noSandbox := fs.Bool("no-sandbox", false, "parse the file in this process instead of a sandboxed worker")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return 2
	}
	if len(pos) != 2 || *outPath == "" {
		fmt.Fprintln(stderr, ggufUsage)
		return 2
	}
	err = writeOut(*outPath, stdout, func(w io.Writer) error {
		return runJob(jobCall{cmd: "lisa gguf tensor", job: "tensor", model: pos[0], noSandbox: *noSandbox,
			params: tensorParams{Name: pos[1], F32: *asF32},
			limit:  func(size int64) int64 { return tensorReplyLimit(size, *asF32) }}, w, stderr)
	})
	if err != nil {
		return fail(stderr, "tensor", err)
	}
	return 0
}

// tensorParams are the parameters of the tensor job.
type tensorParams struct {
	Name string `json:"name"`
	F32  bool   `json:"f32"`
}

// tensorReplyLimit bounds the tensor job's output for a model of size
// bytes: its raw data is part of the file; dequantized, each value takes
// 4 bytes, and no type stores a value in less than 1.5 bits.
func tensorReplyLimit(size int64, f32 bool) int64 {
	if !f32 {
		return size
	}
	return 32 * size
}

// tensorJob writes the raw or dequantized data of one tensor.
func tensorJob(env *jobEnv) error {
	var p tensorParams
	f, err := env.parse(&p)
	if err != nil {
		return err
	}
	t, ok := f.Tensor(p.Name)
	if !ok {
		return fmt.Errorf("no tensor named %s: %w", strconv.Quote(p.Name), gguf.ErrNotFound)
	}
	if p.F32 && !quant.Supported(t.Type) {
		return fmt.Errorf("tensor %s: cannot dequantize type %s", strconv.Quote(t.Name), t.Type)
	}
	data, err := f.TensorData(t)
	if err != nil {
		return err
	}
	if err := env.serving(); err != nil {
		return err
	}
	if p.F32 {
		return writeF32(env.out, t, data)
	}
	_, err = env.out.Write(data)
	return err
}

// writeOut runs write on the named file, or on stdout for "-". The file
// is created (or truncated) at the first byte written, so a failure
// before any output (no such tensor, an invalid file) leaves an existing
// file as it was.
func writeOut(path string, stdout io.Writer, write func(io.Writer) error) error {
	if path == "-" {
		return write(stdout)
	}
	lf := &lazyFile{path: path}
	bw := bufio.NewWriterSize(lf, 1<<20)
	err := write(bw)
	if err == nil {
		err = bw.Flush()
	}
	if err == nil && lf.f == nil {
		_, err = lf.Write(nil) // an empty output is an empty file
	}
	if lf.f != nil {
		if cerr := lf.f.Close(); err == nil {
			err = cerr
		}
	}
	return err
}

// lazyFile creates the file at path on its first Write.
type lazyFile struct {
	path string
	f    *os.File
}

func (l *lazyFile) Write(p []byte) (int, error) {
	if l.f == nil {
		f, err := os.Create(l.path)
		if err != nil {
			return 0, err
		}
		l.f = f
	}
	return l.f.Write(p)
}

// writeF32 dequantizes data, the bytes of t, in chunks of whole blocks
// and writes the values as little-endian float32.
func writeF32(w io.Writer, t *gguf.TensorInfo, data []byte) error {
	bs, bb := t.Type.BlockSize(), t.Type.BlockBytes()
	if bs <= 0 || len(data)%bb != 0 {
		return fmt.Errorf("tensor %s: %d bytes are not whole %s blocks", strconv.Quote(t.Name), len(data), t.Type)
	}
	blocks := max(1, (1<<18)/bs) // about 1 MiB of float32 per chunk
	vals := make([]float32, blocks*bs)
	buf := make([]byte, 4*len(vals))
	for len(data) > 0 {
		nb := min(blocks, len(data)/bb)
		n := nb * bs
		if err := quant.Dequantize(t.Type, data[:nb*bb], vals[:n]); err != nil {
			return err
		}
		for i, x := range vals[:n] {
			binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(x))
		}
		if _, err := w.Write(buf[:4*n]); err != nil {
			return err
		}
		data = data[nb*bb:]
	}
	return nil
}
