#!/usr/bin/env bash
# The run benchmarks of issue 2: throughput at --concurrency 256 against a server that answers
# after 50 ms (beside wrk against the same server), client CPU per 10,000 requests, peak RSS with
# a 1,000,000-row input, and how fast a rerun skips a journal of 1,000,000 finished rows. Prints a
# table; bench/README.md has the latest figures. Timing belongs here, not in tests: the machines
# are shared and noisy.
#
#   bash bench/run.sh [THROUGHPUT_ROWS] [BIG_ROWS]      (defaults 100000 and 1000000)
#   BENCH_PARTS=throughput bash bench/run.sh             (the throughput step alone; THROUGHPUT_ROUNDS=N)
#   BENCH_PARTS=reports bash bench/run.sh                (the report step alone)
#   BENCH_PARTS=changes bash bench/run.sh                (report --changes beside the plain report)
#   BENCH_PARTS=html bash bench/run.sh                   (report --format html beside the CSV report)
set -euo pipefail
cd "$(dirname "$0")/.."
throughput_rows=${1:-100000}
big_rows=${2:-1000000}
work=$(mktemp -d /tmp/botsi-bench.XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT

swift build -c release --product botsi-restore >/dev/null
bin=.build/release/botsi-restore
export BENCH_KEY=bench-key

start_simulator() { # latency_ms -> sets sim_url
    "$bin" simulate --port 0 --latency "$1" --key bench-key >"$work/sim-$1.out" 2>&1 &
    for _ in $(seq 100); do
        sim_url=$(grep -o 'http://127.0.0.1:[0-9]*' "$work/sim-$1.out" | head -n1 || true)
        [ -n "$sim_url" ] && return 0
        sleep 0.1
    done
    echo "simulator did not start" >&2; exit 1
}

measure() { # label, then the command; prints elapsed user sys maxrss_kb
    /usr/bin/time -f "%e %U %S %M" -o "$work/time" "${@:2}" >/dev/null 2>"$work/$1.err" || {
        code=$?; [ "$code" = 75 ] || { cat "$work/$1.err" >&2; exit 1; }
    }
    cat "$work/time"
}

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), swift $(swift --version 2>&1 | grep -o 'version [0-9.]*' | head -n1)"

# The throughput step: the client at --concurrency 256 against the simulator answering after 50 ms,
# with its default pacing and with --no-adaptive (no pacer: the same terms as wrk, which has none),
# and wrk against the same simulator (one connection per request slot, as the client has): what the
# server and loopback allow. The default run climbs from 10/s at the start (docs/pacing.md), which a
# short run against a server with no limit pays for; --no-adaptive shows the client without it.
# THROUGHPUT_ROUNDS rounds (default 1) alternate the three; the medians are printed.
throughput_step() {
    python3 bench/make_input.py "$throughput_rows" >"$work/throughput.csv"
    start_simulator 50
    local rounds=${THROUGHPUT_ROUNDS:-1} round pacing
    : >"$work/throughput.results"
    for round in $(seq "$rounds"); do
        for pacing in default no-adaptive; do
            local flags=()
            [ "$pacing" = no-adaptive ] && flags=(--no-adaptive)
            rm -f "$work/t.sqlite"*
            read -r elapsed user sys rss < <(measure throughput "$bin" run "$work/throughput.csv" \
                --journal "$work/t.sqlite" --base-url "$sim_url" --key-env BENCH_KEY --concurrency 256 \
                "${flags[@]}" --quiet)
            echo "$pacing $(python3 -c "print(round($throughput_rows/$elapsed), round(($user+$sys)*10000/$throughput_rows, 3))")" \
                >>"$work/throughput.results"
            echo "round $round, $pacing pacing: $throughput_rows requests in ${elapsed}s" \
                "(user ${user}s + sys ${sys}s)"
        done
        if command -v wrk >/dev/null; then
            wrk_rate=$(WRK_KEY=bench-key wrk -t1 -c256 -d10s -s bench/wrk-restore.lua \
                "$sim_url/v2/purchases/apple-store/restore" | awk '/^Requests\/sec/ {print $2}')
            echo "wrk $wrk_rate 0" >>"$work/throughput.results"
            echo "round $round, wrk -t1 -c256 -d10s against the same simulator: $wrk_rate/s"
        fi
    done
    command -v wrk >/dev/null || echo "wrk is not installed (apt-get install -y wrk): no comparison with wrk"
    python3 - "$work/throughput.results" <<'PY'
import statistics, sys
rows = [line.split() for line in open(sys.argv[1])]
def median(which, column):
    values = [float(r[column]) for r in rows if r[0] == which]
    return statistics.median(values) if values else None
wrk = median("wrk", 1)
for which in ("default", "no-adaptive"):
    rate, cpu = median(which, 1), median(which, 2)
    line = f"throughput, concurrency 256, 50 ms server, {which} pacing: {rate:,.0f}/s = {rate / 5120:.3f} of the ideal 5,120/s"
    if wrk:
        line += f" = {rate / wrk:.3f} of wrk"
    print(line + f"; client CPU per 10,000 requests {cpu:.3f} s")
if wrk:
    print(f"wrk: {wrk:,.0f}/s = {wrk / 5120:.3f} of the ideal")
PY
}

parts=${BENCH_PARTS:-all}
if [ "$parts" = throughput ]; then
    throughput_step
    exit 0
fi
if [ "$parts" = all ]; then
throughput_step

python3 bench/make_input.py "$big_rows" >"$work/big.csv"
start_simulator 0
read -r elapsed user sys rss < <(measure big "$bin" run "$work/big.csv" --journal "$work/big.sqlite" \
    --base-url "$sim_url" --key-env BENCH_KEY --concurrency 64 --quiet)
echo "$big_rows-row input: ${elapsed}s, peak RSS $((rss / 1024)) MB ($(python3 -c "print(round($big_rows/$elapsed))") requests/s at 0 ms latency)"

# The 1,000,000-row run leaves hundreds of MB of dirty pages; without this the rerun measured
# the kernel's writeback of them as much as itself (its figure moved by a third between runs).
sync
read -r elapsed user sys rss < <(measure rerun "$bin" run "$work/big.csv" --journal "$work/big.sqlite" \
    --base-url "$sim_url" --key-env BENCH_KEY --concurrency 64 --quiet)
echo "rerun over $big_rows finished rows: ${elapsed}s = $(python3 -c "print(round($big_rows/$elapsed))") rows/s skipped, peak RSS $((rss / 1024)) MB"
else
    start_simulator 0
fi

# report --format html (issue 22, item 8): the page of a HTML_ROWS-row journal (default 1,000,000,
# one run against a simulator failing 2% of requests with 500, 503 and 429, so every chart and list
# has something to show; --no-adaptive, as the random 429s would otherwise pace it down to ~90/s)
# beside the CSV report of the same journal: medians of 3 of wall time, the
# page's size and both peak RSS. Goals: the page under 1.5 MB, no slower than the CSV report.
if [ "$parts" = all ] || [ "$parts" = html ]; then
    html_rows=${HTML_ROWS:-1000000}
    "$bin" simulate --port 0 --key bench-key --fault-rate 0.02 --faults 500,503,429 --retry-after 0 \
        >"$work/sim-html.out" 2>&1 &
    html_url=""
    for _ in $(seq 100); do
        html_url=$(grep -o 'http://127.0.0.1:[0-9]*' "$work/sim-html.out" | head -n1 || true)
        [ -n "$html_url" ] && break
        sleep 0.1
    done
    python3 bench/make_input.py "$html_rows" >"$work/html.csv"
    read -r elapsed _ _ _ < <(measure html-run "$bin" run "$work/html.csv" --journal "$work/html.sqlite" \
        --base-url "$html_url" --key-env BENCH_KEY --concurrency 64 --backoff-base 0.01 --backoff-cap 0.05 --no-adaptive \
        --quiet)
    echo "report --format html: a $html_rows-row journal made in ${elapsed}s"
    sync
    for format in csv html; do
        times=()
        for _ in 1 2 3; do
            /usr/bin/time -f "%e %M" -o "$work/time" "$bin" report --journal "$work/html.sqlite" --format "$format" \
                --output "$work/page.$format" 2>"$work/page-$format.err" || { cat "$work/page-$format.err" >&2; exit 1; }
            read -r elapsed rss <"$work/time"
            times+=("$elapsed")
        done
        median=$(printf '%s\n' "${times[@]}" | sort -n | sed -n 2p)
        echo "report --format $format --output F over $html_rows rows: ${times[*]} s, median ${median}s;" \
            "$(stat -c %s "$work/page.$format") bytes; peak RSS $((rss / 1024)) MB (the last run)"
    done
    # The read commands that must not scan every row (issue 21, item 3): status and runs on the same
    # journal, medians of 3.
    for command in status runs; do
        times=()
        for _ in 1 2 3; do
            /usr/bin/time -f "%e" -o "$work/time" "$bin" "$command" --journal "$work/html.sqlite" >/dev/null 2>&1
            times+=("$(cat "$work/time")")
        done
        echo "$command over $html_rows rows: ${times[*]} s, median $(printf '%s\n' "${times[@]}" | sort -n | sed -n 2p)s"
    done
    echo "journal: $(stat -c %s "$work/html.sqlite") bytes = $(($(stat -c %s "$work/html.sqlite") / html_rows)) bytes per row"
    [ "$parts" = html ] && exit 0
fi

# report --changes (issue 21, item 3): every --since-run/--run form beside the plain CSV report of
# the same journal, whose four runs change a share of the rows between them (a run against a
# failing server leaves rows pending, a plain run restores them, a refresh keeps or restores).
if [ "$parts" = all ] || [ "$parts" = changes ]; then
    changes_rows=${CHANGES_ROWS:-50000}
    python3 bench/make_input.py "$changes_rows" >"$work/changes.csv"
    "$bin" simulate --port 0 --latency 0 --key bench-key --fault-rate 0.3 --faults 500 --seed 7 \
        >"$work/sim-faulty.out" 2>&1 &
    for _ in $(seq 100); do
        faulty_url=$(grep -o 'http://127.0.0.1:[0-9]*' "$work/sim-faulty.out" | head -n1 || true)
        [ -n "$faulty_url" ] && break
        sleep 0.1
    done
    changes_run() { # base url, then extra options
        measure changes-run "$bin" run "$work/changes.csv" --journal "$work/changes.sqlite" --base-url "$1" \
            --key-env BENCH_KEY --concurrency 64 --max-attempts 1 --quiet "${@:2}" >/dev/null
    }
    changes_run "$faulty_url"
    changes_run "$sim_url"
    changes_run "$faulty_url" --refresh-older-than 0s
    changes_run "$sim_url" --refresh-older-than 0s
    sync
    timed() { # prints the median elapsed of three runs of the command
        for _ in 1 2 3; do
            /usr/bin/time -f "%e" -o "$work/time" "$@" >/dev/null 2>"$work/changes.err" || {
                cat "$work/changes.err" >&2; exit 1; }
            cat "$work/time"
        done | sort -n | sed -n 2p
    }
    plain=$(timed "$bin" report --journal "$work/changes.sqlite" --format csv)
    echo "report --format csv over $changes_rows rows (4 runs): ${plain}s (median of 3)"
    for form in "" "--since-run 1 --run 4" "--since-run 1 --run 2" "--since-run 2" "--run 3"; do
        # shellcheck disable=SC2086
        changed=$("$bin" report --journal "$work/changes.sqlite" --changes $form --format csv | tail -n +2 | wc -l)
        # shellcheck disable=SC2086
        elapsed=$(timed "$bin" report --journal "$work/changes.sqlite" --changes $form --format csv)
        echo "report --changes ${form:-(last run against the one before)}: ${elapsed}s for $changed changed rows" \
            "= $(python3 -c "print(round($elapsed/max($plain, 0.01), 2))") of the plain report"
    done
    [ "$parts" = changes ] && exit 0
fi

# Reports (issue 9): every `report` format over a journal of REPORT_ROWS rows (default 300,000),
# beside sqlite3's own CSV export of the columns the report reads, from the same journal. The
# journal is the 1,000,000-row run's when the sizes match, else a run of its own at 0 ms.
report_rows=${REPORT_ROWS:-300000}
if [ "$parts" = all ] && [ "$report_rows" = "$big_rows" ]; then
    report_journal="$work/big.sqlite"
else
    python3 bench/make_input.py "$report_rows" >"$work/report-input.csv"
    measure report-run "$bin" run "$work/report-input.csv" --journal "$work/report.sqlite" \
        --base-url "$sim_url" --key-env BENCH_KEY --concurrency 64 --quiet >/dev/null
    report_journal="$work/report.sqlite"
fi
rows=$(sqlite3 -readonly "$report_journal" "SELECT (SELECT count(*) FROM items) + (SELECT count(*) FROM rejections)")
# As before the rerun: the journal's writeback must not land in the reports' own fsync.
sync
report_line() { # label elapsed rss_kb
    echo "$1 over $rows rows: ${2}s = $(python3 -c "print(round($rows/max($2, 0.01)))") rows/s, peak RSS $(($3 / 1024)) MB"
}
# Each format twice: into a file with --output (written beside it, fsync'd and renamed into place,
# so a crash never leaves half a report), and to /dev/null, which leaves out the disk: on a shared
# VM its write-back moves the first figure by half. sqlite3's export is timed both ways too.
for format in jsonl csv table; do
    /usr/bin/time -f "%e %M" -o "$work/time" "$bin" report --journal "$report_journal" --format "$format" \
        --output "$work/report.$format" 2>"$work/report-$format.err" || { cat "$work/report-$format.err" >&2; exit 1; }
    read -r elapsed rss <"$work/time"
    report_line "report --format $format --output F" "$elapsed" "$rss"
    /usr/bin/time -f "%e %M" -o "$work/time" "$bin" report --journal "$report_journal" --format "$format" \
        >/dev/null 2>"$work/report-$format.err" || { cat "$work/report-$format.err" >&2; exit 1; }
    read -r elapsed rss <"$work/time"
    report_line "report --format $format > /dev/null" "$elapsed" "$rss"
done
columns="SELECT profile_id, original_transaction_id, status, code, http_status, attempts, last_source, updated_at,
    restored_at, profile_state, access_levels, message FROM items_readable ORDER BY id"
/usr/bin/time -f "%e %M" -o "$work/time" sqlite3 -readonly -csv "$report_journal" "$columns" >"$work/report.sqlite3.csv"
read -r elapsed rss <"$work/time"
report_line "sqlite3 -csv, the same columns > F" "$elapsed" "$rss"
/usr/bin/time -f "%e %M" -o "$work/time" sqlite3 -readonly -csv "$report_journal" "$columns" >/dev/null
read -r elapsed rss <"$work/time"
report_line "sqlite3 -csv, the same columns > /dev/null" "$elapsed" "$rss"
