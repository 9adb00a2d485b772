//go:build linux

package main

import (
	"reflect"
	"strings"
	"testing"
)

const sampleLog = `100 execve("./broker", ["broker"], 0x0 /* 3 vars */) = 0
100 clone(child_stack=NULL, flags=CLONE_VM|CLONE_FS|CLONE_FILES|CLONE_SIGHAND|CLONE_THREAD|CLONE_SYSVSEM|CLONE_SETTLS, tls=0x1) = 101
101 futex(0x1, FUTEX_WAIT_PRIVATE, 0, NULL <unfinished ...>
100 clone(child_stack=NULL, flags=CLONE_PIDFD|CLONE_NEWNS|CLONE_NEWUSER|SIGCHLD <unfinished ...>
101 <... futex resumed>) = 0
100 <... clone resumed>, parent_tid=0x2) = 200
200 execve("/proc/self/exe", ["x"], []) = 0
200 prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) = 0
200 clone(child_stack=NULL, flags=CLONE_VM|CLONE_FS|CLONE_FILES|CLONE_SIGHAND|CLONE_THREAD|CLONE_SYSVSEM|CLONE_SETTLS, tls=0x3) = 2
201 mmap(NULL, 4096, PROT_READ, MAP_SHARED, 4, 0) = 0x7f00
200 seccomp(SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, {len=60, filter=0x1}) = 0
201 fstat(4, {st_mode=S_IFREG|0444, st_size=1}) = 0
201 read(3,  <unfinished ...>
100 write(3, "x", 1) = 1
201 <... read resumed>"x", 16) = 1
200 seccomp(SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, {len=40, filter=0x2}) = 0
201 write(3, "y", 1) = 1
201 --- SIGURG {si_signo=SIGURG, si_code=SI_TKILL} ---
201 rt_sigreturn({mask=[]}) = 1
200 +++ exited with 0 +++
`

func TestParseTrace(t *testing.T) {
	for _, pid := range []int{200, 0} {
		tr, err := parseTrace(strings.NewReader(sampleLog), pid)
		if err != nil {
			t.Fatal(err)
		}
		want := [3]map[string]int{
			{"execve": 1, "prctl": 1, "clone": 1, "mmap": 1, "seccomp": 1},
			{"fstat": 1, "read": 1, "seccomp": 1},
			{"write": 1, "rt_sigreturn": 1},
		}
		for st := range want {
			if !reflect.DeepEqual(tr.calls[st], want[st]) {
				t.Errorf("pid %d, stage %d: got %v, want %v", pid, st, tr.calls[st], want[st])
			}
		}
		if !tr.broker[101] || tr.broker[200] || tr.broker[2] {
			t.Errorf("pid %d: broker threads %v", pid, tr.broker)
		}
	}
}
