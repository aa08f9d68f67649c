#!/usr/bin/env bash
# The project's test command (README.md; .ci/run runs it after installing packages):
# format lint, a build where any warning fails, every unit, loopback and end-to-end test
# (swift test), the concurrency suites under ThreadSanitizer, and a bounded fuzz run of the
# input readers. Set QUICK=1 to stop after swift test.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "== swift format lint --strict"
swift format lint --strict -r Sources Tests Fuzz
echo "== generated docs are current (docs/lifecycle.md, docs/botsi-restore.1)"
bash scripts/docs.sh --check
echo "== swift build --build-tests (warnings are errors)"
swift build --build-tests -Xswiftc -warnings-as-errors
echo "== swift test"
swift test --skip-build 2>&1 | tee .build/swift-test.log
passed=$(grep -oE 'Test run with [0-9]+ tests' .build/swift-test.log | grep -oE '[0-9]+' | tail -n 1)
summary="tests: ${passed:-0} passed, 0 failed"
if [ "${QUICK:-0}" = 1 ]; then echo "$summary"; exit 0; fi
echo "== thread sanitizer over the concurrency suites"
bash scripts/sanitize.sh thread
echo "== fuzz the input readers: ${FUZZ_SECONDS:-60} s each for csv, jsonl, dialect; half that for the rest"
bash scripts/fuzz.sh "${FUZZ_SECONDS:-60}" csv jsonl dialect
bash scripts/fuzz.sh "$(((${FUZZ_SECONDS:-60} + 1) / 2))" utf16 jsonarray jws receipt
# The closing line CI reads: swift test's own count (a failure above has already stopped the script).
echo "$summary"
