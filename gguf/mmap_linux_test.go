package gguf

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestMappedHugePageAdvice checks that a mapped model file carries the
// transparent-huge-page advice (the "hg" flag of its mapping in
// /proc/self/smaps), which lets the kernel map the page cache's 2 MiB
// folios whole (the check first makes sure no mapping of the file is
// there before Open).
func TestMappedHugePageAdvice(t *testing.T) {
	if _, err := os.Stat("/sys/kernel/mm/transparent_hugepage"); err != nil {
		t.Skip("kernel without transparent huge pages: the advice is refused")
	}
	if !adviceShows(t) {
		t.Skip("a mapping advised here directly shows no hg flag: this kernel, or an emulator such as qemu-user (which drops madvise), does not report the advice")
	}
	path := filepath.Join(t.TempDir(), "advised.gguf")
	if err := os.WriteFile(path, sampleFile(t, 64), 0o644); err != nil {
		t.Fatal(err)
	}
	if flags, found := mappingFlags(t, path); found {
		t.Fatalf("%s is mapped before it is opened (flags %q)", path, flags)
	}
	f, err := Open(path, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if !f.Mapped() {
		t.Skip("the file was not mapped")
	}
	flags, found := mappingFlags(t, path)
	if !found {
		t.Fatalf("no mapping of %s in /proc/self/smaps", path)
	}
	if !strings.Contains(" "+flags+" ", " hg ") {
		t.Errorf("mapping flags %q lack hg (MADV_HUGEPAGE)", flags)
	}
}

// adviceShows reports whether a file mapping that this test advises
// itself carries the hg flag: the control that tells a loader that gave
// no advice from a system that shows none.
func adviceShows(t *testing.T) bool {
	t.Helper()
	path := filepath.Join(t.TempDir(), "control")
	if err := os.WriteFile(path, make([]byte, 1<<16), 0o644); err != nil {
		t.Fatal(err)
	}
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	data, err := syscall.Mmap(int(fh.Fd()), 0, 1<<16, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Munmap(data)
	if err := syscall.Madvise(data, syscall.MADV_HUGEPAGE); err != nil {
		return false
	}
	flags, found := mappingFlags(t, path)
	return found && strings.Contains(" "+flags+" ", " hg ")
}

// mappingFlags returns the VmFlags of the mapping of path in
// /proc/self/smaps, and whether there is one.
func mappingFlags(t *testing.T, path string) (string, bool) {
	t.Helper()
	fh, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skipf("no smaps: %v", err)
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	in := false
	for sc.Scan() {
		line := sc.Text()
		fields := strings.Fields(line)
		if len(fields) >= 5 && strings.Contains(fields[0], "-") && !strings.HasSuffix(fields[0], ":") {
			// A mapping's header line: address range, perms, offset,
			// device, inode, then the path if any.
			in = len(fields) >= 6 && fields[len(fields)-1] == path
			continue
		}
		if in && strings.HasPrefix(line, "VmFlags:") {
			return strings.TrimSpace(strings.TrimPrefix(line, "VmFlags:")), true
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return "", false
}
