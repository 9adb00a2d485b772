package sandbox

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// seccompAudit is the audit record type of a seccomp action (AUDIT_SECCOMP).
const seccompAudit = "type=1326"

// maxLoggedCalls bounds the distinct calls a log-mode worker gets lines for.
const maxLoggedCalls = 64

// kmsgWatch follows the kernel's seccomp audit records of one worker, so
// a death by seccomp can name the call, and a log-mode worker's unlisted
// calls are named on the broker's log. It reads the audit multicast group
// when it may (CAP_AUDIT_READ: every record, none rate-limited), otherwise
// the kernel log, where without auditd the kernel passes at most 10
// records per 5 s (printk_ratelimit) and which is readable only with
// privilege (dmesg_restrict); without either the watch is off and deaths
// are reported without the call's name.
type kmsgWatch struct {
	f       *os.File
	netlink bool // f is an audit netlink socket, not /dev/kmsg
	pid     string
	log     func(string)
	mu      sync.Mutex
	killed  string
	logged  map[string]bool
	done    chan struct{}
}

// watchKmsg starts watching for records of pid; nil when /dev/kmsg cannot
// be read.
func watchKmsg(pid int, log func(string)) *kmsgWatch {
	if f := auditMulticast(); f != nil {
		w := &kmsgWatch{f: f, netlink: true, pid: " pid=" + strconv.Itoa(pid) + " ",
			log: log, logged: map[string]bool{}, done: make(chan struct{})}
		go w.run()
		return w
	}
	fd, err := unix.Open("/dev/kmsg", unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	if _, err := unix.Seek(fd, 0, io.SeekEnd); err != nil {
		unix.Close(fd)
		return nil
	}
	w := &kmsgWatch{f: os.NewFile(uintptr(fd), "/dev/kmsg"), pid: " pid=" + strconv.Itoa(pid) + " ",
		log: log, logged: map[string]bool{}, done: make(chan struct{})}
	go w.run()
	return w
}

func (w *kmsgWatch) run() {
	defer close(w.done)
	buf := make([]byte, 8192) // one record per read
	for {
		n, err := w.f.Read(buf)
		if errors.Is(err, unix.EPIPE) {
			continue // records were overwritten before we read them; go on
		}
		if errors.Is(err, unix.ENOBUFS) {
			continue // the socket overflowed; records were lost, go on
		}
		if err != nil {
			return // the deadline set by stop, or the log is unreadable
		}
		if !w.netlink {
			w.record(buf[:n])
			continue
		}
		for _, m := range netlinkRecords(buf[:n]) {
			w.record(m)
		}
	}
}

// auditRecordType is AUDIT_SECCOMP as a netlink message type.
const auditRecordType = 1326

// auditMulticast joins the audit log's multicast group (AUDIT_NLGRP_READLOG),
// which needs CAP_AUDIT_READ; nil when it cannot.
func auditMulticast() *os.File {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, unix.NETLINK_AUDIT)
	if err != nil {
		return nil
	}
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK, Groups: 1}); err != nil {
		unix.Close(fd)
		return nil
	}
	return os.NewFile(uintptr(fd), "audit-netlink")
}

// netlinkRecords splits a netlink datagram into its seccomp audit records,
// each rendered as a kernel log line would be ("type=1326 audit(…): …").
// The kernel writes them; a malformed length ends the datagram.
func netlinkRecords(b []byte) [][]byte {
	var out [][]byte
	for len(b) >= unix.SizeofNlMsghdr {
		n := int(binary.NativeEndian.Uint32(b[0:4]))
		typ := binary.NativeEndian.Uint16(b[4:6])
		if n < unix.SizeofNlMsghdr || n > len(b) {
			break
		}
		if typ == auditRecordType {
			rec := append([]byte(seccompAudit+" "), bytes.TrimRight(b[unix.SizeofNlMsghdr:n], "\x00")...)
			out = append(out, append(rec, ' '))
		}
		n = (n + 3) &^ 3 // NLMSG_ALIGN
		if n > len(b) {
			break
		}
		b = b[n:]
	}
	return out
}

// record handles one kernel log record.
func (w *kmsgWatch) record(rec []byte) {
	if !bytes.Contains(rec, []byte(seccompAudit)) || !bytes.Contains(rec, []byte(w.pid)) {
		return
	}
	nr, ok := field(rec, "syscall=")
	code, ok2 := field(rec, "code=")
	if !ok || !ok2 {
		return
	}
	n, err := strconv.Atoi(nr)
	if err != nil {
		return
	}
	name := syscallName(n)
	w.mu.Lock()
	defer w.mu.Unlock()
	switch code {
	case "0x80000000", "0x0": // kill process, kill thread
		w.killed = name
	case "0x7ffc0000": // log
		if !w.logged[name] && len(w.logged) < maxLoggedCalls {
			w.logged[name] = true
			w.log("sandbox: seccomp log mode: worker made system call " + name +
				" (not on the allow-list; logged, NOT blocked)\n")
		}
	}
}

// field returns the value of key in an audit record ("key=value ").
func field(rec []byte, key string) (string, bool) {
	i := bytes.Index(rec, []byte(" "+key))
	if i < 0 {
		return "", false
	}
	v := rec[i+1+len(key):]
	sc := bufio.NewScanner(bytes.NewReader(v))
	sc.Split(bufio.ScanWords)
	if !sc.Scan() {
		return "", false
	}
	return sc.Text(), true
}

// stop reads what is left of the log and returns the killed call's name,
// if any. The record of a kill is made before the process dies but may be
// delivered after its wait status (the kernel's audit thread sends it):
// with killed true (the wait status said SIGSYS) stop waits for it, up to
// killRecordWait from the audit group, which gets every record, and
// 100 ms from the kernel log, which may have dropped it.
func (w *kmsgWatch) stop(killed bool) string {
	if w == nil {
		return ""
	}
	if killed {
		wait := killRecordWait
		if !w.netlink {
			wait = 100 * time.Millisecond
		}
		for end := time.Now().Add(wait); time.Now().Before(end) && w.killedCall() == ""; {
			time.Sleep(2 * time.Millisecond)
		}
	}
	w.f.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	<-w.done
	w.f.Close()
	return w.killedCall()
}

// killRecordWait bounds the wait for the audit record of a seccomp kill.
const killRecordWait = time.Second

func (w *kmsgWatch) killedCall() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.killed
}
