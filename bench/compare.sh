#!/usr/bin/env bash
# Two binaries of botsi-restore measured alternately in one script, so that the shared machine's
# noise falls on both alike: bench/run.sh's throughput step (THROUGHPUT_ROWS rows, default 100,000,
# at --concurrency 256 against the simulator answering after 50 ms) and the client's CPU per
# 10,000 requests, ROUNDS times each (default 5), then the medians and their ratios.
#
#   bash bench/compare.sh OLD_BINARY NEW_BINARY [ROUNDS]
#   RUN_FLAGS=--no-adaptive bash bench/compare.sh ...   (flags added to both runs)
#
# Build the old one from its commit in a worktree outside the project, e.g.
#   git worktree add /tmp/base c6f06ff && (cd /tmp/base && swift build -c release)
set -euo pipefail
cd "$(dirname "$0")/.."
old=${1:?usage: bash bench/compare.sh OLD_BINARY NEW_BINARY [ROUNDS]}
new=${2:?usage: bash bench/compare.sh OLD_BINARY NEW_BINARY [ROUNDS]}
rounds=${3:-5}
rows=${THROUGHPUT_ROWS:-100000}
read -r -a run_flags <<<"${RUN_FLAGS:-}"
work=$(mktemp -d /tmp/botsi-compare.XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
export BENCH_KEY=bench-key
python3 bench/make_input.py "$rows" >"$work/in.csv"
"$new" simulate --port 0 --latency 50 --key bench-key >"$work/sim.out" 2>&1 &
for _ in $(seq 100); do
    url=$(grep -o 'http://127.0.0.1:[0-9]*' "$work/sim.out" | head -n1 || true)
    [ -n "$url" ] && break
    sleep 0.1
done
[ -n "$url" ] || { echo "simulator did not start" >&2; exit 1; }
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); $rows rows, $rounds rounds${RUN_FLAGS:+, $RUN_FLAGS}"
for round in $(seq "$rounds"); do
    for which in old new; do
        bin=$old
        [ "$which" = new ] && bin=$new
        rm -f "$work/j.sqlite"*
        sync
        /usr/bin/time -f "%e %U %S" -o "$work/time" "$bin" run "$work/in.csv" --journal "$work/j.sqlite" \
            --base-url "$url" --key-env BENCH_KEY --concurrency 256 --quiet "${run_flags[@]}" >/dev/null 2>"$work/err" ||
            { cat "$work/err" >&2; exit 1; }
        read -r elapsed user sys <"$work/time"
        python3 -c "print('$which', round($rows/$elapsed), round(($user+$sys)*10000/$rows, 3))" >>"$work/results"
        echo "round $round $which: $(tail -n1 "$work/results" | cut -d' ' -f2) requests/s, $(tail -n1 "$work/results" | cut -d' ' -f3) CPU-s per 10,000"
    done
done
python3 - "$work/results" <<'PY'
import statistics, sys
rows = [line.split() for line in open(sys.argv[1])]
def median(which, column):
    return statistics.median(float(r[column]) for r in rows if r[0] == which)
for name, column in (("requests/s", 1), ("CPU-s per 10,000 requests", 2)):
    old, new = median("old", column), median("new", column)
    print(f"median {name}: old {old:g}, new {new:g}, new/old {new / old:.3f}")
PY
