package main

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lisa-llm/lisa/gguf"
	"github.com/lisa-llm/lisa/internal/shared"
)

// frames renders worker reply frames.
func frames(t testing.TB, fs ...[]byte) []byte {
	t.Helper()
	var b bytes.Buffer
	w := bufio.NewWriter(&b)
	for _, f := range fs {
		if err := writeFrame(w, f[0], f[1:]); err != nil {
			t.Fatal(err)
		}
	}
	w.Flush()
	return b.Bytes()
}

func TestReadReply(t *testing.T) {
	big := make([]byte, maxFrame+1)
	cases := []struct {
		name  string
		in    []byte
		limit int64
		out   string
		err   string // "" for success
		isJob bool
	}{
		{"ok", frames(t, []byte("ohello "), []byte("oworld"), []byte("k")), 100, "hello world", "", false},
		{"empty ok", frames(t, []byte("k")), 0, "", "", false},
		{"job error escaped", frames(t, []byte("opart"), []byte("ebad\x1b[31m\nfile")), 100, "part", `bad\x1b[31m\nfile`, true},
		{"over the limit", frames(t, []byte("o12345"), []byte("o6"), []byte("k")), 5, "12345", "over its limit", false},
		{"frame too large", frames(t, append([]byte("o"), big...)), 1 << 30, "", "output frame of", false},
		{"error too large", frames(t, append([]byte("e"), make([]byte, maxJobErr+1)...)), 100, "", "error frame of", false},
		{"ok with data", frames(t, []byte("kx")), 100, "", "ok frame of 1 bytes", false},
		{"unknown kind", frames(t, []byte("zx")), 100, "", "unknown frame kind", false},
		{"worker died", frames(t, []byte("opart")), 100, "part", "unexpected EOF", false},
		{"truncated frame", frames(t, []byte("opart"))[:7], 100, "pa", "unexpected EOF", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var out bytes.Buffer
			err := readReply("test", bytes.NewReader(c.in), &out, c.limit)
			var je *jobError
			switch {
			case c.err == "" && err != nil:
				t.Fatalf("error %v", err)
			case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
				t.Fatalf("error %v, want one with %q", err, c.err)
			case c.err != "" && errors.As(err, &je) != c.isJob:
				t.Errorf("error %T, job error: %v", err, c.isJob)
			}
			if out.String() != c.out {
				t.Errorf("output %q, want %q", out.String(), c.out)
			}
		})
	}
}

func FuzzReadReply(f *testing.F) {
	f.Add(frames(f, []byte("ohello"), []byte("k")), int64(10))
	f.Add(frames(f, []byte("ebad")), int64(10))
	f.Fuzz(func(t *testing.T, in []byte, limit int64) {
		limit = max(0, limit%(1<<20))
		var out bytes.Buffer
		err := readReply("fuzz", bytes.NewReader(in), &out, limit)
		if int64(out.Len()) > limit {
			t.Fatalf("%d bytes out, limit %d", out.Len(), limit)
		}
		var je *jobError
		if errors.As(err, &je) && (len(je.Msg) > 4*maxJobErr || strings.ContainsAny(je.Msg, "\n\r\x1b")) {
			t.Fatalf("job error not escaped or bounded: %q", je.Msg)
		}
	})
}

func TestLimitWriter(t *testing.T) {
	var b bytes.Buffer
	w := &limitWriter{w: &b, n: 4}
	if _, err := w.Write([]byte("abc")); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte("de")); !errors.Is(err, errReplyTooLarge) {
		t.Errorf("write past the limit: %v", err)
	}
	if b.String() != "abc" {
		t.Errorf("wrote %q", b.String())
	}
}

// runJobInProcess runs the job name on the file at path in this process.
func runJobInProcess(t *testing.T, name, path string, params []byte) []byte {
	t.Helper()
	job, ok := lookupJob(name)
	if !ok {
		t.Fatalf("no job %q", name)
	}
	f, err := gguf.Open(path, gguf.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out bytes.Buffer
	env := &jobEnv{params: params, out: &out, open: func() (*gguf.File, error) { return f, nil }, serving: func() error { return nil }}
	if err := job(env); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// TestVocabKVsRoundTrip checks that the vocab job's reply rebuilds every
// tokenizer.* pair of real vocabularies exactly.
func TestVocabKVsRoundTrip(t *testing.T) {
	for _, name := range []string{"ggml-vocab-llama-spm.gguf", "ggml-vocab-gpt-2.gguf", "ggml-vocab-falcon.gguf", "ggml-vocab-deepseek-llm.gguf"} {
		t.Run(name, func(t *testing.T) {
			path := shared.Path(t, "ref/vocab/"+name)
			kvs, err := decodeVocabKVs(bytes.NewReader(runJobInProcess(t, "vocab", path, nil)))
			if err != nil {
				t.Fatal(err)
			}
			f, err := gguf.Open(path, gguf.DefaultLimits())
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			var want []gguf.KV
			for _, kv := range f.KV {
				if strings.HasPrefix(kv.Key, "tokenizer.") {
					want = append(want, kv)
				}
			}
			if len(kvs) != len(want) || len(want) == 0 {
				t.Fatalf("%d pairs back, want %d", len(kvs), len(want))
			}
			for i := range want {
				g, w := kvs[i], want[i]
				if g.Key != w.Key || g.Value.Type() != w.Value.Type() || g.Value.ArrayType() != w.Value.ArrayType() ||
					g.Value.String() != w.Value.String() || g.Value.Len() != w.Value.Len() {
					t.Errorf("pair %d: %s %v, want %s %v", i, g.Key, g.Value.Type(), w.Key, w.Value.Type())
					continue
				}
				for j := range w.Value.Len() {
					ge, _ := g.Value.Elem(j)
					we, _ := w.Value.Elem(j)
					if ge.Interface() != we.Interface() {
						t.Errorf("%s[%d] = %v, want %v", w.Key, j, ge.Interface(), we.Interface())
						break
					}
				}
			}
		})
	}
}

func TestDecodeVocabKVsRefuses(t *testing.T) {
	cases := map[string]string{
		"not a tokenizer key": `[{"key":"general.name","type":8,"strs":["eA=="]}]`,
		"duplicate":           `[{"key":"tokenizer.a","type":4,"bits":[1]},{"key":"tokenizer.a","type":4,"bits":[1]}]`,
		"uint8 out of range":  `[{"key":"tokenizer.a","type":0,"bits":[256]}]`,
		"int8 out of range":   `[{"key":"tokenizer.a","type":1,"bits":[128]}]`,
		"bool 2":              `[{"key":"tokenizer.a","type":7,"bits":[2]}]`,
		"float32 high bits":   `[{"key":"tokenizer.a","type":6,"bits":[4294967296]}]`,
		"two scalars":         `[{"key":"tokenizer.a","type":4,"bits":[1,2]}]`,
		"string with bits":    `[{"key":"tokenizer.a","type":8,"bits":[1],"strs":["eA=="]}]`,
		"nested array":        `[{"key":"tokenizer.a","type":9,"elem":9}]`,
		"unknown type":        `[{"key":"tokenizer.a","type":99,"bits":[1]}]`,
		"mixed array":         `[{"key":"tokenizer.a","type":9,"elem":4,"bits":[1],"strs":["eA=="]}]`,
		"array element range": `[{"key":"tokenizer.a","type":9,"elem":2,"bits":[1,65536]}]`,
		"trailing data":       `[] []`,
		"not json":            `{`,
	}
	for name, in := range cases {
		if kvs, err := decodeVocabKVs(strings.NewReader(in)); err == nil {
			t.Errorf("%s: accepted %v", name, kvs)
		}
	}
	kvs, err := decodeVocabKVs(strings.NewReader(`[{"key":"tokenizer.a","type":5,"bits":[18446744073709551615]},` +
		`{"key":"tokenizer.b","type":9,"elem":8,"strs":["/w==",""]}]`))
	if err != nil || len(kvs) != 2 {
		t.Fatalf("%v %v", kvs, err)
	}
	if n, _ := kvs[0].Value.Int64(); n != -1 {
		t.Errorf("int32 -1 decoded as %d", n)
	}
	if s, _ := kvs[1].Value.Strings(); len(s) != 2 || s[0] != "\xff" || s[1] != "" {
		t.Errorf("strings %q", s)
	}
}

func FuzzDecodeVocabKVs(f *testing.F) {
	f.Add([]byte(`[{"key":"tokenizer.a","type":9,"elem":6,"bits":[1065353216]}]`))
	f.Add([]byte(`[{"key":"tokenizer.b","type":8,"strs":["eA=="]}]`))
	f.Fuzz(func(t *testing.T, in []byte) {
		kvs, err := decodeVocabKVs(bytes.NewReader(in))
		if err != nil {
			return
		}
		// What is accepted is what the writer of the synthetic model
		// accepts.
		w := gguf.NewWriter()
		for _, kv := range kvs {
			if !strings.HasPrefix(kv.Key, "tokenizer.") {
				t.Fatalf("key %q accepted", kv.Key)
			}
			if err := w.Add(kv.Key, kv.Value); err != nil {
				t.Fatalf("accepted %s, which the writer refuses: %v", kv.Key, err)
			}
		}
	})
}

// TestTensorErrorKeepsFile checks that a failed `gguf tensor` leaves the
// output file as it was.
func TestTensorErrorKeepsFile(t *testing.T) {
	model := shared.Model(t, "stories260K.gguf")
	out := filepath.Join(t.TempDir(), "out")
	if err := os.WriteFile(out, []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := runCLI("gguf", "tensor", model, "nope", "-o", out); code != 1 || errs == "" {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	if b, err := os.ReadFile(out); err != nil || string(b) != "keep" {
		t.Errorf("output file now %q (%v)", b, err)
	}
	if code, _, errs := runCLI("gguf", "tensor", model, "token_embd.weight", "-o", out); code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	if st, err := os.Stat(out); err != nil || st.Size() <= 4 {
		t.Errorf("output file after success: %v %v", st, err)
	}
}
