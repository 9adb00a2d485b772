package hub

import "golang.org/x/sys/unix"

// freeBytes returns the bytes this user may still write on dir's file
// system, or -1 when that is unknown.
func freeBytes(dir string) int64 {
	var st unix.Statfs_t
	if unix.Statfs(dir, &st) != nil {
		return -1
	}
	bsize := int64(st.Bsize) // int32 on some architectures
	if bsize <= 0 {
		return -1
	}
	if uint64(st.Bavail) > uint64(1<<62/bsize) {
		return 1 << 62
	}
	return int64(st.Bavail) * bsize
}
