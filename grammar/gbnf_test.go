package grammar

import (
	"errors"
	"testing"
)

// accepts reports whether g takes all of s and is complete after it.
func accepts(t *testing.T, g *Grammar, s string) bool {
	t.Helper()
	m, err := NewMatcher(g, DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	if err := m.AcceptBytes([]byte(s)); err != nil {
		if !errors.Is(err, ErrRejected) {
			t.Fatalf("%q: %v", s, err)
		}
		return false
	}
	return m.Complete()
}

func TestGBNFMatch(t *testing.T) {
	tests := []struct {
		name    string
		src     string
		yes, no []string
	}{
		{"literal", `root ::= "ab"`, []string{"ab"}, []string{"a", "abc", "", "b"}},
		{"alternation", `root ::= "a" | "bc" | ""`, []string{"a", "bc", ""}, []string{"b", "abc"}},
		{"class", `root ::= [a-c0-9_]`, []string{"a", "c", "5", "_"}, []string{"d", "", "ab"}},
		{"negated class", `root ::= [^a-c]`, []string{"d", "é", "\n"}, []string{"a", "b", ""}},
		{"any", `root ::= .`, []string{"x", "€", "😀"}, []string{"", "xy"}},
		{"star", `root ::= "a"*`, []string{"", "a", "aaaa"}, []string{"b", "aab"}},
		{"plus", `root ::= "ab"+`, []string{"ab", "abab"}, []string{"", "a", "aba"}},
		{"optional", `root ::= "x" "y"?`, []string{"x", "xy"}, []string{"y", "xyy"}},
		{"exact", `root ::= [0-9]{3}`, []string{"123"}, []string{"12", "1234"}},
		{"range", `root ::= "a"{2,4}`, []string{"aa", "aaa", "aaaa"}, []string{"a", "aaaaa"}},
		{"open range", `root ::= "a"{2,}`, []string{"aa", "aaaaaaa"}, []string{"a", ""}},
		{"zero max", `root ::= "a"{0,0} "b"`, []string{"b"}, []string{"ab"}},
		{"group", `root ::= ("a" | "b" "c")+ "."`, []string{"a.", "bca.", "abcbc."}, []string{"b.", "."}},
		{"nested groups over lines", "root ::= (\n  \"a\"\n  | (\"b\" | \"c\")\n)*", []string{"", "abc", "cc"}, []string{"d"}},
		{"rule refs", "root ::= item (\",\" item)*\nitem ::= [a-z]+", []string{"a", "ab,c,de"}, []string{"a,", ",a", "A"}},
		{"escapes", `root ::= "\x41\u00e9\U0001F600\t\r\n\\\"\[\]"`, []string{"Aé😀\t\r\n\\\"[]"}, []string{"A"}},
		{"class escapes", `root ::= [\x00-\x1f\]\\-]`, []string{"\x00", "\x1f", "]", "\\", "-"}, []string{"a"}},
		{"comments", "# c\nroot ::= \"a\" # trailing\n# end", []string{"a"}, []string{""}},
		{"right recursion", "root ::= \"a\" root | \"b\"", []string{"b", "aaab"}, []string{"a", ""}},
		{"utf8 class", `root ::= [α-ω]+`, []string{"αβγ", "ω"}, []string{"a", "Α"}},
		{"ambiguous", `root ::= ("a" | "a" | "aa")* "b"`, []string{"b", "aaab"}, []string{"ba"}},
		{"redefined rule (last wins)", "root ::= x\nx ::= \"a\"\nx ::= \"b\"", []string{"b"}, []string{"a"}},
		{"dash in name", "root ::= my-rule\nmy-rule ::= \"z\"", []string{"z"}, []string{""}},
		{"star of something empty (llama.cpp accepts it)", `root ::= ("a" | "b"?)* "c"`, []string{"c", "abac", "bbc"}, []string{"", "ca"}},
		{"nullable middle", "root ::= \"a\" e \"b\"\ne ::= \"\" | \"x\"", []string{"ab", "axb"}, []string{"axxb"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g, err := ParseGBNF(tc.src, DefaultLimits())
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range tc.yes {
				if !accepts(t, g, s) {
					t.Errorf("%q rejected", s)
				}
			}
			for _, s := range tc.no {
				if accepts(t, g, s) {
					t.Errorf("%q accepted", s)
				}
			}
		})
	}
}

func TestGBNFErrors(t *testing.T) {
	var syn *SyntaxError
	var lim *LimitError
	var left *LeftRecursionError
	small := DefaultLimits()
	small.MaxRules = 20
	tests := []struct {
		name string
		src  string
		lim  Limits
		want any
	}{
		{"no root", `a ::= "x"`, DefaultLimits(), &syn},
		{"undefined", `root ::= b`, DefaultLimits(), &syn},
		{"no ::=", `root = "a"`, DefaultLimits(), &syn},
		{"open literal", `root ::= "a`, DefaultLimits(), &syn},
		{"open class", `root ::= [a`, DefaultLimits(), &syn},
		{"open group", `root ::= ("a"`, DefaultLimits(), &syn},
		{"bad escape", `root ::= "\q"`, DefaultLimits(), &syn},
		{"short hex", `root ::= "\x4"`, DefaultLimits(), &syn},
		{"beyond unicode", `root ::= "\U00110000"`, DefaultLimits(), &syn},
		{"bad repetition", `root ::= "a"{3,2}`, DefaultLimits(), &syn},
		{"repetition first", `root ::= *`, DefaultLimits(), &syn},
		{"token ref", `root ::= <[1000]>`, DefaultLimits(), &syn},
		{"newline outside group", "root ::= \"a\"\n| \"b\"", DefaultLimits(), &syn},
		{"left recursion", `root ::= root "a" | "b"`, DefaultLimits(), &left},
		{"indirect left recursion", "root ::= a\na ::= b \"x\"\nb ::= \"\" | root", DefaultLimits(), &left},
		{"left recursion through an empty rule", "root ::= e root \"x\" | \"y\"\ne ::= \"\" | \"z\"", DefaultLimits(), &left},
		{"no text", "root ::= a\na ::= \"x\" a", DefaultLimits(), new(*NoTextError)},
		{"huge repetition", `root ::= "a"{100000}`, DefaultLimits(), &lim},
		{"too many rules", `root ::= "a"{0,30}`, small, &lim},
		{"deep nesting", "root ::= " + repeat("(", 100) + `"a"` + repeat(")", 100), DefaultLimits(), &lim},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseGBNF(tc.src, tc.lim)
			if err == nil {
				t.Fatal("parsed")
			}
			if !errors.As(err, tc.want) {
				t.Fatalf("error %T %v", err, err)
			}
		})
	}
}

func repeat(s string, n int) string {
	out := ""
	for range n {
		out += s
	}
	return out
}
