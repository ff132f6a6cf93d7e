#!/usr/bin/env bash
# Puts what scripts/device/cuda-check.sh runs into .dev/ (ignored; carried by the device
# call): the CUDA=1 build's tools, test drivers and unit tests, stripped, and every shared
# object they link but libc's own.
set -euo pipefail
cd "$(dirname "$0")/../.."
make -s CUDA=1 all build/cuda/unit-tests
rm -rf .dev && mkdir -p .dev/bin .dev/test-bin .dev/lib
for f in build/cuda/bin/*; do strip -o ".dev/bin/$(basename "$f")" "$f"; done
for t in lc-cuda-check lc-cuda-bench lc-peak; do strip -o ".dev/test-bin/$t" "build/cuda/test-bin/$t"; done
strip -o .dev/unit-tests build/cuda/unit-tests
ldd .dev/unit-tests .dev/bin/* | awk '/=> \// {print $3}' | sort -u |
    grep -v -E '/(libc|libm|libpthread|libdl|librt|libresolv|ld-linux[^/]*)\.so' |
    while read -r so; do cp -L "$so" .dev/lib/; done
grep -qx '/.dev/' .git/info/exclude 2>/dev/null || echo '/.dev/' >> .git/info/exclude
du -sh .dev
