#!/usr/bin/env bash
# Ten million rows on one machine (issue 21, item 5). Not in CI: about an hour on a 2-core VM.
# Runs ROWS generated pairs with UUID profile ids against `simulate --latency 0 --forget` (1% of them
# answered 500 and left owed), a second run that restores those, a rerun over them all, the read
# commands, report --changes for the second run, every report format
# beside sqlite3's own export, and `merge` of two shards of ROWS/2 run side by side; prints each
# figure as it is measured. bench/README.md has the latest figures.
#
#   bash bench/scale.sh [ROWS]            (default 10000000)
#   SCALE_WORK=DIR bash bench/scale.sh    keep the journals in DIR (default: a temporary directory,
#                                         removed at the end; it needs about 12 GB at 10M rows)
set -euo pipefail
cd "$(dirname "$0")/.."
rows=${1:-10000000}
if [ -n "${SCALE_WORK:-}" ]; then
    work=$SCALE_WORK; mkdir -p "$work"; cleanup() { :; }
else
    work=$(mktemp -d /tmp/botsi-scale.XXXXXX); cleanup() { rm -rf "$work"; }
fi
trap 'kill $(jobs -p) 2>/dev/null || true; cleanup' EXIT

swift build -c release --product botsi-restore >/dev/null
bin=.build/release/botsi-restore
export BENCH_KEY=bench-key
py() { python3 -c "print($1)"; }

start_simulator() { # name, then simulate's options -> sets sim_url
    "$bin" simulate --port 0 --key bench-key "${@:2}" >"$work/sim-$1.out" 2>&1 &
    for _ in $(seq 300); do
        sim_url=$(grep -o 'http://127.0.0.1:[0-9]*' "$work/sim-$1.out" | head -n1 || true)
        [ -n "$sim_url" ] && return 0
        sleep 0.1
    done
    echo "simulator $1 did not start: $(cat "$work/sim-$1.out")" >&2; exit 1
}

measure() { # label, then the command; prints elapsed user sys maxrss_kb (exit 75 is a partial run)
    /usr/bin/time -f "%e %U %S %M" -o "$work/$1.time" "${@:2}" >/dev/null 2>"$work/$1.err" || {
        code=$?; [ "$code" = 75 ] || { echo "$1 failed ($code):" >&2; tail -n 20 "$work/$1.err" >&2; exit 1; }
    }
    tail -n 1 "$work/$1.time"
}

median3() { # the command; prints the median elapsed of three runs
    for _ in 1 2 3; do
        /usr/bin/time -f "%e" -o "$work/time" "$@" >/dev/null 2>"$work/median.err" || {
            cat "$work/median.err" >&2; exit 1; }
        cat "$work/time"
    done | sort -n | sed -n 2p
}

journal_bytes() { # journal -> bytes of the file and its WAL, after a checkpoint
    sqlite3 "$1" "PRAGMA wal_checkpoint(TRUNCATE)" >/dev/null
    echo $(($(stat -c %s "$1") + $(stat -c %s "$1-wal" 2>/dev/null || echo 0)))
}

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)," \
    "swift $(swift --version 2>&1 | grep -o 'version [0-9.]*' | head -n1), $(git rev-parse --short HEAD), $(date -u +%FT%TZ)"
python3 bench/make_scale_input.py "$rows" >"$work/all.csv"
start_simulator plain --latency 0 --forget
plain_url=$sim_url
# The first run's server fails 1% of requests (500, one attempt each): those rows stay owed, and the
# second run, which restores them, is the run that changed 1% of the rows for report --changes.
start_simulator faulty --latency 0 --forget --fault-rate 0.01 --faults 500 --seed 21
faulty_url=$sim_url
journal="$work/scale.sqlite"
run() { # label, journal, input, base url, then options
    measure "$1" "$bin" run "$3" --journal "$2" --base-url "$4" --key-env BENCH_KEY --quiet "${@:5}"
}

# 1. The run. Its first and last million come from the attempts' own start times.
read -r elapsed user sys rss < <(run first "$journal" "$work/all.csv" "$faulty_url" --concurrency 64 --max-attempts 1)
echo "run of $rows rows (1% answered 500, not retried): ${elapsed}s = $(py "round($rows/$elapsed)") requests/s;" \
    "peak RSS $((rss / 1024)) MB (target <= 64); CPU $(py "round(($user+$sys)*1e6/$rows)") µs per request" \
    "(user ${user}s + sys ${sys}s)"
million=$((rows < 10000000 ? rows / 10 : 1000000))
at() { sqlite3 -readonly "$journal" "SELECT started_at FROM attempts ORDER BY id LIMIT 1 OFFSET $1"; }
t0=$(at 0); t1=$(at $((million - 1))); t9=$(at $((rows - million))); t10=$(at $((rows - 1)))
first_rate=$(py "round($million/(($t1-$t0)/1000))"); last_rate=$(py "round($million/(($t10-$t9)/1000))")
echo "requests/s of the first $million: $first_rate; of the last $million: $last_rate" \
    "($(py "round($last_rate/$first_rate, 3)") of the first; target >= 0.9)"
bytes=$(journal_bytes "$journal")
echo "journal: $bytes bytes = $((bytes / rows)) bytes per row (target <= 250)"

# 2. The second run sends the rows the first still owes; the third skips every row.
# sync first: the last run's dirty pages are not the next one's cost.
sync
read -r elapsed _ _ _ < <(run second "$journal" "$work/all.csv" "$plain_url" --concurrency 64)
owed=$(sqlite3 -readonly "$journal" "SELECT count(*) FROM attempts WHERE run_id = 2")
echo "second run, sending the $owed rows the first left owed ($(py "round(100*$owed/$rows, 2)")%): ${elapsed}s"
sync
read -r elapsed _ _ rss < <(run rerun "$journal" "$work/all.csv" "$plain_url" --concurrency 64)
echo "rerun over $rows finished rows: ${elapsed}s = $(py "round($rows/$elapsed)") rows/s skipped (target >= 500,000)," \
    "peak RSS $((rss / 1024)) MB"

# 3. The read commands and the end of a run, which must not scan every row (target <= 0.2 s each).
for command in status runs; do
    echo "$command: $(median3 "$bin" "$command" --journal "$journal")s (median of 3)"
done
echo "status --format json: $(median3 "$bin" status --journal "$journal" --format json)s (median of 3)"
printf 'profileId,originalTransactionId\nscale-extra-1,2000000000000002\n' >"$work/one.csv"
read -r elapsed _ _ _ < <(run one "$journal" "$work/one.csv" "$plain_url" --metrics-file "$work/metrics.prom")
echo "a run of 1 new row on the $rows-row journal, with its end-of-run counts and metrics file: ${elapsed}s"
echo "query plans of the read commands' statements (none may read items or attempts in full):"
sqlite3 -readonly "$journal" <bench/read-plans.sql | sed 's/^/    /'

# 4. report --changes for the second run (against the first) beside the plain CSV report.
sync
/usr/bin/time -f "%e %M" -o "$work/time" "$bin" report --journal "$journal" --format csv >/dev/null
read -r plain _ <"$work/time"
/usr/bin/time -f "%e %M" -o "$work/time" "$bin" report --journal "$journal" --changes --run 2 --format csv \
    >"$work/changes.csv"
read -r elapsed crss <"$work/time"
echo "report --changes --run 2 --format csv: ${elapsed}s for $(($(wc -l <"$work/changes.csv") - 1)) changed rows," \
    "peak RSS $((crss / 1024)) MB; the plain CSV report ${plain}s: $(py "round($elapsed/$plain, 3)") of it (target <= 3)"
/usr/bin/time -f "%e" -o "$work/time" "$bin" report --journal "$journal" --changes --since-run 1 --format csv >/dev/null
echo "report --changes --since-run 1 --format csv: $(cat "$work/time")s"
rm -f "$work/changes.csv"

# 5. Every report format, into a file and to /dev/null, beside sqlite3's export of the same columns.
total=$(sqlite3 -readonly "$journal" "SELECT (SELECT count(*) FROM items) + (SELECT count(*) FROM rejections)")
report_line() { # label elapsed rss_kb
    echo "$1 over $total rows: ${2}s = $(py "round($total/max($2, 0.01))") rows/s, peak RSS $(($3 / 1024)) MB"
}
for format in csv jsonl table; do
    /usr/bin/time -f "%e %M" -o "$work/time" "$bin" report --journal "$journal" --format "$format" \
        --output "$work/report.$format"
    read -r elapsed rss <"$work/time"
    report_line "report --format $format --output F" "$elapsed" "$rss"
    rm -f "$work/report.$format"
    /usr/bin/time -f "%e %M" -o "$work/time" "$bin" report --journal "$journal" --format "$format" >/dev/null
    read -r elapsed rss <"$work/time"
    report_line "report --format $format > /dev/null" "$elapsed" "$rss"
done
/usr/bin/time -f "%e %M" -o "$work/time" "$bin" report --journal "$journal" --format html --output "$work/report.html"
read -r elapsed rss <"$work/time"
echo "report --format html --output F: ${elapsed}s, $(stat -c %s "$work/report.html") bytes, peak RSS $((rss / 1024)) MB"
columns="SELECT profile_id, original_transaction_id, status, code, http_status, attempts, last_source, updated_at,
    restored_at, profile_state, access_levels, message FROM items_readable ORDER BY id"
/usr/bin/time -f "%e %M" -o "$work/time" sqlite3 -readonly -csv "$journal" "$columns" >/dev/null
read -r elapsed rss <"$work/time"
report_line "sqlite3 -csv, the same columns > /dev/null" "$elapsed" "$rss"
rm -f "$work/report.html"

# 6. Two shards of the same input run side by side on the one simulator, then merged.
shards_start=$(date +%s)
shard_pids=()
for shard in 0 1; do
    run "shard-$shard" "$work/shard-$shard.sqlite" "$work/all.csv" "$plain_url" --shard "$shard/2" \
        --concurrency 32 >/dev/null &
    shard_pids+=($!)
done
for pid in "${shard_pids[@]}"; do wait "$pid"; done
echo "two shards of about $((rows / 2)) rows each, side by side: $(($(date +%s) - shards_start))s" \
    "(peak RSS $(($(tail -n 1 "$work/shard-0.time" | cut -d' ' -f4) / 1024)) and $(($(tail -n 1 "$work/shard-1.time" | cut -d' ' -f4) / 1024)) MB)"
/usr/bin/time -f "%e %M" -o "$work/time" "$bin" merge "$work/merged.sqlite" "$work/shard-0.sqlite" \
    "$work/shard-1.sqlite" >/dev/null 2>"$work/merge.err"
read -r elapsed rss <"$work/time"
merged=$(sqlite3 -readonly "$work/merged.sqlite" "SELECT count(*) FROM items")
echo "merge of the two shards: ${elapsed}s for $merged rows = $(py "round($merged/$elapsed)") rows/s," \
    "peak RSS $((rss / 1024)) MB"
