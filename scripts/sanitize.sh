#!/usr/bin/env bash
# Runs the concurrency-heavy test suites under ThreadSanitizer (CI calls this).
#
#   bash scripts/sanitize.sh            # thread sanitizer over the concurrency tests
#   bash scripts/sanitize.sh address    # address sanitizer over the whole test suite
#   bash scripts/sanitize.sh thread all # thread sanitizer over the whole test suite
#
# Builds in its own scratch path (.build/sanitize-<kind>) so the normal debug build is not
# thrown away. Any sanitizer report fails the run: TSan exits 66 when it reported anything, and
# halt_on_error makes ASan stop at the first error. Suppressions are in
# scripts/tsan-suppressions.txt, each with its reason.
set -euo pipefail
cd "$(dirname "$0")/.."

kind="${1:-thread}"
scope="${2:-concurrency}"
scratch=".build/sanitize-$kind"

# The suites where several threads meet: the runner's queue with the curl driver thread and the
# simulator's Dispatch sources, the client against a loopback server, the journal read while
# written.
filter=(--filter 'BotsiRestoreTests|BotsiAPITests|BotsiSimulatorTests|BotsiJournalTests.JournalReaderWriterTests')
if [ "$scope" = "all" ] || [ "$kind" = "address" ]; then filter=(); fi

case "$kind" in
thread)
    export TSAN_OPTIONS="suppressions=$PWD/scripts/tsan-suppressions.txt halt_on_error=0 exitcode=66 ${TSAN_OPTIONS:-}"
    ;;
address)
    # Leak checking is off: the Swift runtime's metadata caches and Dispatch's global queues live
    # until exit by design and would be reported as leaks.
    export ASAN_OPTIONS="detect_leaks=0 halt_on_error=1 ${ASAN_OPTIONS:-}"
    ;;
*)
    echo "usage: $0 [thread|address] [all]" >&2
    exit 64
    ;;
esac

# Tests that measure request timing skip themselves under this variable (see PacingTests.swift).
export BOTSI_UNDER_SANITIZER=1
started=$(date +%s)
echo "== swift build --build-tests --sanitize=$kind"
swift build --build-tests --sanitize="$kind" --scratch-path "$scratch"
echo "== swift test --sanitize=$kind ${filter[*]}"
log="$scratch/sanitize-test.log"
status=0
swift test --skip-build --sanitize="$kind" --scratch-path "$scratch" "${filter[@]}" 2>&1 | tee "$log" || status=$?
reports=$(grep -c -E "WARNING: ThreadSanitizer|ERROR: AddressSanitizer" "$log" || true)
echo "== $kind sanitizer: exit $status, $reports report(s), $(($(date +%s) - started)) s"
if [ "$status" -ne 0 ] || [ "$reports" -ne 0 ]; then
    echo "sanitizer run failed; the reports are in $log" >&2
    exit 1
fi
