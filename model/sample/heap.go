package sample

import "slices"

// The helpers here keep the k best of a stream of items in a binary heap
// whose root is the worst item kept, so each later item is compared with
// the root only: O(n log k) whatever the input, with no allocation.

// siftDown restores the heap property below index i. before(a, b) reports
// whether a ranks ahead of b; the heap keeps the lowest-ranked at h[0].
func siftDown[T any](h []T, i int, before func(a, b T) bool) {
	n := len(h)
	for {
		worst := i
		l, r := 2*i+1, 2*i+2
		if l < n && before(h[worst], h[l]) {
			worst = l
		}
		if r < n && before(h[worst], h[r]) {
			worst = r
		}
		if worst == i {
			return
		}
		h[i], h[worst] = h[worst], h[i]
		i = worst
	}
}

// heapify arranges h so that h[0] is its lowest-ranked item.
func heapify[T any](h []T, before func(a, b T) bool) {
	for i := len(h)/2 - 1; i >= 0; i-- {
		siftDown(h, i, before)
	}
}

// keepTop moves the k best items of s into s[:k], sorted best first, and
// returns s[:k]. It returns all of s, sorted, when k >= len(s).
func keepTop[T any](s []T, k int, before func(a, b T) bool) []T {
	cmp := func(a, b T) int {
		switch {
		case before(a, b):
			return -1
		case before(b, a):
			return 1
		}
		return 0
	}
	if k >= len(s) {
		slices.SortFunc(s, cmp)
		return s
	}
	if k <= 0 {
		return s[:0]
	}
	h := s[:k]
	heapify(h, before)
	for i := k; i < len(s); i++ {
		if before(s[i], h[0]) {
			h[0], s[i] = s[i], h[0]
			siftDown(h, 0, before)
		}
	}
	slices.SortFunc(h, cmp)
	return h
}

// offer adds x to the heap h of at most k items when there is room or x
// ranks ahead of the worst kept, and returns the heap.
func offer[T any](h []T, k int, x T, before func(a, b T) bool) []T {
	if len(h) < k {
		h = append(h, x)
		// Sift the new item up towards the root while it ranks below its parent.
		i := len(h) - 1
		for i > 0 {
			p := (i - 1) / 2
			if !before(h[p], h[i]) {
				break
			}
			h[p], h[i] = h[i], h[p]
			i = p
		}
		return h
	}
	if k > 0 && before(x, h[0]) {
		h[0] = x
		siftDown(h, 0, before)
	}
	return h
}
