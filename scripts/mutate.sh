#!/usr/bin/env bash
# Mutation testing by hand-written mutants (docs/testing.md): each is the smallest change to one
# line of the code, and a suite that still passes with it in place does not test that line.
#
# usage: bash scripts/mutate.sh LIST [OUT]
#   LIST: one mutant per line, four fields separated by tabs:
#         FILE  OLD  NEW  FILTER
#         FILE is relative to the repository; OLD must occur exactly once in it and is replaced by
#         NEW ("\n" in either is a line break; NEW "-" deletes OLD); FILTER is `swift test --filter`'s
#         regular expression (suite or test names). Lines starting with # are skipped.
#   OUT:  where the results go, one line per mutant (default: stdout only).
# Environment: SCRATCH, the build directory (default .build/mutate, apart from the usual one, so
# the normal build stays warm); MUTATE_TIMEOUT, seconds a test run may take (default 900: a mutant
# that hangs the suite is counted killed, as CI's time limit would catch it).
#
# Each mutant is built with warnings as errors (a mutant that does not compile says so) and the
# filter run against it; the file is put back after each, and on Ctrl-C. Do not edit the tree
# while it runs: the builds would take your edit along.
set -uo pipefail
cd "$(dirname "$0")/.."
list="${1:?usage: scripts/mutate.sh LIST [OUT]}"
out="${2:-/dev/null}"
scratch="${SCRATCH:-.build/mutate}"
keep=$(mktemp)
current=""
restore() { if [ -n "$current" ]; then cp "$keep" "$current"; current=""; fi; }
trap 'restore; rm -f "$keep"; exit 130' INT TERM
trap 'restore; rm -f "$keep"' EXIT

lived=0 killed=0 other=0
while IFS=$'\t' read -r file old new filter; do
    case "$file" in '' | '#'*) continue ;; esac
    old=$(printf '%b' "$old")
    if [ "$new" = "-" ]; then new=""; else new=$(printf '%b' "$new"); fi
    count=$(OLD="$old" perl -0777 -ne 'my $n = () = /\Q$ENV{OLD}\E/g; print $n' "$file")
    if [ "$count" != 1 ]; then
        result="skip: OLD occurs $count times"
    else
        cp "$file" "$keep"
        current="$file"
        OLD="$old" NEW="$new" perl -0777 -i -pe 's/\Q$ENV{OLD}\E/$ENV{NEW}/' "$file"
        if ! swift build --build-tests -Xswiftc -warnings-as-errors --scratch-path "$scratch" >"$keep.build" 2>&1; then
            result="no build"
        elif timeout "${MUTATE_TIMEOUT:-900}" swift test --skip-build --scratch-path "$scratch" --filter "$filter" \
            >"$keep.test" 2>&1; then
            result="LIVED"
        else
            result="killed"
        fi
        restore
    fi
    case "$result" in LIVED) lived=$((lived + 1)) ;; killed) killed=$((killed + 1)) ;; *) other=$((other + 1)) ;; esac
    line="$result | $file | $(printf '%s' "$old" | head -c 80 | tr '\n' ' ') -> $(printf '%s' "$new" | head -c 80 | tr '\n' ' ')"
    echo "$line" | tee -a "$out"
done <"$list"
rm -f "$keep.build" "$keep.test"
echo "mutants: $killed killed, $lived lived, $other skipped or not built" | tee -a "$out"
