#!/usr/bin/env bash
# The project's test command (README.md; .ci/run runs it after installing packages):
# format lint, a build where any warning fails, then every unit, loopback and end-to-end test.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "== swift format lint --strict"
swift format lint --strict -r Sources Tests
echo "== swift build --build-tests (warnings are errors)"
swift build --build-tests -Xswiftc -warnings-as-errors
echo "== swift test"
swift test --skip-build
