package sandbox

import (
	"bytes"
	"encoding/binary"
	"testing"

	"golang.org/x/sys/unix"
)

// nlmsg builds one netlink message of type typ around payload.
func nlmsg(typ uint16, payload string) []byte {
	n := unix.SizeofNlMsghdr + len(payload)
	b := make([]byte, (n+3)&^3)
	binary.NativeEndian.PutUint32(b[0:4], uint32(n))
	binary.NativeEndian.PutUint16(b[4:6], typ)
	copy(b[unix.SizeofNlMsghdr:], payload)
	return b
}

func TestNetlinkRecords(t *testing.T) {
	rec := "audit(1.2:3): auid=4294967295 uid=0 pid=77 comm=\"x\" sig=31 arch=c000003e syscall=41 compat=0 ip=0x1 code=0x80000000"
	cases := []struct {
		name string
		in   []byte
		want int
	}{
		{"one record", nlmsg(auditRecordType, rec), 1},
		{"two, one other type", append(nlmsg(1300, "audit(1.2:3): syscall=1"), nlmsg(auditRecordType, rec)...), 1},
		{"odd length padded", append(nlmsg(auditRecordType, rec+"z"), nlmsg(auditRecordType, rec)...), 2},
		{"length past the end", nlmsg(auditRecordType, rec)[:20], 0},
		{"short", []byte{1, 2, 3}, 0},
		{"zero length", make([]byte, 32), 0},
	}
	for _, c := range cases {
		got := netlinkRecords(c.in)
		if len(got) != c.want {
			t.Errorf("%s: %d records, want %d", c.name, len(got), c.want)
		}
		for _, g := range got {
			if !bytes.HasPrefix(g, []byte(seccompAudit+" audit(")) {
				t.Errorf("%s: record %q", c.name, g)
			}
		}
	}
	// The record feeds the watch as a kernel log line would.
	var named []string
	w := &kmsgWatch{pid: " pid=77 ", log: func(s string) { named = append(named, s) }, logged: map[string]bool{}}
	for _, r := range netlinkRecords(nlmsg(auditRecordType, rec)) {
		w.record(r)
	}
	if w.killed != syscallName(41) {
		t.Errorf("killed call %q, want %q", w.killed, syscallName(41))
	}
}

// FuzzNetlinkRecords: any datagram splits without panic into records
// that lie within it.
func FuzzNetlinkRecords(f *testing.F) {
	f.Add(nlmsg(auditRecordType, "audit(1.2:3): pid=1 syscall=41 code=0x80000000"))
	f.Add(append(nlmsg(1300, "x"), nlmsg(auditRecordType, "y")...))
	f.Add([]byte{255, 255, 255, 255, 0x2e, 5})
	f.Fuzz(func(t *testing.T, b []byte) {
		total := 0
		for _, r := range netlinkRecords(b) {
			total += len(r) - len(seccompAudit) - 2
		}
		if total > len(b) {
			t.Fatalf("records of %d bytes from a datagram of %d", total, len(b))
		}
	})
}
