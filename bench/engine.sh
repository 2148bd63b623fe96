#!/usr/bin/env bash
# Measures what the simulator costs per streamed chunk in exact and engine
# mode at 512 concurrent streams (the client sharing the machine's cores),
# and how late engine mode woke for its steps (its schedule: each token is
# due at its modelled step's end).
#
#   bench/engine.sh [seconds]     (default 20; needs go, writes under /tmp)
#   ENGINE_ONLY=1 skips exact mode; ENGINE_FLAGS="--preset ..." goes to engine mode's serve.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-20}
bin=$(mktemp -d)/aiperf-action
go build -o "$bin" ./cmd/aiperf-action
tick=$(getconf CLK_TCK)
cpu() { awk '{print $14+$15}' "/proc/$1/stat"; }
measure() {
  local mode=$1; shift
  local port=$((18000 + RANDOM % 1000)) dir
  dir=$(mktemp -d)
  "$bin" serve --port "$port" "$@" >"$dir/serve.log" 2>&1 &
  local pid=$!
  for _ in $(seq 50); do curl -sf "http://127.0.0.1:$port/health" >/dev/null && break; sleep 0.1; done
  local before; before=$(cpu "$pid")
  "$bin" profile -u "http://127.0.0.1:$port" -m m --streaming --concurrency 512 --benchmark-duration "$secs" \
    --isl 128 --osl 256 --extra-inputs ignore_eos:true --random-seed 1 --artifact-dir "$dir/run" >"$dir/profile.log" 2>&1 || true
  local after; after=$(cpu "$pid")
  local lag=""
  if [ "$mode" = engine ]; then
    lag=$(curl -sf "http://127.0.0.1:$port/sim/engine" | python3 -c 'import json,sys; d=json.load(sys.stdin); l=d["wake_lag"]; w=d["write_lag"]; s=d["step_write_lag"]; print("first chunk of each step written after the step end: p50 %.0f us, p99 %.0f us (%d steps); every chunk after its due: p50 %.0f us, p99 %.0f us (%d chunks); engine woke after step ends: p50 %.0f us, p99 %.0f us" % (s["p50_us"], s["p99_us"], s["n"], w["p50_us"], w["p99_us"], w["n"], l["p50_us"], l["p99_us"]))')
  fi
  kill "$pid"; wait "$pid" 2>/dev/null || true
  python3 - "$dir/run/run.json" "$before" "$after" "$tick" "$mode" "$lag" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
before, after, tick, mode, lag = float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), sys.argv[5], sys.argv[6]
m = r["metrics"]
cpu = (after - before) / tick
ok = r["counts"]["ok"]
n = ok * m["output_sequence_length"]["avg"]
print(f"{mode}: server CPU {cpu:.2f} s for {n:.0f} chunks ({ok} requests): {cpu * 1e6 / n:.1f} us/chunk; ITL p50 {m['inter_token_latency']['p50']:.1f} ms; {lag}")
PY
}
[ -z "${ENGINE_ONLY:-}" ] && measure exact --ttft 50ms --itl 20ms
measure engine --mode engine ${ENGINE_FLAGS:-}
