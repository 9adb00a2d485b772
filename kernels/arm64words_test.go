package kernels

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestARM64Words checks every instruction the arm64 assembly spells as
// WORD (Go's assembler lacks the mnemonic) against GNU as: the comment
// beside each WORD is assembled and its encoding must be the WORD's. It
// runs on any host with Debian's binutils-aarch64-linux-gnu (.ci/run
// installs it); without it the test is skipped, and fails when CI is set.
func TestARM64Words(t *testing.T) {
	as, err := exec.LookPath("aarch64-linux-gnu-as")
	if err != nil {
		skipUnlessCI(t, "aarch64-linux-gnu-as not installed (Debian binutils-aarch64-linux-gnu): WORD encodings not cross-checked")
	}
	objdump, err := exec.LookPath("aarch64-linux-gnu-objdump")
	if err != nil {
		skipUnlessCI(t, "aarch64-linux-gnu-objdump not installed: WORD encodings not cross-checked")
	}
	files, err := filepath.Glob("*_arm64.s")
	if err != nil || len(files) == 0 {
		t.Fatalf("no arm64 assembly found: %v", err)
	}
	word := regexp.MustCompile(`WORD \$0x([0-9a-f]{8}) // (.+)$`)
	type insn struct {
		enc  uint32
		text string
	}
	seen := map[string]bool{}
	var all []insn
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			m := word.FindStringSubmatch(line)
			if m == nil || seen[m[0]] {
				continue
			}
			seen[m[0]] = true
			enc, err := strconv.ParseUint(m[1], 16, 32)
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, insn{uint32(enc), m[2]})
		}
	}
	if len(all) == 0 {
		t.Fatal("no WORD found in the arm64 assembly")
	}
	dir := t.TempDir()
	var src strings.Builder
	for _, in := range all {
		src.WriteString(in.text + "\n")
	}
	srcPath, obj := filepath.Join(dir, "w.s"), filepath.Join(dir, "w.o")
	if err := os.WriteFile(srcPath, []byte(src.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(as, "-march=armv8.6-a+dotprod+i8mm+fp16", "-o", obj, srcPath).CombinedOutput(); err != nil {
		t.Fatalf("assembling the WORD comments: %v\n%s", err, out)
	}
	out, err := exec.Command(objdump, "-d", obj).Output()
	if err != nil {
		t.Fatal(err)
	}
	// objdump lines: "   0:	4e829404 	sdot	v4.4s, v0.16b, v2.16b"
	var got []uint32
	sc := bufio.NewScanner(bytes.NewReader(out))
	code := regexp.MustCompile(`^\s*[0-9a-f]+:\s+([0-9a-f]{8})\s`)
	for sc.Scan() {
		if m := code.FindStringSubmatch(sc.Text()); m != nil {
			v, _ := strconv.ParseUint(m[1], 16, 32)
			got = append(got, uint32(v))
		}
	}
	if len(got) != len(all) {
		t.Fatalf("GNU as gave %d instructions for %d WORDs", len(got), len(all))
	}
	for i, in := range all {
		if got[i] != in.enc {
			t.Errorf("WORD $%#08x // %s: GNU as encodes it as %#08x", in.enc, in.text, got[i])
		}
	}
}

// skipUnlessCI skips t with why, or fails it when CI is set: CI installs
// the tools, so their absence there is a broken set-up, not a skip.
func skipUnlessCI(t *testing.T, why string) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatal(why)
	}
	t.Skip(why)
}
