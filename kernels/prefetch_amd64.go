//go:build amd64 && !purego

package kernels

// prefetchT0 asks for the cache lines at p, p+stride, ... below p+n to be
// brought to every cache level, without waiting; stride is positive.
//
//go:noescape
func prefetchT0(p *byte, n, stride int)

// prefetch asks for b's cache lines every stride bytes ahead of their
// use: a hint, which changes no result.
func prefetch(b []byte, stride int) {
	if len(b) > 0 {
		prefetchT0(&b[0], len(b), stride)
	}
}
