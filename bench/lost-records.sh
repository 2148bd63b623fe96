#!/usr/bin/env bash
# Runs the two open-loop commands that once lost records, N times each, with
# two CPU hogs (`yes`, killed at the end) sharing the machine, and counts
# the runs that lost any record or failed.
#
#   bench/lost-records.sh [runs]   (default 200; needs go; writes under /tmp)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-200}
bin=$(mktemp -d)/aiperf-action
go build -o "$bin" ./cmd/aiperf-action
port=$((19000 + RANDOM % 1000))
"$bin" serve --port "$port" --ttft 1ms --itl 1ms >/dev/null 2>&1 &
srv=$!
# Each hog lives at most as long as the whole batch could (bounded).
timeout $((runs * 20 + 60)) yes >/dev/null &
h1=$!
timeout $((runs * 20 + 60)) yes >/dev/null &
h2=$!
trap 'kill $srv $h1 $h2 2>/dev/null || true' EXIT
for _ in $(seq 50); do curl -sf "http://127.0.0.1:$port/health" >/dev/null && break; sleep 0.1; done
for cmd in "--request-rate 50 --benchmark-duration 10" "--request-rate 100 --request-rate-ramp-duration 1 --benchmark-duration 2"; do
  lost=0 failed=0 planned=0
  for i in $(seq "$runs"); do
    dir=$(mktemp -d)
    # shellcheck disable=SC2086
    if ! timeout 120 "$bin" profile -u "http://127.0.0.1:$port" -m m --streaming --isl 8 --osl 2 $cmd \
      --artifact-dir "$dir" >"$dir/out" 2>&1; then
      failed=$((failed + 1))
    fi
    if grep -q "received" "$dir/out"; then
      lost=$((lost + 1))
      grep "received" "$dir/out" | head -1
    fi
    planned=$((planned + $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["counts"]["requests"])' "$dir/run.json" 2>/dev/null || echo 0)))
    rm -rf "$dir"
  done
  echo "$cmd: $runs runs, $planned requests planned, $lost runs lost records, $failed runs failed"
done
