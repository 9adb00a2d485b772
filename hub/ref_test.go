package hub

import (
	"errors"
	"strings"
	"testing"
)

func TestParseRef(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Ref
		err  bool
	}{
		{in: "bartowski/Llama-3.2-1B-Instruct-GGUF", want: Ref{Repo: "bartowski/Llama-3.2-1B-Instruct-GGUF"}},
		{in: "bartowski/Llama-3.2-1B-Instruct-GGUF:q4_k_m", want: Ref{Repo: "bartowski/Llama-3.2-1B-Instruct-GGUF", Quant: "q4_k_m"}},
		{in: "o/n/sub/m-Q8_0.gguf", want: Ref{Repo: "o/n", File: "sub/m-Q8_0.gguf"}},
		{in: "o/n/m.GGUF", want: Ref{Repo: "o/n", File: "m.GGUF"}},
		{in: "gpt2", err: true},
		{in: "o/n:", err: true},
		{in: "o/n:Q4 K", err: true},
		{in: "o/n/README.md", err: true},
		{in: "o/n/../../etc/x.gguf", err: true},
		{in: "o/n//x.gguf", err: true},
		{in: "o/n/a\\b.gguf", err: true},
		{in: "../n", err: true},
		{in: "o/..", err: true},
		{in: "o/a--b", err: true},
		{in: "-o/n", err: true},
		{in: "o/n.", err: true},
		{in: "o/" + strings.Repeat("n", 97), err: true},
		{in: "o /n", err: true},
	} {
		got, err := ParseRef(tc.in)
		if tc.err {
			if !errors.Is(err, ErrName) {
				t.Errorf("ParseRef(%q) = %+v, %v; want an ErrName", tc.in, got, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseRef(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
		if got.String() != tc.in {
			t.Errorf("ParseRef(%q).String() = %q", tc.in, got.String())
		}
	}
}

func TestCheckPath(t *testing.T) {
	for _, tc := range []struct {
		p  string
		ok bool
	}{
		{"m.gguf", true}, {"Q4_K_M/m-00001-of-00002.gguf", true}, {"a b/c d.gguf", true},
		{"", false}, {"/etc/x.gguf", false}, {"../x.gguf", false}, {"a/../x.gguf", false},
		{"a/./x.gguf", false}, {"a//x.gguf", false}, {"a/", false}, {".", false}, {"..", false},
		{`a\..\x.gguf`, false}, {"C:x.gguf", false}, {"a\x00.gguf", false}, {"a\nb.gguf", false},
		{"a\x7f.gguf", false}, {"\xff.gguf", false}, {strings.Repeat("a/", 600) + "x.gguf", false},
		{strings.Repeat("a", 256) + ".gguf", false},
	} {
		if err := CheckPath(tc.p); (err == nil) != tc.ok {
			t.Errorf("CheckPath(%q) = %v, want ok %v", tc.p, err, tc.ok)
		}
	}
}

func TestMatchQuant(t *testing.T) {
	for _, tc := range []struct {
		p, q string
		want bool
	}{
		{"Llama-3.2-1B-Instruct-Q4_K_M.gguf", "Q4_K_M", true},
		{"Llama-3.2-1B-Instruct-Q4_K_M.gguf", "q4_k_m", true},
		{"llama.q4_k_m.gguf", "Q4_K_M", true},
		{"Q4_K_M/model-00001-of-00002.gguf", "Q4_K_M", true},
		{"Llama-Q4_K_M.gguf", "Q4_K", false},
		{"Llama-IQ4_XS.gguf", "Q4_XS", false},
		{"Llama-BF16.gguf", "F16", false},
		{"Llama-F16.gguf", "F16", true},
		{"Llama-Q8_0-00001-of-00002.gguf", "Q8_0", true},
		{"model.gguf", "gguf", false},
		{"model.gguf", "", false},
	} {
		if got := MatchQuant(tc.p, tc.q); got != tc.want {
			t.Errorf("MatchQuant(%q, %q) = %v", tc.p, tc.q, got)
		}
	}
	if q := QuantOf("x/Llama-3.2-1B-Instruct-Q4_K_S.gguf"); q != "Q4_K_S" {
		t.Errorf("QuantOf = %q", q)
	}
	if q := QuantOf("model.gguf"); q != "" {
		t.Errorf("QuantOf(model.gguf) = %q", q)
	}
}

func TestShardOf(t *testing.T) {
	for _, tc := range []struct {
		p            string
		prefix       string
		index, count int
		ok           bool
	}{
		{"m-00001-of-00003.gguf", "m", 1, 3, true},
		{"d/m-Q4_K_M-00003-of-00003.gguf", "d/m-Q4_K_M", 3, 3, true},
		{"m-00004-of-00003.gguf", "", 0, 0, false},
		{"m-00000-of-00003.gguf", "", 0, 0, false},
		{"m-00001-of-00000.gguf", "", 0, 0, false},
		{"m-0000a-of-00003.gguf", "", 0, 0, false},
		{"m-+0001-of-00003.gguf", "", 0, 0, false},
		{"m_00001-of-00003.gguf", "", 0, 0, false},
		{"-00001-of-00001.gguf", "", 1, 1, true},
		{"m.gguf", "", 0, 0, false},
	} {
		prefix, i, n, ok := shardOf(tc.p)
		if ok != tc.ok || ok && (prefix != tc.prefix || i != tc.index || n != tc.count) {
			t.Errorf("shardOf(%q) = %q %d %d %v", tc.p, prefix, i, n, ok)
		}
	}
}

func TestSelect(t *testing.T) {
	files := func(paths ...string) []File {
		var fs []File
		for _, p := range paths {
			fs = append(fs, File{Path: p, Size: 1})
		}
		return fs
	}
	paths := func(fs []File) string {
		var ps []string
		for _, f := range fs {
			ps = append(ps, f.Path)
		}
		return strings.Join(ps, ",")
	}
	repo := files("m-Q4_K_M.gguf", "m-Q8_0.gguf", "m-Q4_K_S.gguf", "mmproj-m-F16.gguf", "README.md",
		"F16/m-F16-00001-of-00002.gguf", "F16/m-F16-00002-of-00002.gguf")
	for _, tc := range []struct {
		name  string
		files []File
		ref   Ref
		want  string
		err   error
	}{
		{"tag", repo, Ref{Quant: "q8_0"}, "m-Q8_0.gguf", nil},
		{"default Q4_K_M", repo, Ref{}, "m-Q4_K_M.gguf", nil},
		{"split", repo, Ref{Quant: "F16"}, "F16/m-F16-00001-of-00002.gguf,F16/m-F16-00002-of-00002.gguf", nil},
		{"file of a split", repo, Ref{File: "F16/m-F16-00002-of-00002.gguf"}, "F16/m-F16-00001-of-00002.gguf,F16/m-F16-00002-of-00002.gguf", nil},
		{"file", repo, Ref{File: "mmproj-m-F16.gguf"}, "mmproj-m-F16.gguf", nil},
		{"no such tag", repo, Ref{Quant: "Q2_K"}, "", ErrNotFound},
		{"no such file", repo, Ref{File: "x.gguf"}, "", ErrNotFound},
		{"only one model", files("a.gguf", "mmproj.gguf"), Ref{}, "a.gguf", nil},
		{"several, no Q4_K_M", files("a-Q8_0.gguf", "b-Q8_0.gguf"), Ref{}, "", ErrAmbiguous},
		{"tag twice", files("a-Q8_0.gguf", "b-Q8_0.gguf"), Ref{Quant: "Q8_0"}, "", ErrAmbiguous},
		{"no gguf", files("README.md"), Ref{}, "", ErrNotFound},
		{"shard missing", files("m-00001-of-00003.gguf", "m-00003-of-00003.gguf"), Ref{}, "", nil},
		{"orphan shard", files("m-00002-of-00002.gguf", "a.gguf"), Ref{}, "a.gguf", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.ref.Repo = "o/n"
			got, err := Select(tc.files, tc.ref)
			if tc.want == "" {
				if err == nil || tc.err != nil && !errors.Is(err, tc.err) {
					t.Fatalf("got %q, %v; want error %v", paths(got), err, tc.err)
				}
				return
			}
			if err != nil || paths(got) != tc.want {
				t.Fatalf("got %q, %v; want %q", paths(got), err, tc.want)
			}
		})
	}
}
