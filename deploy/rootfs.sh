#!/bin/sh
# Assemble the root filesystem of the scratch image (see ../Dockerfile) in a
# directory, so lisa can be run in it as UID 10001 without Docker.
#
#   deploy/rootfs.sh assemble DIR
#       DIR/lisa        the static binary (built here, or $LISA_BIN)
#       DIR/tmp         mode 1777, as the image has
#       DIR/models      where the model volume is mounted
#       DIR/proc DIR/dev  empty mount points the container runtime fills
#
# Running it: `docker run` pivots into such a root inside new mount and PID
# namespaces, mounts /proc, provides /dev/null and switches to the image's
# UID 10001. The test TestRootfsAsServiceUser (cmd/lisa/release_linux_test.go)
# does exactly that with this script's output (as root, `go test -run
# Rootfs ./cmd/lisa`) and runs lisa version, gguf inspect, serve and
# health in it. A plain chroot is not enough: the kernel refuses to create
# user namespaces for a chrooted process (EPERM), so the worker could not
# start.
#
# The image holds nothing else: no libc, no /etc, no /usr.
set -eu

usage() {
	echo "usage: $0 assemble DIR" >&2
	exit 2
}

[ $# -eq 2 ] || usage
cmd=$1 dir=$2

case $cmd in
assemble)
	repo=$(cd "$(dirname "$0")/.." && pwd)
	mkdir -p "$dir"
	if [ -n "${LISA_BIN:-}" ]; then
		cp "$LISA_BIN" "$dir/lisa"
	else
		(cd "$repo" && CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o "$dir/lisa" ./cmd/lisa)
	fi
	chmod 0755 "$dir" "$dir/lisa"
	mkdir -p "$dir/tmp" "$dir/models" "$dir/proc" "$dir/dev"
	chmod 1777 "$dir/tmp"
	chmod 0755 "$dir/models" "$dir/proc" "$dir/dev"
	;;
*)
	usage
	;;
esac
