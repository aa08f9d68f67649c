#!/usr/bin/env bash
# Writes a small journal with the binary of a released version, checked in with the input that
# made it, so that tests prove today's code reads (and upgrades) what that version wrote:
# Tests/Fixtures/journals/<version>/{input.csv,journal.sqlite,made-by.txt}.
#
#   BOTSI_BIN=/path/to/old/botsi-restore bash scripts/make-journal-fixtures.sh VERSION
#
# Build the old binary from its commit in a worktree outside the project, e.g.
#   git worktree add /tmp/old c6f06ff && (cd /tmp/old && swift build -c release)
#   BOTSI_BIN=/tmp/old/.build/release/botsi-restore bash scripts/make-journal-fixtures.sh c6f06ff
# Three runs: one that finishes (restored, nothing_to_restore, profile_not_found, rejected rows),
# one against a failing server (rows left pending, exit 75), and one whose window ends (stopped).
set -euo pipefail
cd "$(dirname "$0")/.."
version=${1:?usage: BOTSI_BIN=... bash scripts/make-journal-fixtures.sh VERSION}
bin=${BOTSI_BIN:?set BOTSI_BIN to the binary of that version}
out=Tests/Fixtures/journals/$version
work=$(mktemp -d /tmp/botsi-journal-fixture.XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
mkdir -p "$out"

start_simulator() { # name, then simulate options -> sets url
    "$bin" simulate --port 0 --key fixture-key "${@:2}" >"$work/$1.out" 2>&1 &
    for _ in $(seq 100); do
        url=$(grep -o 'http://127.0.0.1:[0-9]*' "$work/$1.out" | head -n1 || true)
        [ -n "$url" ] && return 0
        sleep 0.1
    done
    echo "simulator did not start" >&2
    exit 1
}

{
    echo "profileId,originalTransactionId"
    tail -n +2 samples/subscriptions.csv | cut -d, -f1,2
    echo "7d6c5b4a-3f2e-4d1c-8b0a-9f8e7d6c5b4a,2000000512345736"
    echo ",2000000512345747"
    echo "2b3c4d5e-6f7a-4b8c-9d0e-1f2a3b4c5d6e,2.00000051234575E+15"
} >"$out/input.csv"
{
    echo "profileId,originalTransactionId"
    echo "9a8b7c6d-5e4f-4a3b-2c1d-0e9f8a7b6c5d,2000000512345762"
    echo "4e5f6a7b-8c9d-4e0f-a1b2-c3d4e5f6a7b8,2000000512345773"
} >"$work/more.csv"
export BOTSI_SECRET_KEY=fixture-key
journal="$work/journal.sqlite"
start_simulator good --latency 0
good=$url
start_simulator failing --latency 0 --fault-rate 1 --faults 500
failing=$url
start_simulator slow --latency 400
slow=$url
run() { "$bin" run "$@" --journal "$journal" --concurrency 2 --quiet 2>/dev/null && echo "exit 0" || echo "exit $?"; }
{
    echo "made by: $("$bin" --version) on $(date -u +%Y-%m-%d)"
    echo "1. run input.csv against the simulator: $(run "$out/input.csv" --base-url "$good")"
    echo "2. run more.csv against a server failing every request, --max-attempts 1: $(run "$work/more.csv" \
        --base-url "$failing" --max-attempts 1)"
    echo "3. run input.csv --refresh-older-than 0s against a slow server, --max-duration 1s: $(run \
        "$out/input.csv" --base-url "$slow" --refresh-older-than 0s --max-duration 1s)"
} >"$out/made-by.txt" 2>&1
sqlite3 "$journal" "PRAGMA wal_checkpoint(TRUNCATE);" >/dev/null
cp "$journal" "$out/journal.sqlite"
# The input path in the journal is the one the run was given: keep it relative to the project.
echo "wrote $out: $(sqlite3 "$out/journal.sqlite" 'SELECT count(*) FROM items') rows, $(sqlite3 "$out/journal.sqlite" 'SELECT count(*) FROM runs') runs"
