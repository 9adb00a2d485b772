#!/usr/bin/env bash
# Regenerates this folder: synthesizes each source file with
# `lisa gguf synth --type f16 --seed 1`, quantizes it as llama-quantize
# does (bench/llamacpp/quant.sh), has llama.cpp evaluate the result
# (bench/llamacpp/ref.sh) and writes the gzip'ed files and the MANIFEST
# that pins each file's SHA-256 and the tensor types it must hold.
#
#   model/quantref/testdata/regen.sh    (from the repository root)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$root" && CGO_ENABLED=0 go build -o "$tmp/lisa" ./cmd/lisa)
rm -f "$here"/*.json "$here"/*.gguf.gz
manifest=$here/MANIFEST
printf '# shape ftype sha256 holds reference (written by regen.sh)\n' > "$manifest"
# quantize SHAPE FTYPE HOLDS: HOLDS are the types (ggml's names, upper case as lisa prints them) the file
# must contain, what llama-quantize picks for this file type (and, for
# widths that are not multiples of 256, its fallbacks).
quantize() {
	local src=$tmp/$1-f16.gguf lower
	lower=$(echo "$2" | tr 'A-Z' 'a-z')
	local out=$tmp/$1-$lower.gguf
	[ -e "$src" ] || "$tmp/lisa" gguf synth --shape "$1" --type f16 --seed 1 -o "$src" > /dev/null
	"$root/bench/llamacpp/quant.sh" "$src" "$out" "$2" > /dev/null 2>&1
	printf 'n_gen 16\nprompt Once upon a time, there was a little\nprompt The capital of France is\n' |
		"$root/bench/llamacpp/ref.sh" logits "$out" - > "$here/$1-$lower.json"
	gzip -9n < "$out" > "$here/$1-$lower.gguf.gz"
	echo "$1 $lower $(sha256sum "$out" | cut -d' ' -f1) $3 $1-$lower.json" >> "$manifest"
}
quantize llama2-quant Q8_0 Q8_0
quantize llama2-quant Q6_K Q6_K
quantize llama2-quant Q5_K_M Q5_K,Q6_K
quantize llama2-quant Q5_K_S Q5_K,Q6_K
quantize llama2-quant Q5_0 Q5_0,Q6_K
quantize llama2-quant Q5_1 Q5_1,Q6_K
quantize llama2-quant Q4_K_M Q4_K,Q6_K
quantize llama2-quant Q4_K_S Q4_K,Q6_K
quantize llama2-quant Q4_0 Q4_0,Q6_K
quantize llama2-quant Q4_1 Q4_1,Q6_K
quantize llama2-quant IQ4_XS IQ4_XS,Q6_K
quantize llama2-quant IQ4_NL IQ4_NL,Q6_K
quantize llama2-quant Q3_K_M Q3_K,Q4_K,Q5_K,Q6_K
quantize llama2-quant Q3_K_L Q3_K,Q5_K,Q6_K
quantize llama2-quant Q2_K Q2_K,Q3_K,Q6_K
quantize smollm2-quant Q4_K_M Q5_0,Q8_0,Q6_K
quantize qwen2-odd-quant Q4_K_M Q5_0,Q8_0,Q6_K
# synthesize SHAPE FTYPE HOLDS: a file type llama-quantize cannot write
# (lisa's own quantizer, byte-equal to ggml's quantize_row_*_ref), which
# llama.cpp then evaluates: MXFP4 in every matrix of a dense model.
synthesize() {
	local out=$tmp/$1-$2.gguf
	"$tmp/lisa" gguf synth --shape "$1" --type "$2" --seed 1 -o "$out" > /dev/null
	printf 'n_gen 16\nprompt Once upon a time, there was a little\nprompt The capital of France is\n' |
		"$root/bench/llamacpp/ref.sh" logits "$out" - > "$here/$1-$2.json"
	gzip -9n < "$out" > "$here/$1-$2.gguf.gz"
	echo "$1 $2 $(sha256sum "$out" | cut -d' ' -f1) $3 $1-$2.json" >> "$manifest"
}
synthesize llama2-quant mxfp4 MXFP4
