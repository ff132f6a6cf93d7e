#!/usr/bin/env bash
# Installs what `make check-neon` needs, once; safe to run again, cheap when done.
#  - Debian's AArch64 cross compiler and qemu-user (apt-get when root, otherwise a message
#    naming the missing packages).
#  - Criterion's arm64 runtime (libcriterion3 and the libraries it links), fetched as
#    Debian packages with `apt-get download` and unpacked into build/neon/sysroot: no
#    arm64 package is installed on the host (that would pin every shared library to the
#    arm64 one's version). Needs the arm64 architecture known to apt: added when root.
#  - build/neon/include/criterion: the host's Criterion headers (they hold no
#    architecture-specific code), so the cross compiler sees them and nothing else of
#    /usr/include.
set -euo pipefail
cd "$(dirname "$0")/.."

DEB_PACKAGES="gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user"
# libcriterion3:arm64 and what it loads (Debian 12), without libc6/libgcc-s1, which the
# cross toolchain's sysroot (/usr/aarch64-linux-gnu) provides to qemu.
ARM64_RUNTIME="libcriterion3 libffi8 libgit2-1.5 libnanomsg5 libhttp-parser2.9 libmbedcrypto7
    libmbedtls14 libmbedx509-1 libpcre2-8-0 zlib1g libssh2-1 libssl3 libgssapi-krb5-2
    libkrb5-3 libk5crypto3 libkrb5support0 libcom-err2 libkeyutils1"
SYSROOT=build/neon/sysroot

missing=""
for p in $DEB_PACKAGES; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
need_arch=0
dpkg --print-foreign-architectures | grep -qx arm64 || need_arch=1
if [ -n "$missing" ] || [ "$need_arch" = 1 ]; then
    if [ "$(id -u)" != 0 ]; then
        [ "$need_arch" = 1 ] && missing="$missing (and the arm64 architecture in apt)"
        echo "bootstrap-neon: missing Debian packages:$missing" >&2
        echo "bootstrap-neon: run as root: dpkg --add-architecture arm64 && apt-get update &&" \
             "apt-get install$missing" >&2
        exit 1
    fi
    export DEBIAN_FRONTEND=noninteractive
    [ "$need_arch" = 1 ] && dpkg --add-architecture arm64
    echo "bootstrap-neon: installing Debian packages:$missing"
    apt-get update -qq
    [ -n "$missing" ] && apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi

stamp="$SYSROOT/.packages"
want=$(echo $ARM64_RUNTIME | tr -s ' ')
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    echo "bootstrap-neon: unpacking Criterion's arm64 runtime into $SYSROOT"
    rm -rf "$SYSROOT" build/neon/debs
    mkdir -p "$SYSROOT" build/neon/debs
    if ! (cd build/neon/debs && apt-get download -qq $(printf '%s:arm64 ' $ARM64_RUNTIME)); then
        apt-get update -qq 2>/dev/null || true          # a stale index: once more
        (cd build/neon/debs && apt-get download -qq $(printf '%s:arm64 ' $ARM64_RUNTIME))
    fi
    for d in build/neon/debs/*.deb; do dpkg-deb -x "$d" "$SYSROOT"; done
    echo "$want" > "$stamp"
fi

mkdir -p build/neon/include
[ -e build/neon/include/criterion ] || ln -s /usr/include/criterion build/neon/include/criterion
