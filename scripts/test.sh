#!/usr/bin/env bash
# The project's test command (README.md; .ci/run runs it after installing packages):
# format lint, a build where any warning fails, every unit, loopback and end-to-end test
# (swift test), the concurrency suites under ThreadSanitizer, and a bounded fuzz run of the
# input readers. Set QUICK=1 to stop after swift test.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "== swift format lint --strict"
swift format lint --strict -r Sources Tests Fuzz
echo "== swift build --build-tests (warnings are errors)"
swift build --build-tests -Xswiftc -warnings-as-errors
echo "== swift test"
swift test --skip-build 2>&1 | tee .build/swift-test.log
passed=$(grep -oE 'Test run with [0-9]+ tests' .build/swift-test.log | grep -oE '[0-9]+' | tail -n 1)
summary="tests: ${passed:-0} passed, 0 failed"
if [ "${QUICK:-0}" = 1 ]; then echo "$summary"; exit 0; fi
echo "== thread sanitizer over the concurrency suites"
bash scripts/sanitize.sh thread
echo "== fuzz the CSV and JSON-lines readers, ${FUZZ_SECONDS:-60} s each"
bash scripts/fuzz.sh "${FUZZ_SECONDS:-60}"
# The closing line CI reads: swift test's own count (a failure above has already stopped the script).
echo "$summary"
