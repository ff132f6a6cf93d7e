#!/usr/bin/env bash
# Installs what building and testing libconvert needs, once; safe to run again.
#  - Debian packages: apt-get when root, otherwise a message naming the missing ones.
#  - A Python venv under build/venv with the test oracles (scripts/requirements.txt);
#    never a system-wide pip install.
set -euo pipefail
cd "$(dirname "$0")/.."

DEB_PACKAGES="gcc make clang libclang-rt-14-dev libcjson-dev zlib1g-dev libcriterion-dev pkg-config python3 python3-venv parallel"
VENV=build/venv
REQ=scripts/requirements.txt

missing=""
for p in $DEB_PACKAGES; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
    if [ "$(id -u)" = 0 ]; then
        echo "bootstrap: installing Debian packages:$missing"
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq
        apt-get install -y -qq --no-install-recommends $missing >/dev/null
    else
        echo "bootstrap: missing Debian packages:$missing" >&2
        echo "bootstrap: run as root: apt-get install$missing" >&2
        exit 1
    fi
fi

# The venv is rebuilt only when requirements.txt changes.
stamp="$VENV/.requirements.sha256"
want=$(sha256sum "$REQ" | cut -d' ' -f1)
if [ ! -x "$VENV/bin/python" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    echo "bootstrap: creating $VENV with the test oracles from PyPI"
    mkdir -p build
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install -q --disable-pip-version-check -r "$REQ"
    echo "$want" > "$stamp"
fi
