#!/usr/bin/env bash
# A long soak of the lifecycle model test (Tests/EndToEndTests/Lifecycle): many random sequences
# of runs, stops, second runs and reports against the real binary, in batches, then a tally.
#
#   bash scripts/soak.sh [SEQUENCES] [STEPS]      # default 200 sequences of 24 steps
#   MODEL_SKIP=known bash scripts/soak.sh 500     # leave out the known-broken rules
#   MODEL_SEED_BASE=N bash scripts/soak.sh        # first seed (default: from the clock)
#
# A failing sequence prints its seed, the steps and the broken rules; replay one with
#   SEED=<n> MODEL_STEPS=<steps> swift test --skip-build --filter LifecycleModelTests
# Exits 1 when any sequence failed.
set -euo pipefail
cd "$(dirname "$0")/.."

sequences="${1:-200}"
steps="${2:-24}"
batch=20
base="${MODEL_SEED_BASE:-$(($(date +%s) % 100000 * 1000))}"
log=".build/soak-$base.log"

# The same flags as scripts/test.sh, so the two do not rebuild each other's products.
swift build --build-tests -Xswiftc -warnings-as-errors >/dev/null
: >"$log"
echo "soak: $sequences sequences of $steps steps from seed $base${MODEL_SKIP:+, MODEL_SKIP=$MODEL_SKIP}; log $log"
passed_sequences=0
passed_steps=0
done_sequences=0
while [ "$done_sequences" -lt "$sequences" ]; do
    count=$((sequences - done_sequences < batch ? sequences - done_sequences : batch))
    MODEL_SEQUENCES="$count" MODEL_STEPS="$steps" MODEL_SEED_BASE="$((base + done_sequences))" \
        swift test --skip-build --filter LifecycleModelTests >>"$log" 2>&1 || true
    line=$(grep -E '^lifecycle model: [0-9]+ of [0-9]+ sequences' "$log" | tail -n 1)
    if [ -z "$line" ]; then
        echo "soak: the test did not finish a batch; see $log" >&2
        exit 2
    fi
    passed_sequences=$((passed_sequences + $(echo "$line" | sed -E 's/^lifecycle model: ([0-9]+) of.*/\1/')))
    passed_steps=$((passed_steps + $(echo "$line" | sed -E 's/.* ([0-9]+) steps passed.*/\1/')))
    done_sequences=$((done_sequences + count))
    echo "  $done_sequences/$sequences: $line"
done

failed=$((sequences - passed_sequences))
echo "== tally: $passed_sequences of $sequences sequences passed, $passed_steps steps passed, $failed failed"
if [ "$failed" -gt 0 ]; then
    echo "failing seeds (first broken rule of each):"
    grep -A1 -E '^lifecycle model: seed [0-9]+ failed' "$log" | grep -vE '^(↳|--)' | paste - - |
        sed -E 's/^lifecycle model: seed ([0-9]+) failed at step ([0-9]+) of [0-9]+:[[:space:]]+! /  seed \1, step \2: /' |
        cut -c1-160
    echo "broken rules by known problem (rules, not sequences):"
    grep -oE '^  ! \[[^]]+\]' "$log" | sort | uniq -c | sed -E 's/  ! //'
    exit 1
fi
