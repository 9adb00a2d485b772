package gcbound

import (
	"runtime"
	"runtime/debug"
	"testing"
)

// TestPercent: the growth lets about the given garbage gather, within
// its bounds.
func TestPercent(t *testing.T) {
	for _, tc := range []struct {
		garbage, live int64
		want          int
	}{
		{32 << 20, 0, 100},         // nothing live yet
		{32 << 20, 16 << 20, 100},  // a small heap keeps the default
		{32 << 20, 64 << 20, 50},   // half the live heap
		{32 << 20, 320 << 20, 10},  // a KV cache of hundreds of MiB
		{32 << 20, 8 << 30, 5},     // never below minPercent
		{32 << 20, 33 << 20, 96},   // rounded down
		{0, 100 << 20, minPercent}, // no garbage asked for
	} {
		if got := Percent(tc.garbage, tc.live); got != tc.want {
			t.Errorf("Percent(%d, %d) = %d, want %d", tc.garbage, tc.live, got, tc.want)
		}
	}
}

// TestSettle: with a large live heap the collector's growth is set
// below the default, so garbage of the live heap's size starts a
// collection; GOGC=off stays off.
func TestSettle(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	live := make([]float32, 64<<20) // 256 MiB that stays live
	got := Settle(Garbage)
	if got != debug.SetGCPercent(got) || got < minPercent || got > 20 {
		t.Errorf("Settle set %d%% over a 256 MiB heap, want about 6", got)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range 64 {
		sink = make([]byte, 1<<20) // 64 MiB of garbage, twice the bound
	}
	runtime.ReadMemStats(&after)
	if after.NumGC == before.NumGC {
		t.Errorf("64 MiB of garbage over a 256 MiB heap started no collection at %d%%", got)
	}
	runtime.KeepAlive(live)
	debug.SetGCPercent(-1)
	if got := Settle(Garbage); got != -1 || debug.SetGCPercent(-1) != -1 {
		t.Errorf("Settle under GOGC=off set %d", got)
	}
}

var sink []byte
