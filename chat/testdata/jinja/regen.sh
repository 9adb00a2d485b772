#!/usr/bin/env bash
# Regenerates the references of this folder: each template of each *.in
# file (a case per line: NAME, a tab, the template with llref's escapes
# \\ \n \t \xHH) rendered by llama.cpp's Jinja engine (bench/llamacpp/ref.sh
# chat-jinja, llama-server's default path) and by Jinja2 (python3 with
# jinja2, as Hugging Face renders chat templates: trim_blocks,
# lstrip_blocks, loop controls) for one user message "Hi" with
# add_generation_prompt, into the .json of the same name (reference.py).
# The model is a vocabulary-only file of ../shared (GPT-2's: its BOS and
# EOS are <|endoftext|>).
#
#   chat/testdata/jinja/regen.sh [FILE.in ...]   (from the repository root;
#                                                 default: every .in file)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
vocab=$root/../shared/ref/vocab/ggml-vocab-gpt-2.gguf
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [ $# -gt 0 ]; then
	files=("$@")
else
	files=("$here"/*.in)
fi
for in in "${files[@]}"; do
	rm -f "$tmp"/*
	n=0
	while IFS=$'\t' read -r name tmpl; do
		case "$name" in '' | '#'*) continue ;; esac
		n=$((n + 1))
		# llref-jinja exits 1 when the template does not parse: keep its message.
		if ! printf 'template %s\nadd_generation_prompt 1\nchat\nmsg user Hi\n' "$tmpl" |
			"$root/bench/llamacpp/ref.sh" chat-jinja "$vocab" - > "$tmp/$n.json" 2> "$tmp/$n.err"; then
			rm -f "$tmp/$n.json"
		fi
	done < "$in"
	python3 "$here/reference.py" "$in" "$tmp" > "${in%.in}.json"
done
