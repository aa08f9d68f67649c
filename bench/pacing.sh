#!/usr/bin/env bash
# The pacing benchmark of issue 10: `run --concurrency 32` (no --rate: adaptive pacing alone)
# against `simulate --limit-rate LIMIT` over ROWS rows, optionally with the simulator sending
# rate-limit headers. Prints one line per run: elapsed, accepted rate / limit, 429 share.
#
#   bash bench/pacing.sh [LIMIT] [ROWS] [HEADERS] [RUNS]   (defaults 100 6000 none 1)
#   HEADERS: none | ietf | ratelimit-limit | x-ratelimit.   LATENCY_MS (env, default 50).
#   BOTSI_BIN (env): a binary to measure instead of building the release one.
set -euo pipefail
cd "$(dirname "$0")/.."
limit=${1:-100}
rows=${2:-6000}
headers=${3:-none}
runs=${4:-1}
latency=${LATENCY_MS:-50}
work=$(mktemp -d /tmp/botsi-pacing.XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT

bin=${BOTSI_BIN:-}
if [ -z "$bin" ]; then
    swift build -c release --product botsi-restore >/dev/null
    bin=.build/release/botsi-restore
fi
export BENCH_KEY=bench-key
python3 bench/make_input.py "$rows" >"$work/in.csv"
header_flags=()
[ "$headers" != none ] && header_flags=(--rate-limit-headers "$headers")

for run in $(seq "$runs"); do
    "$bin" simulate --port 0 --latency "$latency" --key bench-key --limit-rate "$limit" "${header_flags[@]}" \
        >"$work/sim.out" 2>&1 &
    sim_pid=$!
    sim_url=
    for _ in $(seq 100); do
        sim_url=$(grep -o 'http://127.0.0.1:[0-9]*' "$work/sim.out" | head -n1 || true)
        [ -n "$sim_url" ] && break
        sleep 0.1
    done
    [ -n "$sim_url" ] || { echo "simulator did not start" >&2; exit 1; }
    rm -f "$work/j.sqlite"*
    load=$(cut -d' ' -f1 /proc/loadavg)
    start=$(date +%s.%N)
    "$bin" run "$work/in.csv" --journal "$work/j.sqlite" --base-url "$sim_url" --key-env BENCH_KEY \
        --concurrency 32 --max-attempts 20 --quiet >/dev/null 2>"$work/run.err" || { cat "$work/run.err" >&2; exit 1; }
    end=$(date +%s.%N)
    stats=$(curl -s "$sim_url/__simulator/stats")
    kill "$sim_pid"; wait "$sim_pid" 2>/dev/null || true
    python3 - "$stats" "$start" "$end" "$rows" "$limit" "$headers" "$load" <<'PY'
import json, sys
stats, start, end, rows, limit, headers, load = sys.argv[1:]
stats = json.loads(stats)
elapsed = float(end) - float(start)
requests = stats["requests"]; refused = stats.get("rateLimited", 0)
accepted = requests - refused
print(f"limit {limit}/s headers {headers}: {rows} rows in {elapsed:.2f}s = {int(rows)/elapsed:.1f}/s = "
      f"{int(rows)/elapsed/float(limit):.3f} of the limit; {refused} of {requests} requests 429 "
      f"({100*refused/requests:.2f}%); load {load}")
PY
done
