package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// rootOptions makes the worker's root: 16 KiB and 80 inodes, enough for
// a mount point file per shard of a model split in MaxShards (empty
// files take no blocks).
const rootOptions = "size=16k,nr_inodes=80,mode=0700"

// mountPointCandidates are host directories the new root's tmpfs may be
// mounted on inside the worker's private mount namespace (the host never
// sees it). The first one that exists and does not hold the model wins.
func mountPointCandidates() []string {
	return []string{"/tmp", "/mnt", "/run", "/media", "/srv", "/opt", "/home", "/dev", "/proc"}
}

// pickMountPoint returns a directory to build the new root on that is not
// an ancestor of any of hostModels (mounting there would hide a model
// file).
func pickMountPoint(hostModels []string) (string, error) {
next:
	for _, d := range mountPointCandidates() {
		for _, m := range hostModels {
			if strings.HasPrefix(m, d+"/") {
				continue next
			}
		}
		if st, err := os.Lstat(d); err == nil && st.IsDir() {
			return d, nil
		}
	}
	return "", fmt.Errorf("sandbox: no directory to mount the new root on (tried %v)", mountPointCandidates())
}

// buildRoot makes the worker's root a read-only tmpfs that holds only the
// model's files (hostModels[i], the model's shard i+1, at ShardPath(i+1)),
// each bind-mounted by its host path read-only, nosuid, nodev, noexec, and
// detaches the host's root.
func buildRoot(hostModels []string) error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("sandbox: make / private: %w", err)
	}
	dir, err := pickMountPoint(hostModels)
	if err != nil {
		return err
	}
	if err := unix.Mount("lisa-root", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, rootOptions); err != nil {
		return fmt.Errorf("sandbox: mount tmpfs on %s: %w", dir, err)
	}
	const locked = unix.MS_RDONLY | unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC
	for i, host := range hostModels {
		target := filepath.Join(dir, ShardPath(i+1))
		fd, err := unix.Open(target, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_CLOEXEC, 0o400)
		if err != nil {
			return fmt.Errorf("sandbox: create mount point %s: %w", target, err)
		}
		unix.Close(fd)
		if err := unix.Mount(host, target, "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("sandbox: bind model %s: %w", host, err)
		}
		if err := unix.Mount("", target, "", unix.MS_REMOUNT|unix.MS_BIND|locked, ""); err != nil {
			return fmt.Errorf("sandbox: remount model %s read-only: %w", host, err)
		}
	}
	if err := unix.Chdir(dir); err != nil {
		return fmt.Errorf("sandbox: chdir %s: %w", dir, err)
	}
	if err := unix.PivotRoot(".", "."); err != nil {
		return fmt.Errorf("sandbox: pivot_root: %w", err)
	}
	if err := unix.Unmount(".", unix.MNT_DETACH); err != nil {
		return fmt.Errorf("sandbox: detach old root: %w", err)
	}
	if err := unix.Chdir("/"); err != nil {
		return fmt.Errorf("sandbox: chdir /: %w", err)
	}
	if err := unix.Mount("", "/", "", unix.MS_REMOUNT|locked, rootOptions); err != nil {
		return fmt.Errorf("sandbox: remount root read-only: %w", err)
	}
	return nil
}

// checkModel opens the model's shard no (1-based) inside the new root
// and refuses it unless it is the file the broker verified (fd
// FDModel+no-1): same device, same inode. The re-opened file replaces
// that fd.
func checkModel(no int) (*os.File, error) {
	path, want := ShardPath(no), FDModel+no-1
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		return nil, fmt.Errorf("sandbox: open %s in the new root: %w", path, err)
	}
	defer unix.Close(fd)
	var inRoot, verified unix.Stat_t
	if err := unix.Fstat(fd, &inRoot); err != nil {
		return nil, fmt.Errorf("sandbox: stat %s: %w", path, err)
	}
	if err := unix.Fstat(want, &verified); err != nil {
		return nil, fmt.Errorf("sandbox: stat fd %d (the verified model): %w", want, err)
	}
	if inRoot.Dev != verified.Dev || inRoot.Ino != verified.Ino {
		return nil, fmt.Errorf("%w: %s is device %d inode %d, the verified fd %d is device %d inode %d",
			ErrModelSwapped, path, inRoot.Dev, inRoot.Ino, want, verified.Dev, verified.Ino)
	}
	if inRoot.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, fmt.Errorf("sandbox: %s is not a regular file (mode %#o)", path, inRoot.Mode)
	}
	if err := unix.Dup3(fd, want, unix.O_CLOEXEC); err != nil {
		return nil, fmt.Errorf("sandbox: dup model to fd %d: %w", want, err)
	}
	return os.NewFile(uintptr(want), path), nil
}

// checkRoot confirms the new root holds nothing but the model's n files.
func checkRoot(n int) error {
	ents, err := os.ReadDir("/")
	if err != nil {
		return fmt.Errorf("sandbox: list the new root: %w", err)
	}
	want := map[string]bool{}
	for i := 1; i <= n; i++ {
		want[ShardPath(i)] = true
	}
	ok := len(ents) == n
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
		ok = ok && want["/"+e.Name()]
	}
	if !ok {
		var w []string
		for i := 1; i <= n; i++ {
			w = append(w, ShardPath(i))
		}
		return fmt.Errorf("sandbox: the new root holds %v, want only %v", names, w)
	}
	return nil
}
