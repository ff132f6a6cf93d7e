#!/usr/bin/env bash
# Runs every tests/cli/*.sh with $LC_BIN on PATH and a scratch $TMPDIR each.
# A test passes when it exits 0. Prints "N passed, N failed".
set -u
dir=${1:-tests/cli}
: "${LC_BIN:?LC_BIN must name the folder with the built tools}"
mkdir -p "$LC_BIN"
export LC_BIN=$(cd "$LC_BIN" && pwd)
export LC_ROOT=$(pwd)
export PATH="$LC_BIN:$PATH"
pass=0; fail=0
for t in "$dir"/*.sh; do
    [ -e "$t" ] || continue
    scratch=$(mktemp -d)
    if (cd "$scratch" && TMPDIR="$scratch" bash "$LC_ROOT/$t") > "$scratch.log" 2>&1; then
        pass=$((pass + 1))
    else
        fail=$((fail + 1))
        echo "FAIL: $t"
        sed 's/^/    /' "$scratch.log" | tail -n 30
    fi
    rm -rf "$scratch" "$scratch.log"
done
echo "cli: $pass passed, $fail failed"
[ "$fail" = 0 ]
