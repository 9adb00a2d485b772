#!/usr/bin/env bash
# Regenerates this folder: llama.cpp's renderings (bench/llamacpp/ref.sh
# chat-jinja, llama-server's default path) of the tool conversations in
# conversations.in, for the real tool-aware templates: each tiny family
# file `lisa gguf synth` makes carries its family's template (Llama 3.1,
# Qwen2.5, Qwen3, Mistral Nemo); Llama 3.2 and Hermes 3 are given as a
# template file to the Llama 3 file. hermes-3.jinja is llama.cpp's copy
# (models/templates/NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja).
# The conversations of reasoning.in (developer messages, reasoning in the
# history, Harmony tool use) go to gpt-oss's template (the published
# openai-gpt-oss-120b.jinja, given as a template file) and to Qwen3's.
# The requests of plain.in go to the families whose templates show no
# tools (Gemma 2, Gemma 3, Phi-3.5, Phi-4-mini, Mixtral: the templates
# their tiny files carry), into plain-FAMILY.json.
#
#   chat/testdata/tools/regen.sh    (from the repository root)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$root" && CGO_ENABLED=0 go build -o "$tmp/lisa" ./cmd/lisa)
for shape in llama3-tiny qwen2-tiny qwen3-tiny mistral-tiny gemma2-tiny gemma3-tiny phi3-tiny phi4mini-tiny mixtral-tiny; do
	"$tmp/lisa" gguf synth --shape "$shape" --type f16 --seed 1 -o "$tmp/$shape.gguf" > /dev/null
done
ref() { # model output [template file [conversations]]
	{
		if [ -n "${3:-}" ]; then echo "template_file $3"; fi
		cat "$here/${4:-conversations.in}"
	} | "$root/bench/llamacpp/ref.sh" chat-jinja "$tmp/$1.gguf" - > "$here/$2.json"
}
ref llama3-tiny llama-3.1
ref qwen2-tiny qwen2.5
ref qwen3-tiny qwen3
ref mistral-tiny mistral-nemo
ref llama3-tiny llama-3.2 "$root/model/synth/vocab/templates/llama-3.2.jinja"
ref llama3-tiny hermes-3 "$here/hermes-3.jinja"
ref qwen3-tiny gpt-oss "$root/model/synth/vocab/templates/gpt-oss.jinja" reasoning.in
ref qwen3-tiny qwen3-reasoning "" reasoning.in
ref gemma2-tiny plain-gemma-2 "" plain.in
ref gemma3-tiny plain-gemma-3 "" plain.in
ref phi3-tiny plain-phi-3.5 "" plain.in
ref phi4mini-tiny plain-phi-4-mini "" plain.in
ref mixtral-tiny plain-mixtral "" plain.in
