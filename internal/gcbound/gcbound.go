// Package gcbound bounds the garbage a long-lived inference process lets
// its heap gather, for the worker processes that serve or measure a model
// once it is loaded.
//
// Go's collector lets the heap grow to (1 + GOGC/100) times what was live
// after the last collection before it collects again: 100% by default.
// An inference worker's live heap is mostly its KV cache and batch
// scratch, hundreds of megabytes that never become garbage, so the
// default lets as much again of short-lived garbage (requests' text,
// sampler rows, grammar work) sit in memory before a collection: the
// worker's peak resident memory then exceeds model + cache + scratch by
// up to the size of the cache. Settle collects, returns what loading left
// free to the system, and sets the growth so that the garbage between two
// collections is about a fixed number of bytes instead. The collections
// this adds are cheap: the large buffers hold no pointers, so marking
// does not read them.
package gcbound

import (
	"runtime"
	"runtime/debug"
)

// Garbage is the garbage between two collections Settle aims for.
const Garbage = 16 << 20

// minPercent keeps collections from following each other for every few
// allocations when the live heap is very large.
const minPercent = 5

// Settle collects, returns the free heap memory to the system and sets
// the collector's growth (GOGC) so that about garbage bytes may gather
// between two collections, at most the default 100% and at least
// minPercent of the live heap. It returns the percentage set. A GOGC the
// environment set to "off" (-1) is left alone.
func Settle(garbage int64) int {
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return setPercent(garbage, int64(ms.HeapAlloc))
}

// setPercent sets the growth for garbage bytes over a live heap of live
// bytes and returns it.
func setPercent(garbage, live int64) int {
	p := Percent(garbage, live)
	if old := debug.SetGCPercent(p); old < 0 {
		debug.SetGCPercent(old)
		return old
	}
	return p
}

// Percent returns the growth percentage that lets about garbage bytes
// gather over a live heap of live bytes, between minPercent and 100.
func Percent(garbage, live int64) int {
	if live <= 0 {
		return 100
	}
	return int(min(max(garbage*100/live, minPercent), 100))
}
