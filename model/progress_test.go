package model

import (
	"testing"
	"time"

	"github.com/lisa-llm/lisa/gguf"
	"github.com/lisa-llm/lisa/internal/shared"
)

// collectProgress loads f and returns every progress report.
func collectProgress(t *testing.T, f *gguf.File) ([]LoadProgress, error) {
	t.Helper()
	var got []LoadProgress
	_, err := LoadWithProgress(f, func(p LoadProgress) { got = append(got, p) })
	return got, err
}

// checkMonotonic checks the reports only grow and end with every tensor.
func checkMonotonic(t *testing.T, got []LoadProgress, tensors int, bytes int64) {
	t.Helper()
	if len(got) != tensors {
		t.Fatalf("%d reports for %d tensors", len(got), tensors)
	}
	for i, p := range got {
		if p.Tensors != i+1 || p.TensorsTotal != tensors || p.BytesTotal != bytes {
			t.Fatalf("report %d: %+v (want %d of %d tensors, %d bytes in all)", i, p, i+1, tensors, bytes)
		}
		if i > 0 && (p.Bytes < got[i-1].Bytes || p.Elapsed < got[i-1].Elapsed) {
			t.Fatalf("report %d went backwards: %+v after %+v", i, p, got[i-1])
		}
		if p.Done() != (i == len(got)-1) {
			t.Fatalf("report %d: Done %v", i, p.Done())
		}
	}
	if last := got[len(got)-1]; last.Bytes != bytes {
		t.Fatalf("last report counts %d bytes, the file's tensors hold %d", last.Bytes, bytes)
	}
}

func tensorBytes(f *gguf.File) int64 {
	var n int64
	for i := range f.Tensors {
		n += f.Tensors[i].Size
	}
	return n
}

func TestLoadProgressSynthetic(t *testing.T) {
	for _, tied := range []bool{false, true} {
		sp := smallSpec
		sp.tied = tied
		f, err := gguf.ParseBytes(newSynth(t, sp).bytes(t), gguf.DefaultLimits())
		if err != nil {
			t.Fatal(err)
		}
		got, err := collectProgress(t, f)
		if err != nil {
			t.Fatalf("tied=%v: %v", tied, err)
		}
		// The tied embedding is bound twice but counted once.
		checkMonotonic(t, got, len(f.Tensors), tensorBytes(f))
	}
}

func TestLoadProgressStories(t *testing.T) {
	f, err := gguf.Open(shared.Path(t, "models/stories260K.gguf"), gguf.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := collectProgress(t, f)
	if err != nil {
		t.Fatal(err)
	}
	// 5 blocks of 9 tensors, token_embd, output_norm and output.
	if len(f.Tensors) != 48 {
		t.Fatalf("stories260K has %d tensors, want 48", len(f.Tensors))
	}
	checkMonotonic(t, got, len(f.Tensors), tensorBytes(f))
}

func TestLoadProgressStopsAtFailure(t *testing.T) {
	s := newSynth(t, smallSpec)
	s.dropTensor("blk.1.attn_k.weight")
	f, err := gguf.ParseBytes(s.bytes(t), gguf.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	got, err := collectProgress(t, f)
	if err == nil {
		t.Fatal("loaded without blk.1.attn_k.weight")
	}
	for _, p := range got {
		if p.Done() {
			t.Fatalf("a failed load reported completion: %+v", p)
		}
	}
}

func TestThrottle(t *testing.T) {
	var passed []int
	fn := Throttle(func(p LoadProgress) { passed = append(passed, p.Tensors) }, time.Second)
	at := []time.Duration{0, 300 * time.Millisecond, 999 * time.Millisecond, time.Second, 1500 * time.Millisecond,
		2100 * time.Millisecond, 2200 * time.Millisecond}
	for i, el := range at {
		fn(LoadProgress{Tensors: i + 1, TensorsTotal: len(at), Elapsed: el})
	}
	want := []int{4, 6, 7} // 1.0 s, 2.1 s (1.1 s after the last passed) and the final one
	if len(passed) != len(want) {
		t.Fatalf("passed %v, want %v", passed, want)
	}
	for i := range want {
		if passed[i] != want[i] {
			t.Fatalf("passed %v, want %v", passed, want)
		}
	}
}

func TestLoadProgressString(t *testing.T) {
	tests := []struct {
		p    LoadProgress
		want string
	}{
		{LoadProgress{Tensors: 12, TensorsTotal: 48, Bytes: 1536 * 1024, BytesTotal: 6 << 20, Elapsed: 812345 * time.Microsecond},
			"loading model: 12/48 tensors, 1.5 MiB of 6.0 MiB, 812ms"},
		{LoadProgress{Tensors: 48, TensorsTotal: 48, Bytes: 6 << 20, BytesTotal: 6 << 20, Elapsed: 1200 * time.Millisecond},
			"model loaded: 48 tensors, 6.0 MiB, 1.2s"},
		{LoadProgress{Tensors: 1, TensorsTotal: 1, Bytes: 512, BytesTotal: 512, Elapsed: 658321 * time.Nanosecond},
			"model loaded: 1 tensors, 512 B, 658µs"},
	}
	for _, tc := range tests {
		if got := tc.p.String(); got != tc.want {
			t.Errorf("got %q, want %q", got, tc.want)
		}
	}
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 1 << 30: "1.0 GiB", 4400 << 20: "4.3 GiB"} {
		if got := HumanBytes(n); got != want {
			t.Errorf("HumanBytes(%d) = %q, want %q", n, got, want)
		}
	}
}
