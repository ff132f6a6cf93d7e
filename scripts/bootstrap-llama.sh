#!/usr/bin/env bash
# Makes build/llama-venv: llama.cpp (through llama-cpp-python, built from PyPI's sdist)
# plus the oracles tests/llama/ compares against. Safe to run again; cheap when done.
#
# Building llama.cpp takes 10-15 minutes on 2 cores, so the wheel is built once and kept
# in two places: build/wheels/ (this clone) and $LC_WHEEL_CACHE (default
# $HOME/.cache/libconvert/wheels, shared by every clone on the machine, so CI does not
# rebuild it). Either copy is used when present; the other is refilled from it.
set -euo pipefail
cd "$(dirname "$0")/.."

LLAMA_VERSION=0.3.36
VENV=build/llama-venv
REQ=scripts/llama/requirements.txt
LOCAL=build/wheels
CACHE=${LC_WHEEL_CACHE:-$HOME/.cache/libconvert/wheels}
PYTHON=${PYTHON:-python3}
name="llama_cpp_python-$LLAMA_VERSION-py3-none-linux_$(uname -m).whl"

mkdir -p "$LOCAL"
mkdir -p "$CACHE" 2>/dev/null || true
if [ ! -s "$LOCAL/$name" ] && [ -s "$CACHE/$name" ]; then
    echo "bootstrap-llama: using the cached wheel $CACHE/$name"
    cp "$CACHE/$name" "$LOCAL/$name.part" && mv "$LOCAL/$name.part" "$LOCAL/$name"
fi
if [ ! -s "$LOCAL/$name" ]; then
    echo "bootstrap-llama: building llama-cpp-python==$LLAMA_VERSION from PyPI's sdist" \
         "(once; 10-15 min on 2 cores; log in build/llama-wheel.log)"
    start=$(date +%s)
    # CPU only: the judge compares files, speed does not matter; GGML_NATIVE stays
    # on (the default) because the wheel never leaves the machine that built it.
    if ! CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-2} \
         CMAKE_ARGS="${CMAKE_ARGS:--DGGML_CUDA=OFF -DGGML_METAL=OFF -DGGML_VULKAN=OFF}" \
         "$PYTHON" -m pip wheel -v --disable-pip-version-check --no-deps \
             --no-binary llama-cpp-python "llama-cpp-python==$LLAMA_VERSION" \
             -w "$LOCAL" > build/llama-wheel.log 2>&1; then
        tail -n 40 build/llama-wheel.log >&2
        echo "bootstrap-llama: building the wheel failed (full log: build/llama-wheel.log)" >&2
        exit 1
    fi
    echo "bootstrap-llama: wheel built in $(( $(date +%s) - start )) s"
fi
if [ -d "$CACHE" ] && [ ! -s "$CACHE/$name" ]; then
    # Copy then rename, so a concurrent clone never sees half a wheel.
    cp "$LOCAL/$name" "$CACHE/$name.$$.part" && mv "$CACHE/$name.$$.part" "$CACHE/$name" || true
fi

# The venv is rebuilt when the requirements or the wheel change.
stamp="$VENV/.stamp"
want=$(cat "$REQ" "$LOCAL/$name" | sha256sum | cut -d' ' -f1)
if [ ! -x "$VENV/bin/python" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    echo "bootstrap-llama: creating $VENV"
    rm -rf "$VENV"
    "$PYTHON" -m venv "$VENV"
    "$VENV/bin/pip" install -q --disable-pip-version-check -r "$REQ" "$LOCAL/$name"
    "$VENV/bin/python" -c \
        "import llama_cpp; print('bootstrap-llama: llama_cpp', llama_cpp.__version__)"
    echo "$want" > "$stamp"
fi
