// Package seccomp holds the worker's seccomp allow-lists as data, one table
// per architecture and stage, and compiles them into classic BPF programs
// for the kernel's seccomp filter mode.
//
// Stage 1 (loading) is installed before the model is read; stage 2
// (serving) is stacked on it once the model is loaded. The kernel runs
// every installed filter and applies the most restrictive verdict, so
// stage 2 narrows stage 1 and never widens it.
//
// A Rule names one system call, the action taken when it matches and,
// optionally, conditions on its arguments (all must hold). Consecutive
// rules for one call are alternatives, tried in order (mmap: private
// memory, or a read-only shared file). A call whose conditions fail in
// every alternative, or a call no rule names, gets the program's default
// action: kill the process, or log and allow it in diagnostic mode.
//
// Compile emits, per rule, a self-contained block: a comparison of the
// system call number that jumps over exactly the block when it does not
// match, the argument checks, the rule's action, and a return of the
// default action for failed checks. Nothing after a block depends on the
// accumulator a block left behind. The programs are tested in three tiers
// (golang.org/x/net/bpf's interpreter, the real kernel in a child process,
// and escape probes in a locked-down worker in package sandbox).
//
// The lists were derived from traces of real workloads with trace.sh;
// rerun it when Go, the kernel or the worker's code changes.
package seccomp
