#!/usr/bin/env bash
# Regenerates this folder: synthesizes each tiny family file with
# `lisa gguf synth` (seed 1), has llama.cpp (bench/llamacpp/ref.sh)
# evaluate it, and writes the MANIFEST that pins each file's SHA-256.
#
#   model/familyref/testdata/regen.sh    (from the repository root)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$root" && CGO_ENABLED=0 go build -o "$tmp/lisa" ./cmd/lisa)
rm -f "$here"/*.json
manifest=$here/MANIFEST
printf '# shape type seed sha256 reference (written by regen.sh)\n' > "$manifest"
entry() { # shape type reference
	echo "$1 $2 1 $(sha256sum "$tmp/$1-$2.gguf" | cut -d' ' -f1) $3" >> "$manifest"
}
for shape in llama3-tiny qwen2-tiny qwen2-tiny-yarn qwen2-tiny-odd qwen3-tiny granite-tiny mistral-tiny \
	gemma2-tiny gemma3-tiny phi3-tiny phi4mini-tiny mixtral-tiny qwen3moe-tiny gpt-oss-tiny; do
	for type in f16 q8_0 q4_k_m; do
		"$tmp/lisa" gguf synth --shape "$shape" --type "$type" --seed 1 -o "$tmp/$shape-$type.gguf" > /dev/null
		printf 'n_gen 16\nprompt Once upon a time, there was a little\nprompt The capital of France is\n' |
			"$root/bench/llamacpp/ref.sh" logits "$tmp/$shape-$type.gguf" - > "$here/$shape-$type.json"
		entry "$shape" "$type" "$shape-$type.json"
	done
done
# gpt-oss's own layout: llama-quantize's MXFP4_MOE (stacked experts MXFP4,
# every other matrix Q8_0), as the published gpt-oss files hold it.
"$tmp/lisa" gguf synth --shape gpt-oss-tiny --type mxfp4_moe --seed 1 -o "$tmp/gpt-oss-tiny-mxfp4_moe.gguf" > /dev/null
printf 'n_gen 16\nprompt Once upon a time, there was a little\nprompt The capital of France is\n' |
	"$root/bench/llamacpp/ref.sh" logits "$tmp/gpt-oss-tiny-mxfp4_moe.gguf" - > "$here/gpt-oss-tiny-mxfp4_moe.json"
entry gpt-oss-tiny mxfp4_moe gpt-oss-tiny-mxfp4_moe.json
# RoPE scaling far from position 0: 9000 teacher-forced ids, rows 8180-8200.
ids=$(awk 'BEGIN { for (i = 0; i < 9000; i++) printf "%s%d", (i ? "," : ""), (i * 7919) % 4000 + 10 }')
# phi3's LongRoPE: a context of 9216 > the original 4096 takes the long
# factors (the short prompts above, at n_ctx 512, the short ones).
for shape in llama3-tiny qwen2-tiny-yarn phi3-tiny phi4mini-tiny; do
	for type in f16 q8_0; do
		printf 'n_ctx 9216\ngen_batch 512\nprompt_ids 1\nteacher %s\nreport 8180-8200\n' "$ids" |
			"$root/bench/llamacpp/ref.sh" logits "$tmp/$shape-$type.gguf" - > "$here/$shape-$type-long.json"
		entry "$shape" "$type" "$shape-$type-long.json"
	done
done
# Sliding windows (16 positions in the tiny Gemma shapes, 32 in
# gpt-oss-tiny's): 600 ids prefilled in batches of 512, rows 500-520 far
# past every window (and past the tiled attention's first 256-key tile).
ids=$(awk 'BEGIN { for (i = 0; i < 600; i++) printf "%s%d", (i ? "," : ""), (i * 7919) % 4000 + 10 }')
for shape in gemma2-tiny gemma3-tiny gpt-oss-tiny; do
	types="f16 q8_0"
	[ "$shape" = gpt-oss-tiny ] && types="f16 q8_0 mxfp4_moe"
	for type in $types; do
		printf 'n_ctx 1024\ngen_batch 512\nprompt_ids 2\nteacher %s\nreport 500-520\n' "$ids" |
			"$root/bench/llamacpp/ref.sh" logits "$tmp/$shape-$type.gguf" - > "$here/$shape-$type-long.json"
		entry "$shape" "$type" "$shape-$type-long.json"
	done
done
# Chat prompts as llama-server renders them by default (the template's
# Jinja, a fixed clock), for each family's real template (Gemma 2's has no
# system role: llama-server merges the system text into the user turn).
for shape in llama3-tiny qwen2-tiny qwen3-tiny granite-tiny mistral-tiny gemma2-tiny gemma3-tiny phi3-tiny phi4mini-tiny \
	mixtral-tiny qwen3moe-tiny gpt-oss-tiny; do
	printf 'chat\nmsg system Be brief.\nmsg user Hi!\nmsg assistant Hello. How can I help?\nmsg user What is 2+2?\nchat\nmsg user Tell me a story about <s> tags and </s> tags.\n' |
		"$root/bench/llamacpp/ref.sh" chat-jinja "$tmp/$shape-f16.gguf" - > "$here/$shape.chat.json"
done
