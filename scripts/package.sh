#!/usr/bin/env bash
# Builds dist/botsi-restore_<version>_<arch>.deb with dpkg-deb:
#   /usr/bin/botsi-restore                 release build, Swift runtime linked in (--static-swift-stdlib), stripped
#   /usr/share/man/man1/botsi-restore.1.gz docs/botsi-restore.1
#   bash, zsh and fish completions         printed by `botsi-restore completion bash|zsh|fish`
#   /usr/lib/systemd/system/               botsi-restore-nightly.service and .timer (cron/)
#   /usr/share/botsi-restore/demo.csv      the demo's sample (not under doc/, which slim images drop)
#   /usr/share/doc/botsi-restore/          README.md, copyright, examples/cron and examples/jobs
# Depends: is what dpkg-shlibdeps derives from the libraries the binary links, plus ca-certificates
# (libcurl verifies Botsi's certificate against them) — never a hand-written list.
#
#   bash scripts/package.sh      # the .deb's path is the last line printed
#
# Needs the Swift toolchain, dpkg-dev (dpkg-shlibdeps), binutils (strip) and gzip.
set -euo pipefail
cd "$(dirname "$0")/.."

build=(swift build -c release --static-swift-stdlib --disable-local-rpath)
echo "== ${build[*]} --product botsi-restore"
"${build[@]}" --product botsi-restore
binary="$("${build[@]}" --show-bin-path)/botsi-restore"
read -r _ version < <("$binary" --version)
arch=$(dpkg --print-architecture)
name=botsi-restore_${version}_${arch}
stage=$PWD/.build/package/$name
rm -rf "$stage"

# install_file MODE SOURCE DEST: DEST is relative to the package root.
install_file() { install -D -m "$1" "$2" "$stage/$3"; }

echo "== staging $name"
umask 022
mkdir -p "$stage/DEBIAN" "$stage/usr/bin"
strip --strip-unneeded -o "$stage/usr/bin/botsi-restore" "$binary"
chmod 0755 "$stage/usr/bin/botsi-restore"

[ -f docs/botsi-restore.1 ] || { echo "package.sh: docs/botsi-restore.1 is missing (scripts/docs.sh writes it)" >&2; exit 1; }
mkdir -p "$stage/usr/share/man/man1"
gzip -9n <docs/botsi-restore.1 >"$stage/usr/share/man/man1/botsi-restore.1.gz"
chmod 0644 "$stage/usr/share/man/man1/botsi-restore.1.gz"

completions=(
    "bash:usr/share/bash-completion/completions/botsi-restore"
    "zsh:usr/share/zsh/vendor-completions/_botsi-restore"
    "fish:usr/share/fish/vendor_completions.d/botsi-restore.fish"
)
for pair in "${completions[@]}"; do
    shell=${pair%%:*}
    mkdir -p "$(dirname "$stage/${pair#*:}")"
    if ! "$stage/usr/bin/botsi-restore" completion "$shell" >"$stage/${pair#*:}" || ! [ -s "$stage/${pair#*:}" ]; then
        echo "package.sh: 'botsi-restore completion $shell' printed no script" >&2
        exit 1
    fi
    chmod 0644 "$stage/${pair#*:}"
done

for unit in botsi-restore-nightly.service botsi-restore-nightly.timer; do
    install_file 0644 "cron/$unit" "usr/lib/systemd/system/$unit"
done
install_file 0644 samples/demo.csv usr/share/botsi-restore/demo.csv

doc=usr/share/doc/botsi-restore
install_file 0644 README.md "$doc/README.md"
for file in cron/*; do
    case $file in *.sh) mode=0755 ;; *) mode=0644 ;; esac
    install_file "$mode" "$file" "$doc/examples/$file"
done
for file in jobs/*; do install_file 0644 "$file" "$doc/examples/$file"; done

# The copyright file ends with the toolchain's license (Apache-2.0 with the Runtime Library
# Exception) for the Swift libraries linked into the binary, as a DEP-5 license paragraph.
toolchain_license="$(dirname "$(readlink -f "$(command -v swift)")")/../share/swift/LICENSE.txt"
[ -f "$toolchain_license" ] || { echo "package.sh: the toolchain's $toolchain_license is missing" >&2; exit 1; }
{
    cat packaging/copyright
    echo
    echo "License: Apache-2.0 with Runtime Library Exception"
    sed -e 's/^[[:space:]]*$/./' -e 's/^/ /' "$toolchain_license"
} >"$stage/$doc/copyright"
chmod 0644 "$stage/$doc/copyright"

echo "== dpkg-shlibdeps"
# dpkg-shlibdeps reads debian/control from the working directory: give it a minimal one.
shlibs_dir=$(mktemp -d)
trap 'rm -rf "$shlibs_dir"' EXIT
mkdir "$shlibs_dir/debian"
printf 'Source: botsi-restore\n\nPackage: botsi-restore\nArchitecture: any\n' >"$shlibs_dir/debian/control"
shlibs=$(cd "$shlibs_dir" && dpkg-shlibdeps -O -e"$stage/usr/bin/botsi-restore")
depends=${shlibs#shlibs:Depends=}
[ -n "$depends" ] && [ "$depends" != "$shlibs" ] || { echo "package.sh: dpkg-shlibdeps gave '$shlibs'" >&2; exit 1; }
depends="$depends, ca-certificates"

cat >"$stage/DEBIAN/control" <<EOF
Package: botsi-restore
Version: $version
Architecture: $arch
Maintainer: ${DEB_MAINTAINER:-botsi-restore maintainers <botsi-restore@example.com>}
Installed-Size: $(du -sk --exclude=DEBIAN "$stage" | cut -f1)
Depends: $depends
Section: utils
Priority: optional
Description: restore App Store purchases in bulk through Botsi
 botsi-restore reads CSV or JSON-lines files of (profileId, originalTransactionId)
 pairs, sends each to Botsi's restore endpoint with bounded concurrency, retries
 what is transient, and records every outcome in a SQLite journal, so a rerun
 continues where the last one stopped and never repeats finished work. Made for
 nightly cron jobs or systemd timers, bulk migrations and audits.
EOF

mkdir -p dist
rm -f dist/botsi-restore_*.deb
# zstd: seconds where xz takes a minute and a half; every dpkg that can install this package
# (its libc6 >= 2.35 means bookworm or later) reads it.
dpkg-deb --root-owner-group -Zzstd --build "$stage" "dist/$name.deb" >/dev/null
echo "== contents"
dpkg-deb --info "dist/$name.deb" | sed -n '/Package:/,/Description:/p'
echo "dist/$name.deb"
