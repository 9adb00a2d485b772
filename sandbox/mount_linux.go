package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// rootOptions makes the worker's root: 16 KiB and 16 inodes, enough for
// one mount point file.
const rootOptions = "size=16k,nr_inodes=16,mode=0700"

// mountPointCandidates are host directories the new root's tmpfs may be
// mounted on inside the worker's private mount namespace (the host never
// sees it). The first one that exists and does not hold the model wins.
func mountPointCandidates() []string {
	return []string{"/tmp", "/mnt", "/run", "/media", "/srv", "/opt", "/home", "/dev", "/proc"}
}

// pickMountPoint returns a directory to build the new root on that is not
// an ancestor of hostModel (mounting there would hide the model).
func pickMountPoint(hostModel string) (string, error) {
	for _, d := range mountPointCandidates() {
		if strings.HasPrefix(hostModel, d+"/") {
			continue
		}
		if st, err := os.Lstat(d); err == nil && st.IsDir() {
			return d, nil
		}
	}
	return "", fmt.Errorf("sandbox: no directory to mount the new root on (tried %v)", mountPointCandidates())
}

// buildRoot makes the worker's root a read-only tmpfs that holds only the
// model, bind-mounted by its host path read-only, nosuid, nodev, noexec,
// and detaches the host's root.
func buildRoot(hostModel string) error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("sandbox: make / private: %w", err)
	}
	dir, err := pickMountPoint(hostModel)
	if err != nil {
		return err
	}
	if err := unix.Mount("lisa-root", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, rootOptions); err != nil {
		return fmt.Errorf("sandbox: mount tmpfs on %s: %w", dir, err)
	}
	target := filepath.Join(dir, ModelPath)
	fd, err := unix.Open(target, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_CLOEXEC, 0o400)
	if err != nil {
		return fmt.Errorf("sandbox: create mount point %s: %w", target, err)
	}
	unix.Close(fd)
	if err := unix.Mount(hostModel, target, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("sandbox: bind model %s: %w", hostModel, err)
	}
	const locked = unix.MS_RDONLY | unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC
	if err := unix.Mount("", target, "", unix.MS_REMOUNT|unix.MS_BIND|locked, ""); err != nil {
		return fmt.Errorf("sandbox: remount model read-only: %w", err)
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

// checkModel opens the model inside the new root and refuses it unless it
// is the file the broker verified (fd 4): same device, same inode. The
// re-opened file replaces fd 4.
func checkModel() (*os.File, error) {
	fd, err := unix.Open(ModelPath, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		return nil, fmt.Errorf("sandbox: open %s in the new root: %w", ModelPath, err)
	}
	defer unix.Close(fd)
	var inRoot, verified unix.Stat_t
	if err := unix.Fstat(fd, &inRoot); err != nil {
		return nil, fmt.Errorf("sandbox: stat %s: %w", ModelPath, err)
	}
	if err := unix.Fstat(FDModel, &verified); err != nil {
		return nil, fmt.Errorf("sandbox: stat fd %d (the verified model): %w", FDModel, err)
	}
	if inRoot.Dev != verified.Dev || inRoot.Ino != verified.Ino {
		return nil, fmt.Errorf("%w: %s is device %d inode %d, the verified fd %d is device %d inode %d",
			ErrModelSwapped, ModelPath, inRoot.Dev, inRoot.Ino, FDModel, verified.Dev, verified.Ino)
	}
	if inRoot.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, fmt.Errorf("sandbox: %s is not a regular file (mode %#o)", ModelPath, inRoot.Mode)
	}
	if err := unix.Dup3(fd, FDModel, unix.O_CLOEXEC); err != nil {
		return nil, fmt.Errorf("sandbox: dup model to fd %d: %w", FDModel, err)
	}
	return os.NewFile(FDModel, ModelPath), nil
}

// checkRoot confirms the new root holds nothing but the model.
func checkRoot() error {
	ents, err := os.ReadDir("/")
	if err != nil {
		return fmt.Errorf("sandbox: list the new root: %w", err)
	}
	if len(ents) != 1 || "/"+ents[0].Name() != ModelPath {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		return fmt.Errorf("sandbox: the new root holds %v, want only %s", names, ModelPath)
	}
	return nil
}
