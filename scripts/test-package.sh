#!/usr/bin/env bash
# Proves the .deb on a clean Debian bookworm, and the image built from Containerfile:
#  1. mmdebstrap makes a minimal bookworm root, as slim as debian:bookworm-slim (no docs but
#     copyright files, no man pages, no locales), from the Debian mirror this machine uses;
#  2. apt installs the .deb into it, so only what the package declares comes along; every library
#     the binary links must come from a package its Depends: names, and ldd must resolve them all;
#  3. inside it (chroot, /proc mounted): --version, `demo` from /, and a `run` against
#     `botsi-restore simulate`, then `report`;
#  4. podman builds the Containerfile on that same clean root, imported as a local image
#     (--pull=never: no registry), and the demo runs in the image's filesystem as uid 10001.
#
#   bash scripts/test-package.sh [DEB]    # default: dist/botsi-restore_*.deb (scripts/package.sh)
#
# Needs root, mmdebstrap, podman, binutils (readelf) and network access to the Debian mirror.
# KEEP=1 keeps the work directory and the images for a look afterwards.
set -euo pipefail
cd "$(dirname "$0")/.."

fail() {
    echo "test-package: FAILED: $*" >&2
    exit 1
}
step() { printf '== %s (%ds)\n' "$1" "$SECONDS"; }

[ "$(id -u)" = 0 ] || fail "needs root (mmdebstrap, chroot, mount, podman)"
if [ $# -ge 1 ]; then deb=$1; else
    debs=(dist/botsi-restore_*.deb)
    [ -f "${debs[0]}" ] || fail "no dist/botsi-restore_*.deb: run bash scripts/package.sh first"
    deb=${debs[0]}
fi
deb=$(readlink -f "$deb")
version=$(dpkg-deb -f "$deb" Version)
tag=$$
base_image=localhost/botsi-restore-test-base:$tag
image=localhost/botsi-restore-test:$tag
work=$(mktemp -d /var/tmp/botsi-restore-package-test.XXXXXX)
root=$work/root
mounts=()
simulator=""
image_mounted=""

cleanup() {
    local status=$?
    [ -z "$simulator" ] || kill "$simulator" 2>/dev/null || true
    for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do umount "${mounts[i]}" 2>/dev/null || umount -l "${mounts[i]}" || true; done
    [ -z "$image_mounted" ] || podman image unmount "$image" >/dev/null 2>&1 || true
    if [ "${KEEP:-0}" = 1 ]; then
        echo "kept: $work, images $base_image and $image"
    else
        podman rmi -f "$image" "$base_image" >/dev/null 2>&1 || true
        rm -rf "$work"
    fi
    exit $status
}
trap cleanup EXIT
mount_in() { # mount_in TARGET mount-args...
    local target=$1
    shift
    mount "$@" "$target"
    mounts+=("$target")
}

step "the package holds the binary, man page, completions, units, sample and examples"
contents=$(dpkg-deb --contents "$deb" | awk '{ print $NF }')
for path in usr/bin/botsi-restore usr/share/man/man1/botsi-restore.1.gz \
    usr/share/bash-completion/completions/botsi-restore usr/share/zsh/vendor-completions/_botsi-restore \
    usr/share/fish/vendor_completions.d/botsi-restore.fish usr/lib/systemd/system/botsi-restore-nightly.service \
    usr/lib/systemd/system/botsi-restore-nightly.timer usr/share/botsi-restore/demo.csv \
    usr/share/doc/botsi-restore/copyright usr/share/doc/botsi-restore/examples/cron/botsi-restore-cron.sh \
    usr/share/doc/botsi-restore/examples/jobs/kubernetes-nightly.yaml; do
    grep -qx "./$path" <<<"$contents" || fail "the package lacks /$path"
done
dpkg-deb -f "$deb" Depends | grep -q 'ca-certificates' || fail "Depends: lacks ca-certificates"

step "mmdebstrap: a minimal bookworm root"
# The mirror (and security suite) this machine's apt uses.
sources=()
for file in /etc/apt/sources.list.d/debian.sources /etc/apt/sources.list; do
    if [ -s "$file" ] && grep -q '^[^#]' "$file"; then sources=("$file"); break; fi
done
slim=(
    --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright'
    --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/groff/*'
    --dpkgopt='path-exclude=/usr/share/info/*' --dpkgopt='path-exclude=/usr/share/lintian/*'
    --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-include=/usr/share/locale/locale.alias'
    --aptopt='Dir::Cache::pkgcache ""' --aptopt='Dir::Cache::srcpkgcache ""'
)
mmdebstrap --quiet --variant=minbase "${slim[@]}" bookworm "$root" "${sources[@]}"

step "import the clean root as $base_image"
tar -C "$root" -c . | podman import --quiet - "$base_image" >/dev/null

step "apt installs $(basename "$deb") into the clean root"
in_root() { env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 "$@"; }
cp "$deb" "$root/tmp/botsi-restore.deb"
cp -L /etc/resolv.conf "$root/etc/resolv.conf"
mount_in "$root/proc" -t proc proc
in_root chroot "$root" apt-get update -qq
in_root DEBIAN_FRONTEND=noninteractive chroot "$root" apt-get install -y -qq --no-install-recommends \
    /tmp/botsi-restore.deb >"$work/apt.log" 2>&1 || { cat "$work/apt.log"; fail "apt could not install the package"; }

step "every library the binary links comes from a package Depends: names"
declared=$(dpkg-deb -f "$deb" Depends | tr ',' '\n' | sed -e 's/([^)]*)//g' -e 's/[[:space:]]//g')
package_of() { # the package that owns PATH inside the root (merged /usr: try the other spelling too)
    local path=$1 real
    real=$(chroot "$root" readlink -f "$path")
    local found
    for candidate in "$path" "$real" "${path#/usr}" "/usr$path" "${real#/usr}"; do
        found=$(chroot "$root" dpkg-query --search "$candidate" 2>/dev/null) || continue
        echo "${found%%:*}"
        return 0
    done
    return 1
}
binary=$root/usr/bin/botsi-restore
for soname in $(readelf -d "$binary" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
    path=$(chroot "$root" ldconfig -p | awk -v s="$soname" '$1 == s && !found { print $NF; found = 1 }')
    [ -n "$path" ] || fail "the binary needs $soname, which nothing installed provides"
    owner=$(package_of "$path") || fail "no package owns $path ($soname)"
    grep -qx "$owner" <<<"$declared" || fail "$soname comes from $owner, which Depends: does not name (${declared//$'\n'/, })"
    echo "  $soname: $owner"
done
if in_root chroot "$root" ldd /usr/bin/botsi-restore | grep 'not found'; then fail "ldd cannot resolve every library"; fi

step "botsi-restore --version, demo and a run against simulate, inside the root"
out=$(in_root chroot "$root" botsi-restore --version)
[ "$out" = "botsi-restore $version" ] || fail "--version printed '$out', expected 'botsi-restore $version'"
in_root chroot "$root" sh -c 'cd / && botsi-restore demo' >"$work/demo.out" 2>&1 || { cat "$work/demo.out"; fail "demo failed"; }
grep -q "demo: see every row with:  botsi-restore report" "$work/demo.out" || { cat "$work/demo.out"; fail "the demo's hints do not name botsi-restore"; }

key=package-test-key-$tag # a throwaway key both sides share
# Not through the in_root function: a backgrounded function is a subshell, and killing it would
# leave the simulator running. env and chroot exec, so $! is the simulator itself.
env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
    chroot "$root" botsi-restore simulate --port 0 --key "$key" >"$work/simulate.out" 2>&1 &
simulator=$!
for _ in $(seq 1 100); do grep -q 'listening on' "$work/simulate.out" && break; sleep 0.1; done
port=$(sed -n 's|.*listening on http://127.0.0.1:\([0-9]*\).*|\1|p' "$work/simulate.out")
[ -n "$port" ] || { cat "$work/simulate.out"; fail "botsi-restore simulate did not start"; }
# The journal in a directory only its user can write, as botsi-restore requires (not /tmp, 1777).
mkdir -m 700 "$root/root/package-test"
in_root BOTSI_SECRET_KEY="$key" chroot "$root" botsi-restore run /usr/share/botsi-restore/demo.csv \
    --base-url "http://127.0.0.1:$port" --journal /root/package-test/journal.sqlite --quiet >"$work/run.out" 2>&1 ||
    { cat "$work/run.out"; fail "run against the simulator failed"; }
restored=$(in_root chroot "$root" botsi-restore report --journal /root/package-test/journal.sqlite --status restored --format csv | tail -n +2 | wc -l)
[ "$restored" -gt 0 ] || fail "report lists no restored row"
kill "$simulator"
wait "$simulator" || true
simulator=""
echo "  run: exit 0, $restored rows restored"

step "podman builds Containerfile on the clean root"
podman build --quiet --isolation chroot --pull=never --build-arg BASE="$base_image" -f Containerfile -t "$image" . >/dev/null
user=$(podman image inspect --format '{{.Config.User}}' "$image")
entrypoint=$(podman image inspect --format '{{join .Config.Entrypoint " "}}' "$image")
[ "$user" = "10001:10001" ] || fail "the image runs as '$user', not 10001:10001"
[ "$entrypoint" = "botsi-restore" ] || fail "the image's entrypoint is '$entrypoint'"

step "the demo in the image's filesystem as uid 10001"
mnt=$(podman image mount "$image")
image_mounted=1
[ -f "$mnt/usr/share/botsi-restore/demo.csv" ] || fail "the slim image lost the demo's sample"
[ ! -e "$mnt/usr/share/man/man1/botsi-restore.1.gz" ] || fail "the image is not slim: man pages are installed"
mount_in "$mnt/proc" -t proc proc
mount_in "$mnt/tmp" -t tmpfs -o mode=1777 tmpfs
in_root HOME=/var/lib/botsi-restore chroot --userspec=10001:10001 "$mnt" botsi-restore demo >"$work/image-demo.out" 2>&1 ||
    { cat "$work/image-demo.out"; fail "the demo failed in the image as uid 10001"; }
grep -q "were retried, and still ended restored\|demo: see every row with" "$work/image-demo.out" || fail "the demo in the image printed no summary"
size=$(podman image inspect --format '{{.Size}}' "$image")
echo "  image: $((size / 1024 / 1024)) MB, user $user, entrypoint $entrypoint"

step "passed"
