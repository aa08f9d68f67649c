#!/usr/bin/env bash
# Validates the Kubernetes manifests in jobs/ against the official schemas with
# `kubernetes-validate --strict` (an unknown or misspelt field is an error), for the oldest
# Kubernetes they need (1.33: backoffLimitPerIndex and podFailurePolicy are GA there) and a
# current one (1.37). kubernetes-validate comes from PyPI into a virtual environment under .build/
# (Debian's pip refuses system installs) and carries the schemas: validating needs no network.
#
#   bash scripts/check-manifests.sh
set -euo pipefail
cd "$(dirname "$0")/.."
venv=.build/kubernetes-validate
if ! [ -x "$venv/bin/kubernetes-validate" ]; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check 'kubernetes-validate==1.37.0'
fi
for version in 1.33.0 1.37.0; do
    "$venv/bin/kubernetes-validate" --strict --quiet --kubernetes-version "$version" jobs/*.yaml
    echo "jobs/*.yaml: valid for Kubernetes $version (strict)"
done
