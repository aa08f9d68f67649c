#!/usr/bin/env bash
# Installs the Debian/Ubuntu packages botsi-restore needs, with sudo only when not already root
# (a container or a root-only machine has no sudo). The Swift 6.3 toolchain itself comes from
# swift.org.
#
#   bash scripts/install-deps.sh              # to build and run: the C libraries' headers
#   bash scripts/install-deps.sh --test       # also what scripts/test.sh and its tests call
#   bash scripts/install-deps.sh --package    # also what scripts/package.sh, test-package.sh and
#                                             # check-manifests.sh call
set -euo pipefail

packages=(libsqlite3-dev libcurl4-openssl-dev zlib1g-dev libssl-dev)
for argument in "$@"; do
    case $argument in
        # sqlite3, openssl, gzip, bsdutils (script): test fixtures; util-linux: setpriv and flock
        # for the cron wrapper's tests; systemd: systemd-analyze for the units' tests; zsh, fish:
        # the completion scripts' tests; groff: the man page's test; python3: the proxy tests;
        # prometheus (promtool), prometheus-pushgateway: the metrics tests; chromium (headless) and
        # fonts-dejavu-core: the tests that open report --format html in a browser and take its screenshot.
        --test)
            packages+=(sqlite3 openssl gzip bsdutils util-linux systemd zsh fish groff python3)
            packages+=(prometheus prometheus-pushgateway chromium fonts-dejavu-core)
            ;;
        --package) packages+=(dpkg-dev binutils gzip mmdebstrap podman python3-venv ca-certificates) ;;
        *)
            echo "usage: bash scripts/install-deps.sh [--test] [--package]" >&2
            exit 64
            ;;
    esac
done

as_root=()
if [ "$(id -u)" != 0 ]; then
    if ! command -v sudo >/dev/null; then
        echo "install-deps: not root and no sudo: run it as root, or install sudo" >&2
        exit 77
    fi
    as_root=(sudo)
fi
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${packages[@]}"
echo "install-deps: installed ${packages[*]}"
