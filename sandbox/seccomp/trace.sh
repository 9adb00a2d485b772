#!/usr/bin/env bash
# trace.sh derives the worker's seccomp allow-lists from real workloads.
#
# It builds sandbox/internal/tracework (a broker that starts a real,
# locked-down probe worker and drives it: the model parsed by package gguf,
# its tensor pages touched from 1–4 goroutines under GC pressure, IPC round
# trips), runs it under strace -f for each model and thread count, then
# the supervisor's sandboxed test (the real worker.Main over IPC: streaming,
# cancellation, a killed and restarted worker), and prints, per stage,
# every system call the worker made with its count and the rule that
# allows it; MISSING marks a call the lists lack, and "listed but not
# seen" the rules no workload used. Rerun it when Go, the kernel or the
# worker's code changes (in particular once the model's forward pass runs
# in the worker), and update lists.go. Needs strace and ../shared/models
# (or $LISA_SHARED).
#
# Usage: sandbox/seccomp/trace.sh [MODEL...]
set -euo pipefail
cd "$(dirname "$0")/../.."
command -v strace >/dev/null || { echo "trace.sh: strace is not installed (apt-get install strace)" >&2; exit 1; }
shared="${LISA_SHARED:-$(cd .. && pwd)/shared}"
models=("$@")
if [ ${#models[@]} -eq 0 ]; then
  models=("$shared/models/stories260K.gguf" "$shared/models/mini-24m-q4_k_m.gguf")
fi
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
CGO_ENABLED=0 go build -o "$tmp/tracework" ./sandbox/internal/tracework
status=0
for model in "${models[@]}"; do
  for threads in 1 4; do
    echo "== $(basename "$model"), $threads thread(s), $(go version | cut -d' ' -f3), kernel $(uname -r)"
    strace -f -qq -o "$tmp/strace.log" "$tmp/tracework" run -m "$model" -threads "$threads" -rounds 20 2>"$tmp/stderr" || {
      cat "$tmp/stderr" >&2; status=1; continue; }
    pid="$(awk '/^worker pid/{print $3}' "$tmp/stderr")"
    out="$("$tmp/tracework" lists -pid "$pid" "$tmp/strace.log")"
    echo "$out"
    if grep -q MISSING <<<"$out"; then status=1; fi
  done
done
if [ -d supervisor ]; then
  echo "== real worker over IPC: streaming, cancellation, restart (supervisor TestSandboxLauncher)"
  if CGO_ENABLED=0 go test -c -o "$tmp/supervisor.test" ./supervisor 2>"$tmp/stderr"; then
    (cd supervisor && strace -f -qq -o "$tmp/strace.log" "$tmp/supervisor.test" \
      -test.run '^TestSandboxLauncher$/^sandbox=true$' -test.count=1 >"$tmp/stderr" 2>&1) || { cat "$tmp/stderr" >&2; status=1; }
    out="$("$tmp/tracework" lists "$tmp/strace.log")"
    echo "$out"
    if grep -q MISSING <<<"$out"; then status=1; fi
  else
    echo "(supervisor does not build; skipped)"; cat "$tmp/stderr" >&2
  fi
fi
exit $status
