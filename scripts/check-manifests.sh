#!/usr/bin/env bash
# Validates the Kubernetes manifests in jobs/ against the official schemas with
# `kubernetes-validate --strict` (an unknown or misspelt field is an error), for the oldest
# Kubernetes they need (1.33: backoffLimitPerIndex and podFailurePolicy are GA there) and a
# current one (1.37). kubernetes-validate comes from the Python package index, through pip, into a
# virtual environment under .build/ (Debian's pip refuses system installs) and carries the
# schemas: validating needs no network once it is installed.
#
#   bash scripts/check-manifests.sh
#
# Exits 69 (EX_UNAVAILABLE) when pip cannot fetch it: whether the index can be reached is asked of
# pip itself (`pip download`), which knows its index, proxy and mirror settings; no host is probed.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=.build/kubernetes-validate
if ! [ -x "$venv/bin/kubernetes-validate" ]; then
    python3 -m venv "$venv"
    wheels=$(mktemp -d)
    trap 'rm -rf "$wheels"' EXIT
    if ! "$venv/bin/pip" download --quiet --disable-pip-version-check --no-deps -d "$wheels" \
        'kubernetes-validate==1.37.0'; then
        echo "check-manifests: pip cannot fetch kubernetes-validate (its message is above); nothing was validated" >&2
        exit 69
    fi
    "$venv/bin/pip" install --quiet --disable-pip-version-check 'kubernetes-validate==1.37.0'
fi
for version in 1.33.0 1.37.0; do
    "$venv/bin/kubernetes-validate" --strict --quiet --kubernetes-version "$version" jobs/*.yaml
    echo "jobs/*.yaml: valid for Kubernetes $version (strict)"
done
