#!/usr/bin/env bash
# Report output of two binaries, byte for byte, on the same journals: every format, filter and
# form (plain, --status, --code, --run, --since, --changes in each --since-run/--run form,
# --conflicts), to stdout and with --output. The journals are made by OLD against the simulator:
# faults and retries, rejected rows, conflicts (--on-conflict send and hold), hostile text in ids
# and messages, refreshes and several runs. Exits 1 on the first difference, naming it.
#
#   bash scripts/compare-reports.sh OLD_BINARY NEW_BINARY
set -euo pipefail
cd "$(dirname "$0")/.."
old=${1:?usage: bash scripts/compare-reports.sh OLD_BINARY NEW_BINARY}
new=${2:?usage: bash scripts/compare-reports.sh OLD_BINARY NEW_BINARY}
work=$(mktemp -d /tmp/botsi-reports.XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null || true; [ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
export BOTSI_SECRET_KEY=compare-key

start_simulator() { # name, then simulate options -> sets url
    "$old" simulate --port 0 --key compare-key "${@:2}" >"$work/$1.out" 2>&1 &
    for _ in $(seq 100); do
        url=$(grep -o 'http://127.0.0.1:[0-9]*' "$work/$1.out" | head -n1 || true)
        [ -n "$url" ] && return 0
        sleep 0.1
    done
    echo "simulator did not start" >&2
    exit 1
}
start_simulator good --latency 0
good=$url
start_simulator faulty --latency 0 --fault-rate 0.3 --faults 500,503,reset,truncated --seed 5
faulty=$url

python3 bench/make_input.py 3000 >"$work/bulk.csv"
# Conflicts (one transaction, two profiles), rejected rows, and hostile text in ids.
{
    echo "profileId,originalTransactionId"
    echo "alice,2000000000000012"
    echo "bob,2000000000000012"
    echo "=cmd|' /C calc'!A0,2000000000000023"
    echo "\"quote\"\"d, id\",2000000000000034"
    echo "tab	id,2000000000000045"
    echo "ünïcödé-ид-名前,2000000000000056"
    echo ",2000000000000067"
    echo "sci,2.00000000000001E+15"
    echo "bidi‮evil,2000000000000078"
} >"$work/odd.csv"
run() { "$old" run "$@" --concurrency 8 --quiet --backoff-base 0.01 --backoff-cap 0.05 >/dev/null 2>&1 || true; }
run "$work/bulk.csv" --journal "$work/a.sqlite" --base-url "$faulty" --max-attempts 1
run "$work/odd.csv" --journal "$work/a.sqlite" --base-url "$good"
run "$work/bulk.csv" --journal "$work/a.sqlite" --base-url "$good" --max-attempts 2
run "$work/bulk.csv" --journal "$work/a.sqlite" --base-url "$faulty" --max-attempts 1 --refresh-older-than 0s
run "$work/odd.csv" --journal "$work/b.sqlite" --base-url "$good" --on-conflict hold
run "$work/bulk.csv" --journal "$work/b.sqlite" --base-url "$faulty" --max-attempts 3 --retry-failed

# A NEW of a later schema reads its own copy, upgraded by its `upgrade` (sending nothing), so the
# comparison also proves that an upgrade changes no report.
for journal in "$work/a.sqlite" "$work/b.sqlite"; do
    sqlite3 "$journal" ".backup '${journal%.sqlite}-new.sqlite'"
    if "$new" upgrade --help >/dev/null 2>&1; then
        "$new" upgrade --journal "${journal%.sqlite}-new.sqlite" 2>/dev/null
    fi
done

compared=0
check() { # journal, then report arguments
    local journal=$1
    shift
    "$old" report --journal "$journal" "$@" >"$work/old.out" 2>"$work/old.err" || echo "exit $?" >>"$work/old.err"
    "$new" report --journal "${journal%.sqlite}-new.sqlite" "$@" >"$work/new.out" 2>"$work/new.err" ||
        echo "exit $?" >>"$work/new.err"
    # Messages name the journal they read.
    sed -i "s|${journal%.sqlite}-new.sqlite|$journal|g" "$work/new.err"
    if ! cmp -s "$work/old.out" "$work/new.out" || ! cmp -s "$work/old.err" "$work/new.err"; then
        echo "DIFFERENT: report --journal $(basename "$journal") $*" >&2
        diff <(head -c 2000 "$work/old.out"; cat "$work/old.err") <(head -c 2000 "$work/new.out"; cat "$work/new.err") | head -20 >&2
        exit 1
    fi
    compared=$((compared + 1))
}
for journal in "$work/a.sqlite" "$work/b.sqlite"; do
    for format in jsonl csv table; do
        for filter in "" "--status restored" "--status pending --status failed" "--code http_500" "--run latest" \
            "--run 1" "--status rejected" "--since 1h" "--changes" "--changes --since-run 1 --run 2" \
            "--changes --since-run 1" "--changes --run 3" "--conflicts"; do
            # shellcheck disable=SC2086
            check "$journal" --format "$format" $filter
        done
        "$old" report --journal "$journal" --format "$format" --output "$work/old.file" >/dev/null 2>&1
        "$new" report --journal "${journal%.sqlite}-new.sqlite" --format "$format" --output "$work/new.file" \
            >/dev/null 2>&1
        cmp -s "$work/old.file" "$work/new.file" || { echo "DIFFERENT: --output, $format" >&2; exit 1; }
        compared=$((compared + 1))
    done
done
echo "reports identical: $compared comparisons over 2 journals ($("$old" --version) vs $("$new" --version))"
