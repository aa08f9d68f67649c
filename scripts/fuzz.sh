#!/usr/bin/env bash
# Fuzzes the input readers and parsers (Sources/BotsiInput) with libFuzzer and AddressSanitizer.
#
#   bash scripts/fuzz.sh [SECONDS] [TARGET ...]   # each target runs SECONDS (default 60)
#
# Targets (default: all): csv and jsonl (the readers as a run opens them), dialect (CSV with each
# delimiter, encoding, header and bundle/environment option), utf16 (CSV behind a UTF-16 byte-order
# mark), jsonarray (JSON arrays), jws (StoreKit 2 signed transactions) and receipt (App Store
# receipts through libcrypto). Each target is the BotsiInput sources plus
# Fuzz/InputFuzzHarness.swift and one entry file, compiled by swiftc into one module with
# -sanitize=fuzzer,address and linked with libcrypto and BotsiBasics (built first, the same way,
# as a static library BotsiInput imports). SwiftPM is not used: libFuzzer brings its own main, and
# the harness uses the reader's internal read-size knob.
# The seeds in Tests/FuzzCorpus/<format>/ are read, never written; what the fuzzer discovers goes
# to .build/fuzz/corpus/<format>/ and is reused by the next local run.
# A crash, a memory error or leak, a hang past -timeout or memory past -rss_limit_mb fails the
# script, and the input that caused it is left in .build/fuzz/artifacts/ (add it to the seed
# corpus together with the fix and a regression test in Tests/BotsiInputTests).
set -euo pipefail
cd "$(dirname "$0")/.."

seconds="${1:-60}"
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then targets=(csv jsonl dialect utf16 jsonarray jws receipt); fi
work=".build/fuzz"
mkdir -p "$work/artifacts"

# The harness reads each input from memory with a read size and a record limit picked from its
# length (reads of 1, 7, 4096 bytes or whole windows, at least 4096 over 16 KB; records of 48 B,
# 300 B or 1 MiB), so short inputs already cross every read boundary. 160 KB leaves room for the
# 10,000-column seed. Memory per input stays small: reaching 2 GB RSS means a leak.
fuzz_flags=(
    -max_total_time="$seconds"
    -max_len=160000
    -rss_limit_mb=2048
    -malloc_limit_mb=1024
    -timeout=10
    -use_value_profile=1
    -print_final_stats=1
)

# BotsiInput imports BotsiBasics: one instrumented static library and module for every target.
basics="$work/basics"
build_basics() {
    if [ -f "$basics/libBotsiBasics.a" ] && [ -z "$(find Sources/BotsiBasics -newer "$basics/libBotsiBasics.a" -type f)" ]; then
        return
    fi
    echo "== building BotsiBasics for the fuzz targets"
    mkdir -p "$basics"
    if ! swiftc -sanitize=fuzzer,address -parse-as-library -O -g -swift-version 6 \
        -module-name BotsiBasics -emit-module -emit-module-path "$basics/BotsiBasics.swiftmodule" \
        -emit-library -static -o "$basics/libBotsiBasics.a" Sources/BotsiBasics/*.swift \
        >"$work/build-basics.log" 2>&1; then
        cat "$work/build-basics.log"
        exit 1
    fi
}

build() {
    local name="$1" entry="$2"
    local binary="$work/fuzz-$name"
    if [ -x "$binary" ] && [ -z "$(find Sources/BotsiInput Sources/BotsiBasics Sources/CCrypto Fuzz -newer "$binary" -type f)" ]; then
        echo "== fuzz target $name is up to date"
        return
    fi
    echo "== building fuzz target $name"
    if ! swiftc -sanitize=fuzzer,address -parse-as-library -O -g -swift-version 6 \
        -module-name BotsiInput -I "$basics" -L "$basics" -lBotsiBasics \
        -Xcc -fmodule-map-file=Sources/CZlib/module.modulemap \
        -Xcc -fmodule-map-file=Sources/CCrypto/module.modulemap \
        Sources/BotsiInput/*.swift Fuzz/InputFuzzHarness.swift "Fuzz/$entry" -lz -lcrypto \
        -o "$binary" >"$work/build-$name.log" 2>&1; then
        cat "$work/build-$name.log"
        exit 1
    fi
    # The linker's "Cannot export local symbol '__asan_…'" warnings are noise from the sanitizer
    # runtime; anything else the compiler says is shown.
    grep -v "Cannot export local symbol" "$work/build-$name.log" || true
}

run() {
    local name="$1"
    local corpus="$work/corpus/$name"
    mkdir -p "$corpus"
    echo "== fuzzing $name for ${seconds}s (seeds: Tests/FuzzCorpus/$name)"
    local log="$work/run-$name.log"
    local status=0
    "$work/fuzz-$name" "${fuzz_flags[@]}" -dict="Fuzz/$name.dict" \
        -artifact_prefix="$work/artifacts/$name-" "$corpus" "Tests/FuzzCorpus/$name" >"$log" 2>&1 || status=$?
    local executions new_units
    executions=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
    new_units=$(grep -o 'stat::new_units_added: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
    if [ "$status" -ne 0 ]; then
        tail -n 60 "$log"
        echo "FUZZ FAILURE in $name (exit $status); the input is in $work/artifacts/ — full log: $log"
        exit 1
    fi
    echo "$name: ${seconds}s, $executions inputs executed, $new_units new coverage inputs," \
        "corpus now $(find "$corpus" -type f | wc -l) files (+ $(find "Tests/FuzzCorpus/$name" -type f | wc -l) seeds)"
}

entry() {
    case "$1" in
    csv) echo CSVFuzzTarget.swift ;;
    jsonl) echo JSONLinesFuzzTarget.swift ;;
    dialect) echo DialectFuzzTarget.swift ;;
    utf16) echo UTF16FuzzTarget.swift ;;
    jsonarray) echo JSONArrayFuzzTarget.swift ;;
    jws) echo SignedTransactionFuzzTarget.swift ;;
    receipt) echo ReceiptFuzzTarget.swift ;;
    *) echo "unknown fuzz target '$1' (csv jsonl dialect utf16 jsonarray jws receipt)" >&2; exit 64 ;;
    esac
}
build_basics
for name in "${targets[@]}"; do build "$name" "$(entry "$name")"; done
for name in "${targets[@]}"; do run "$name"; done
