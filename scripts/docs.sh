#!/usr/bin/env bash
# Generated documents: docs/lifecycle.md (from the outcome policy's table) and
# docs/botsi-restore.1 (from the option table).
#
#   bash scripts/docs.sh           # regenerate them
#   bash scripts/docs.sh --check   # fail when a checked-in copy differs from what the code says (CI)
set -euo pipefail
cd "$(dirname "$0")/.."
swift build --product botsi-docs >/dev/null
bin="$(swift build --show-bin-path)/botsi-docs"
status=0
for pair in "lifecycle:docs/lifecycle.md" "man:docs/botsi-restore.1"; do
    name="${pair%%:*}"
    file="${pair#*:}"
    if [ "${1:-}" = "--check" ]; then
        if ! "$bin" "$name" | diff -u "$file" - >/dev/null 2>&1; then
            echo "$file is stale: run 'bash scripts/docs.sh' and commit the result" >&2
            "$bin" "$name" | diff -u "$file" - | head -40 >&2 || true
            status=1
        fi
    else
        "$bin" "$name" >"$file"
        echo "wrote $file"
    fi
done
exit $status
