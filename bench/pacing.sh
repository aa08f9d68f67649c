#!/usr/bin/env bash
# Pacing near a limit (issues 10 and 23): `run --concurrency 32` without --rate (the adaptive
# pacer alone) against `simulate --limit-rate LIMIT`, alone or as SHARDS processes side by side
# (`--shard i/SHARDS` of the same input, each its own journal), optionally beside live traffic the
# simulator spends from its own limit. Prints one line per run: the fraction of the limit used
# (of the room the live traffic leaves), the 429s among the batch's requests, the live requests
# refused, and with shards the spread of their shares.
#
#   bash bench/pacing.sh [LIMIT] [ROWS] [HEADERS] [RUNS]   (defaults 100 6000 none 1)
#   HEADERS: none | ietf | ratelimit-limit | x-ratelimit (the simulator states its limit).
#   Environment: LATENCY_MS (50), KIND (sliding | fixed | bucket), SHARDS (1), LIVE (live requests/s,
#   0), CONCURRENCY (32), RETRY_AFTER (1, seconds on the limiter's 429s), WINDOW (1: the limiter's
#   window in seconds, LIMIT × WINDOW a window; with a longer one each line also gives the figures
#   from the third window on, once the pacer can have learnt the window's length).
#   CARRY=1 runs every run on the same journals, each on ROWS new rows: from the second run on,
#   the pacing starts from the long window the last run found (docs/pacing.md).
#   KEEP=DIR keeps each run's journals in DIR/run-N; TRACE=1 prints each run's trace (what each
#   process was accepted and refused, second by second: bench/pacing_trace.py).
#   BOTSI_BIN: the binary whose `run` is measured (default: build the release one); SIM_BIN: the
#   binary whose `simulate` serves (default BOTSI_BIN; set it to a current build to measure an
#   older client against the limiter kinds and live traffic it lacks).
#
# Definitions (issue 23): utilization = rows answered ÷ (last process's end − first one's start) ÷
# the limit (less the live rate); a share is a process's accepted requests over 5 s while all of
# them run, over their mean; spread = the first process's running time ÷ the last one's.
set -euo pipefail
cd "$(dirname "$0")/.."
limit=${1:-100}
rows=${2:-6000}
headers=${3:-none}
runs=${4:-1}
latency=${LATENCY_MS:-50}
kind=${KIND:-sliding}
shards=${SHARDS:-1}
live=${LIVE:-0}
concurrency=${CONCURRENCY:-32}
retry_after=${RETRY_AFTER:-1}
window=${WINDOW:-1}
carry=${CARRY:-0}
work=$(mktemp -d /tmp/botsi-pacing.XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT

bin=${BOTSI_BIN:-}
if [ -z "$bin" ]; then
    swift build -c release --product botsi-restore >/dev/null
    bin=.build/release/botsi-restore
fi
sim_bin=${SIM_BIN:-$bin}
export BENCH_KEY=bench-key
python3 bench/make_input.py "$rows" >"$work/in.csv"
sim_flags=(--limit-rate "$limit" --retry-after "$retry_after")
[ "$headers" != none ] && sim_flags+=(--rate-limit-headers "$headers")
[ "$kind" != sliding ] && sim_flags+=(--limit-kind "$kind")
[ "$live" != 0 ] && sim_flags+=(--live-rate "$live")
[ "$window" != 1 ] && sim_flags+=(--limit-window "${window}s")

for run in $(seq "$runs"); do
    "$sim_bin" simulate --port 0 --latency "$latency" --key bench-key "${sim_flags[@]}" >"$work/sim.out" 2>&1 &
    sim_pid=$!
    sim_url=
    for _ in $(seq 100); do
        sim_url=$(grep -o 'http://127.0.0.1:[0-9]*' "$work/sim.out" | head -n1 || true)
        [ -n "$sim_url" ] && break
        sleep 0.1
    done
    [ -n "$sim_url" ] || { echo "simulator did not start" >&2; exit 1; }
    # The live traffic runs before the batch starts, as an app's does.
    [ "$live" != 0 ] && sleep 2
    if [ "$carry" = 1 ]; then
        python3 bench/make_input.py "$rows" $(((run - 1) * rows)) >"$work/in.csv"
    else
        rm -f "$work"/j-*.sqlite*
    fi
    load=$(cut -d' ' -f1 /proc/loadavg)
    before=$(curl -s "$sim_url/__simulator/stats")
    # The simulator's counts at the third window, for this run only (a run shorter than that has
    # none: its sleeper finds the simulator gone and writes nothing).
    settled="$work/settled-$run.json"
    if [ "$window" != 1 ]; then
        (sleep $((3 * window)) && curl -sf "$sim_url/__simulator/stats" >"$settled.tmp" && mv "$settled.tmp" "$settled") &
    fi
    pids=()
    for shard in $(seq 0 $((shards - 1))); do
        shard_flags=()
        [ "$shards" -gt 1 ] && shard_flags=(--shard "$shard/$shards")
        (
            date +%s.%N >"$work/start-$shard"
            "$bin" run "$work/in.csv" --journal "$work/j-$shard.sqlite" --base-url "$sim_url" --key-env BENCH_KEY \
                --concurrency "$concurrency" --max-attempts 20 --quiet "${shard_flags[@]}" >/dev/null \
                2>"$work/run-$shard.err" || { cat "$work/run-$shard.err" >&2; exit 1; }
            date +%s.%N >"$work/end-$shard"
        ) &
        pids+=($!)
    done
    for pid in "${pids[@]}"; do wait "$pid"; done
    after=$(curl -s "$sim_url/__simulator/stats")
    kill "$sim_pid"; wait "$sim_pid" 2>/dev/null || true
    python3 - "$work" "$shards" "$limit" "$live" "$headers" "$kind" "$latency" "$load" "$before" "$after" "$window" "$settled" <<'PY'
import json, os, sqlite3, sys, datetime
work, shards, limit, live, headers, kind, latency, load, before, after, window, settled_path = sys.argv[1:]
shards, limit, live, window = int(shards), float(limit), float(live), int(window)
before, after = json.loads(before), json.loads(after)
starts = [float(open(f"{work}/start-{i}").read()) for i in range(shards)]
ends = [float(open(f"{work}/end-{i}").read()) for i in range(shards)]
wall = max(ends) - min(starts)

def epoch(text):
    return datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc).timestamp()

accepted, refused_at, answered = [], [], 0
for i in range(shards):
    db = sqlite3.connect(f"file:{work}/j-{i}.sqlite?mode=ro", uri=True)
    # This run's rows and attempts (with CARRY=1 the journal holds earlier runs' too).
    last = "(SELECT max(id) FROM runs)"
    answered += db.execute(f"SELECT count(*) FROM items_readable WHERE status = 'restored' AND last_run = {last}").fetchone()[0]
    accepted.append([epoch(t) + (d or 0) / 1000 for t, d in db.execute(
        f"SELECT started_at, duration_ms FROM attempts_readable WHERE http_status = 200 AND run_id = {last}")])
    refused_at += [epoch(t) + (d or 0) / 1000 for t, d in db.execute(
        f"SELECT started_at, duration_ms FROM attempts_readable WHERE http_status = 429 AND run_id = {last}")]
    db.close()
requests = after["requests"] - before["requests"]
refused = after.get("rateLimited", 0) - before.get("rateLimited", 0)
line = (f"{kind} {limit:g}/s headers {headers} latency {latency} ms shards {shards}"
        f"{f' live {live:g}/s' if live else ''}: {answered} rows in {wall:.2f}s = {answered / wall:.1f}/s = "
        f"{answered / wall / (limit - live):.3f} of the {'room' if live else 'limit'}; "
        f"{refused} of {requests} requests 429 ({100 * refused / max(requests, 1):.2f}%)")
if live:
    live_requests = after["liveRequests"] - before["liveRequests"]
    live_refused = after["liveRefused"] - before["liveRefused"]
    line += f"; live {live_refused} of {live_requests} refused ({100 * live_refused / max(live_requests, 1):.2f}%)"
if shards > 1:
    lowest, highest, t = 1.0, 1.0, max(starts)
    while t + 5 <= min(ends):
        counts = [sum(1 for a in times if t <= a < t + 5) for times in accepted]
        mean = sum(counts) / len(counts)
        if mean > 0:
            lowest, highest = min(lowest, min(counts) / mean), max(highest, max(counts) / mean)
        t += 5
    durations = [e - s for s, e in zip(starts, ends)]
    line += f"; shares {lowest:.2f}-{highest:.2f} of the mean, spread {min(durations) / max(durations):.2f}"
if window > 1 and os.path.exists(settled_path):
    # From the third window on: the first is spent before its length can show, the second is the
    # first one paced.
    settled = json.load(open(settled_path))
    since = min(starts) + 3 * window
    taken = sum(1 for times in accepted for a in times if a >= since)
    refused_late = sum(1 for r in refused_at if r >= since)
    line += (f"; from the third window: {taken / max(max(ends) - since, 1e-9) / (limit - live):.3f} of the "
             f"{'room' if live else 'limit'}, {100 * refused_late / max(taken + refused_late, 1):.2f}% 429s")
    if live:
        live_late = after["liveRequests"] - settled["liveRequests"]
        live_refused_late = after["liveRefused"] - settled["liveRefused"]
        line += f", live {live_refused_late} of {live_late} refused ({100 * live_refused_late / max(live_late, 1):.2f}%)"
print(line + f"; load {load}")
PY
    if [ "${TRACE:-0}" = 1 ]; then
        journals=()
        for shard in $(seq 0 $((shards - 1))); do journals+=("$work/j-$shard.sqlite"); done
        python3 bench/pacing_trace.py "${journals[@]}"
    fi
    if [ -n "${KEEP:-}" ]; then
        mkdir -p "$KEEP/run-$run"
        cp "$work"/j-*.sqlite* "$work/sim.out" "$KEEP/run-$run/"
    fi
done
