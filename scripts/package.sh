#!/usr/bin/env bash
# Release tarballs for x86-64 and AArch64 in build/dist/:
#   libqkv-<version>-<arch>-linux.tar.gz: include/qkv.h, lib/libqkv.a, lib/libqkv.so*,
#   lib/pkgconfig/qkv.pc (prefix-relative), README.md, LICENSE
# Stripped release builds, no tests or benchmarks. AArch64 needs gcc-aarch64-linux-gnu.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
version=$(sed -n "s/^  version: '\([^']*\)'.*/\1/p" meson.build | head -1)
dist=$root/build/dist
mkdir -p "$dist"

package() {
    local arch=$1
    shift
    local work=$root/build/package-$arch stage=$root/build/package-$arch/stage
    local name=libqkv-$version-$arch-linux
    rm -rf "$work"
    meson setup "$work/build" --buildtype=release --strip --prefix=/ --libdir=lib \
        -Dtests=disabled -Dbench=disabled "$@" >"$work.log" 2>&1 || { cat "$work.log"; exit 1; }
    ninja -C "$work/build" >>"$work.log" 2>&1 || { tail -30 "$work.log"; exit 1; }
    DESTDIR="$stage/$name" meson install -C "$work/build" --quiet
    # pkg-config: make the file relocatable (prefix relative to the .pc file)
    sed -i 's|^prefix=.*|prefix=${pcfiledir}/../..|' "$stage/$name/lib/pkgconfig/qkv.pc"
    cp README.md LICENSE "$stage/$name/"
    tar -C "$stage" -czf "$dist/$name.tar.gz" "$name"
    echo "$dist/$name.tar.gz"
    (cd "$stage/$name" && ls -l lib/libqkv.a lib/libqkv.so.*.*.* | awk '{print "  " $5 " bytes  " $9}')
}

package x86_64
if command -v aarch64-linux-gnu-gcc >/dev/null; then
    package aarch64 --cross-file "$root/scripts/cross/aarch64.ini"
else
    echo "skipping aarch64: gcc-aarch64-linux-gnu is not installed" >&2
fi
