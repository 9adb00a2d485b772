#!/usr/bin/env bash
# Regenerates the llama.cpp references of this folder: model outputs
# (reasoning.in for gpt-oss's Harmony template, think.in for Qwen3's) parsed
# as llama-server parses a reply (bench/llamacpp/ref.sh chat-jinja, output
# directives), with its default reasoning format (deepseek) and with none.
# The template only decides the parser: the Qwen3 tiny file serves both.
#
#   toolcall/testdata/regen.sh    (from the repository root)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$root" && CGO_ENABLED=0 go build -o "$tmp/lisa" ./cmd/lisa)
"$tmp/lisa" gguf synth --shape qwen3-tiny --type f16 --seed 1 -o "$tmp/qwen3-tiny.gguf" > /dev/null
ref() { # output input reasoning-format [template file]
	{
		echo "reasoning_format $3"
		if [ -n "${4:-}" ]; then echo "template_file $4"; fi
		cat "$here/$2"
	} | "$root/bench/llamacpp/ref.sh" chat-jinja "$tmp/qwen3-tiny.gguf" - > "$here/$1.json"
}
oss=$root/model/synth/vocab/templates/gpt-oss.jinja
ref gpt-oss-parse reasoning.in deepseek "$oss"
ref gpt-oss-parse-none reasoning.in none "$oss"
ref qwen3-parse think.in deepseek
ref qwen3-parse-none think.in none
