// Package sandbox starts LiSa-Go's worker in a minimal Linux sandbox and,
// inside the worker, locks it down.
//
// Broker side: Start re-executes the running binary with --sandbox-worker
// in new user, mount, PID, network, IPC, UTS and cgroup namespaces (uid and
// gid 0 inside mapped to the broker's ids), with the IPC socket as fd 3,
// the verified model as fd 4 (a split model's further shards as fds 5, 6,
// …), an empty environment and, optionally, cgroup
// limits. Its stderr reaches the broker through a pipe whose tail is kept
// for the death line Exit.String gives.
//
// Worker side, in DESIGN.md §2 order and before a byte of the model is
// read: LockDown mounts a 16 KiB read-only tmpfs holding only the model
// (/model, and /model-2, /model-3, … for a split model's shards), pivots
// into it, checks each file's inode against its fd, closes every
// other file, sets rlimits, drops all capabilities, sets no_new_privs and
// not-dumpable, applies Landlock and installs seccomp stage 1. Once the
// model is loaded, EnterServing stacks seccomp stage 2.
//
// With Config.Enabled false the worker runs with no namespaces and no
// filters; Start and LockDown both report it loudly. There is no silent
// fallback: a sandbox that cannot be set up is an error.
//
// Every worker death becomes one line (Exit.String): the exit status or
// signal, "killed by seccomp (SIGSYS)" when the wait status says so (never
// because of what the worker wrote) and, when the broker may read the
// kernel's audit records (the audit multicast group, or the kernel log),
// the blocked call by name. In seccomp-log mode the calls off the
// allow-lists are named on the broker's log instead.
//
// Limits: RLIMIT_DATA and the Go memory limit (memory_limit_bytes),
// RLIMIT_AS (that plus the model and the runtime's reservations; shared
// mappings count there), RLIMIT_NPROC (the worker's threads, where the
// kernel enforces it: not for the host's root), and with a cgroup (Cgroup,
// or CgroupAuto when one can be made) memory, swap and pids limits. The
// broker's report has a "thread limit" layer and logs a warning when
// nothing bounds the worker's threads.
//
// Escape probes: ProbeWorker is a worker that locks down exactly as the
// serving worker does and then attempts one forbidden action (open a host
// file, create a socket, fork, exec, ptrace, kill the broker, raise a
// limit, map shared memory past the cap, a thread bomb, …), most of them
// under seccomp stage 2 and some earlier in the lock-down: before any
// seccomp filter, so Landlock, the new root and the namespaces are seen on
// their own, or under stage 1 alone. The probes ship in the lisa binary but
// are reachable only through `lisa sandbox-check` (which re-executes itself
// as a probe worker) and this package's tests, and they refuse to run
// outside a locked-down worker or in log mode. RunProbes runs each probe
// in a fresh worker, since a blocked probe usually dies by SIGSYS.
//
// The broker judges each probe from what the kernel says, not what the
// worker writes: a SIGSYS death counts only with the wait status saying
// SIGSYS and, where the kernel log is readable, only when the kernel's
// audit record names a call the probe makes (otherwise the verdict is
// marked unconfirmed); the memory probes are checked against the VmData
// the broker reads, the thread bomb against the thread count it watches.
package sandbox
