#!/bin/sh
# run.sh checks the official openai npm package against a real lisa serve
# with a small model from ../shared/models. Usage (from the repository):
#   tools/openai-check/run.sh [MODEL]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
model=${1:-$root/../shared/models/stories260K.gguf}
port=${LISA_PORT:-18080}
cd "$here"
[ -d node_modules/openai ] || npm ci --no-audit --no-fund
bin=$(mktemp -d)/lisa
(cd "$root" && CGO_ENABLED=0 go build -o "$bin" ./cmd/lisa)
"$bin" serve -m "$model" --listen "127.0.0.1:$port" &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -f "$bin"' EXIT INT TERM
for _ in $(seq 1 100); do
  node -e "fetch(process.argv[1]).then(r => process.exit(r.ok ? 0 : 1), () => process.exit(1))" \
    "http://127.0.0.1:$port/health" && break
  sleep 0.2
done
LISA_URL="http://127.0.0.1:$port/v1" node check.mjs
