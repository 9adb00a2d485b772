#!/usr/bin/env bash
# Writes every small test shape of `lisa gguf synth` at f16, q8_0 and
# q4_k_m and loads each with a prebuilt llama.cpp (the one
# bench/llamacpp/run.sh installs), printing one JSON line per file: what
# llama.cpp read (vocabulary, special ids, chat rendering, prompt ids, the
# greedy next token). Fails when llama.cpp refuses a file. Optional: needs
# cc and the library (LLAMACPP_DIR, default ~/.cache/lisa-llamacpp).
#
#   model/synth/testdata/llcheck/check.sh [SHAPE...] > model/synth/testdata/llcheck/reference.jsonl
#
# reference.jsonl, written so with no SHAPE, is what llcheck_test.go
# compares package tokenizer and the files against.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../../.." && pwd)
dir=${LLAMACPP_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/lisa-llamacpp}
lib=$dir/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64
if [ ! -e "$lib/libllama.v0.5.0.so" ]; then
	echo "llcheck: no llama.cpp library in $lib (run bench/llamacpp/run.sh once)" >&2
	exit 2
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cc -O1 -o "$work/llcheck" "$here/llcheck.c" -L"$lib" -l:libllama.v0.5.0.so \
	-l:libggml.v0.5.0.so -l:libggml-base.so -lm -Wl,-rpath,"$lib"
(cd "$root" && CGO_ENABLED=0 go build -o "$work/lisa" ./cmd/lisa)
shapes=("$@")
if [ ${#shapes[@]} -eq 0 ]; then
	shapes=(llama3-tiny mistral-tiny qwen2-tiny qwen2-tiny-yarn qwen2-tiny-odd qwen3-tiny granite-tiny)
fi
files=()
for s in "${shapes[@]}"; do
	for t in f16 q8_0 q4_k_m; do
		"$work/lisa" gguf synth --shape "$s" --type "$t" -o "$work/$s-$t.gguf" >/dev/null
		files+=("$work/$s-$t.gguf")
	done
done
"$work/llcheck" "$lib" "${files[@]}" 2> >(grep -E "^llcheck|error|failed" >&2) | sed "s|$work/||"
