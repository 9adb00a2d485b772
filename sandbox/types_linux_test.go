package sandbox

import (
	"reflect"
	"strings"
	"syscall"
	"testing"
)

func TestWorkerFlagsRoundTrip(t *testing.T) {
	for _, cfg := range []Config{
		{Enabled: true, ModelPath: "/models/a b.gguf", MemoryLimit: 1 << 30, SeccompLog: true, Threads: 4, Args: []string{"x", "-y"}},
		{Enabled: false, ModelPath: "relative/ok-when-off.gguf"},
		{Enabled: true, ModelPath: "/m", Args: []string{"--", "-sandbox=false"}},
		{Enabled: true, ModelPath: "/m-00001-of-00003.gguf", ShardPaths: []string{"/m-00002-of-00003.gguf", "/a,b=c.gguf"}},
	} {
		wc, err := WorkerFlags(workerArgs(cfg))
		if err != nil {
			t.Fatalf("%+v: %v", cfg, err)
		}
		want := WorkerConfig{Enabled: cfg.Enabled, HostModelPath: cfg.ModelPath, MemoryLimit: cfg.MemoryLimit,
			SeccompLog: cfg.SeccompLog, Threads: cfg.Threads, HostShardPaths: cfg.ShardPaths, Args: cfg.Args}
		if len(want.Args) == 0 {
			want.Args = []string{}
		}
		if !reflect.DeepEqual(wc, want) {
			t.Errorf("round trip of %+v: got %+v, want %+v", cfg, wc, want)
		}
	}
}

func TestWorkerFlagsErrors(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{WorkerFlag, "-sandbox-model=rel"}, "-sandbox-model"},
		{[]string{"-sandbox-model=/m", "-sandbox-memory=-1"}, "-sandbox-memory"},
		{[]string{"-sandbox-model=/m", "-sandbox-threads=5000"}, "-sandbox-threads"},
		{[]string{"-sandbox-model=/m", "-unknown"}, "worker flags"},
		{[]string{"-sandbox-model=/m", "-sandbox-memory=zz"}, "worker flags"},
		{[]string{"-sandbox-model=/m", "-sandbox-shard=/s2", "-sandbox-shard=rel"}, "-sandbox-shard"},
		{append([]string{"-sandbox-model=/m"}, strings.Split(strings.Repeat("-sandbox-shard=/s ", MaxShards), " ")...), "more than 64 shards"},
	}
	for _, c := range cases {
		if _, err := WorkerFlags(c.args); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: got %v, want an error naming %q", c.args, err, c.want)
		}
	}
}

func TestExitString(t *testing.T) {
	cases := []struct {
		e    Exit
		want []string
	}{
		{Exit{Code: 0}, []string{"exited with status 0"}},
		{Exit{Code: 2, StderrTail: "goroutine 1\nfatal error: out of memory\nmore\n"}, []string{"status 2", `"fatal error: out of memory"`}},
		{Exit{Code: -1, Signal: syscall.SIGSYS, Seccomp: true}, []string{"killed by seccomp (SIGSYS)"}},
		{Exit{Code: -1, Signal: syscall.SIGKILL}, []string{"killed by signal 9 (killed)"}},
		{Exit{Code: -1, Seccomp: true, Syscall: "socket"}, []string{"killed by seccomp (SIGSYS): blocked system call socket"}},
		{Exit{Code: 1, StderrTail: strings.Repeat("x", 500)}, []string{"status 1", "…"}},
		{Exit{Err: syscall.ECHILD}, []string{"wait failed"}},
	}
	for _, c := range cases {
		s := c.e.String()
		for _, w := range c.want {
			if !strings.Contains(s, w) {
				t.Errorf("%+v: %q lacks %q", c.e, s, w)
			}
		}
		if strings.Contains(s, "\n") {
			t.Errorf("%+v: %q is not one line", c.e, s)
		}
	}
}

func TestReport(t *testing.T) {
	var r Report
	r.Add("a", true, true, "")
	r.Add("b", false, false, "")
	if !r.Complete() || len(r.Warnings()) != 0 {
		t.Errorf("complete report: %v %v", r.Complete(), r.Warnings())
	}
	r.Add("landlock", true, false, "ABI 0")
	r.Add(LayerSandbox, false, false, "off")
	if r.Complete() || len(r.Warnings()) != 2 {
		t.Errorf("incomplete report: %v %v", r.Complete(), r.Warnings())
	}
	if got := (Layer{Name: "landlock", Requested: true, Applied: true, Detail: "ABI 7"}).String(); got != "landlock: applied (ABI 7)" {
		t.Errorf("layer string %q", got)
	}
}

func TestTailWriter(t *testing.T) {
	var got strings.Builder
	tw := newTailWriter(&got)
	r, w := pipe(t)
	go tw.drain(r)
	long := strings.Repeat("y", 3*maxLineBytes)
	w.Write([]byte("first\n" + long + "\nlast\xff\n"))
	w.Close()
	tw.wait()
	tail := tw.String()
	if len(tail) > tailBytes || !strings.HasSuffix(tail, "last?\n") {
		t.Errorf("tail of %d bytes ends %q", len(tail), tail[max(0, len(tail)-10):])
	}
	if !strings.HasPrefix(got.String(), "first\n") || len(got.String()) != len("first\n")+len(long)+1+len("last\xff\n") {
		t.Errorf("forwarded %d bytes", len(got.String()))
	}
}
