#!/usr/bin/env bash
# Brings up upstream llama.cpp's llama-server on loopback for the real-server
# tests and prints its base URL on stdout (everything else goes to stderr).
#
# The server is built from the llama.cpp source that the npm package
# node-llama-cpp@3.21.1 ships (a git bundle inside its tarball), server
# target only; the model is the project's own generated GGUF
# (cmd/testmodel). Both are cached outside the checkout, in
# $AIPERF_LLAMA_CACHE (default ~/.cache/aiperf-action/llama), so a warm
# machine starts in about a second.
#
#   .ci/llama-server.sh [start|stop|model]      LLAMA_PORT (8089), LLAMA_MODEL_SIZE (small|medium), LLAMA_SLOTS (4)
set -euo pipefail
cd "$(dirname "$0")/.."
cache=${AIPERF_LLAMA_CACHE:-$HOME/.cache/aiperf-action/llama}
port=${LLAMA_PORT:-8089}
size=${LLAMA_MODEL_SIZE:-small}
slots=${LLAMA_SLOTS:-4}
bin=$cache/llama-server
# The model is named by the generator's source and its vocabulary's words, so a change to either makes a new one.
model=$cache/model-$size-$(cat internal/testmodel/*.go cmd/testmodel/*.go internal/tokenizer/words.txt | sha256sum | cut -c1-12).gguf
pidfile=$cache/server-$port.pid
log() { echo "llama-server.sh: $*" >&2; }

if [ "${1:-start}" = model ]; then
  echo "$model"
  exit 0
fi
if [ "${1:-start}" = stop ]; then
  [ -f "$pidfile" ] && kill "$(cat "$pidfile")" 2>/dev/null || true
  rm -f "$pidfile"
  exit 0
fi

mkdir -p "$cache"
if [ ! -x "$bin" ]; then
  start=$(date +%s)
  if ! command -v cmake >/dev/null; then
    log "installing cmake"
    apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq cmake >&2
  fi
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  log "fetching the llama.cpp source from node-llama-cpp@3.21.1"
  (cd "$work" && npm pack --silent node-llama-cpp@3.21.1 >/dev/null && tar xzf node-llama-cpp-3.21.1.tgz package/llama/gitRelease.bundle \
    && git clone -q package/llama/gitRelease.bundle src) >&2
  log "building llama-server (about 4-5 minutes on 2 cores)"
  cmake -S "$work/src" -B "$work/build" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_SERVER=ON \
    -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF -DGGML_NATIVE=ON >&2
  cmake --build "$work/build" --target llama-server -j2 >&2
  cp "$work/build/bin/llama-server" "$bin.tmp" && mv "$bin.tmp" "$bin"
  log "built in $(( $(date +%s) - start )) s"
fi
if [ ! -f "$model" ]; then
  go run ./cmd/testmodel -o "$model" -size "$size" >&2
fi
[ -f "$pidfile" ] && kill "$(cat "$pidfile")" 2>/dev/null || true
t0=$(date +%s%N)
"$bin" -m "$model" --host 127.0.0.1 --port "$port" -t 1 -tb 1 -np "$slots" -c 8192 --no-webui --metrics \
  --alias testmodel >"$cache/server-$port.log" 2>&1 &
echo $! >"$pidfile"
for _ in $(seq 1 300); do
  if curl -fsS "http://127.0.0.1:$port/health" >/dev/null 2>&1; then
    log "ready in $(( ($(date +%s%N) - t0) / 1000000 )) ms (log: $cache/server-$port.log)"
    echo "http://127.0.0.1:$port"
    exit 0
  fi
  if ! kill -0 "$(cat "$pidfile")" 2>/dev/null; then
    log "the server exited; its log:"; tail -n 40 "$cache/server-$port.log" >&2; exit 1
  fi
  sleep 0.1
done
log "not ready after 30 s; its log:"; tail -n 40 "$cache/server-$port.log" >&2
exit 1
