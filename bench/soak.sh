#!/usr/bin/env bash
# The soak: N requests (default 1,000,000) at concurrency 64 against serve
# on loopback, and what the controller and its workers held at their peak
# (VmHWM, read from /proc while they run). The controller keeps the plan's
# shape, not its entries, and streams records to disk, so its peak should
# not grow with N; run it at two sizes to see.
#
#   bench/soak.sh [requests] [workers]   (needs go; writes under /tmp)
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-1000000}
workers=${2:-2}
bin=$(mktemp -d)/aiperf-action
go build -o "$bin" ./cmd/aiperf-action
dir=$(mktemp -d)
port=$((19000 + RANDOM % 1000))
"$bin" serve --port "$port" --ttft 1ms --itl 1ms >"$dir/serve.log" 2>&1 &
srv=$!
trap 'kill $srv 2>/dev/null || true' EXIT
for _ in $(seq 50); do curl -sf "http://127.0.0.1:$port/health" >/dev/null && break; sleep 0.1; done
start=$(date +%s.%N)
"$bin" profile -u "http://127.0.0.1:$port" -m m --streaming --concurrency 64 --request-count "$n" --workers "$workers" \
  --isl 8 --osl 2 --random-seed 1 --artifact-dir "$dir/run" >"$dir/profile.log" 2>&1 &
ctl=$!
hwm() { awk '/VmHWM/ {print $2}' "/proc/$1/status" 2>/dev/null || true; }
peak_ctl=0 peak_w=0
# Bounded: at most an hour of polling.
for _ in $(seq 18000); do
  kill -0 "$ctl" 2>/dev/null || break
  v=$(hwm "$ctl"); [ -n "$v" ] && [ "$v" -gt "$peak_ctl" ] && peak_ctl=$v
  for w in $(pgrep -P "$ctl" || true); do
    v=$(hwm "$w"); [ -n "$v" ] && [ "$v" -gt "$peak_w" ] && peak_w=$v
  done
  sleep 0.2
done
rc=0
wait "$ctl" || rc=$?
end=$(date +%s.%N)
lines=$(wc -l <"$dir/run/records.jsonl")
bytes=$(stat -c %s "$dir/run/records.jsonl")
ok=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["counts"]["ok"])' "$dir/run/run.json")
printf 'requests %d (ok %d), exit %d, %.1f s; controller peak RSS %.0f MB, largest worker %.0f MB; records.jsonl %d lines, %.0f MB\n' \
  "$n" "$ok" "$rc" "$(echo "$end - $start" | bc)" "$(echo "$peak_ctl / 1024" | bc -l)" "$(echo "$peak_w / 1024" | bc -l)" "$lines" "$(echo "$bytes / 1048576" | bc -l)"
