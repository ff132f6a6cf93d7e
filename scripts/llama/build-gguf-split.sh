#!/usr/bin/env bash
# Builds llama.cpp's own gguf-split (tools/gguf-split, target llama-gguf-split) from the
# llama-cpp-python sdist the judge's wheel is built from, so that tests/llama/ can hold
# our gguf-split and every writer's --split-max-* output to it byte for byte.
#
#   scripts/llama/build-gguf-split.sh DEST     build once; install the binary as DEST
#
# The same pinned sources and the same non-native ISA flags as the wheel
# (scripts/bootstrap-llama.sh passes them in JUDGE_CMAKE_ARGS), static libraries, and only
# the one target with what it links (ggml, llama, llama-common): 5-10 minutes on 2 cores,
# once. The binary is kept in build/llama-bin/KEY/ and $LC_WHEEL_CACHE/../bin/KEY/ (KEY:
# a hash of the version, this recipe and the flags), like the wheel.
set -euo pipefail
cd "$(dirname "$0")/../.."

LLAMA_VERSION=${LLAMA_VERSION:-0.3.36}
PYTHON=${PYTHON:-python3}
ARGS=${JUDGE_CMAKE_ARGS:?set by scripts/bootstrap-llama.sh}
RECIPE=1
KEY=$(printf '%s\n' "$LLAMA_VERSION" "gguf-split $RECIPE" "$ARGS" | sha256sum | cut -c1-16)
LOCAL=build/llama-bin/$KEY
CACHE=${LC_WHEEL_CACHE:-$HOME/.cache/libconvert/wheels}/../bin/$KEY
BIN=llama-gguf-split

DEST=${1:?usage: $0 DEST}

if [ ! -x "$LOCAL/$BIN" ] && [ -x "$CACHE/$BIN" ]; then
    mkdir -p "$LOCAL"
    cp "$CACHE/$BIN" "$LOCAL/$BIN.part" && mv "$LOCAL/$BIN.part" "$LOCAL/$BIN"
fi
if [ ! -x "$LOCAL/$BIN" ]; then
    work=build/llama-split-src
    log=build/llama-gguf-split.log
    echo "bootstrap-llama: building llama.cpp's gguf-split (once; 5-10 min on 2 cores; log in $log)"
    start=$(date +%s)
    rm -rf "$work" && mkdir -p "$work"
    # The sdist pip would build the wheel from: the same pinned llama.cpp tree.
    if ! "$PYTHON" -m pip download -q --disable-pip-version-check --no-deps --no-binary :all: \
            "llama-cpp-python==$LLAMA_VERSION" -d "$work" > "$log" 2>&1; then
        tail -n 20 "$log" >&2
        echo "bootstrap-llama: cannot download the llama-cpp-python sdist" >&2; exit 1
    fi
    tar -xzf "$work"/llama_cpp_python-"$LLAMA_VERSION".tar.gz -C "$work"
    src=$work/llama_cpp_python-$LLAMA_VERSION/vendor/llama.cpp
    # shellcheck disable=SC2086  # ARGS is a list of -D flags
    if ! { cmake -S "$src" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
               -DBUILD_SHARED_LIBS=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
               -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_TOOLS=ON -DLLAMA_OPENSSL=OFF \
               -DLLAMA_BUILD_APP=OFF -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF $ARGS &&
           nice -n 10 cmake --build "$work/build" --target "$BIN" \
               -j "${CMAKE_BUILD_PARALLEL_LEVEL:-2}"; } >> "$log" 2>&1; then
        tail -n 40 "$log" >&2
        echo "bootstrap-llama: building llama.cpp's gguf-split failed (full log: $log)" >&2
        exit 1
    fi
    mkdir -p "$LOCAL"
    cp "$work/build/bin/$BIN" "$LOCAL/$BIN.part" && mv "$LOCAL/$BIN.part" "$LOCAL/$BIN"
    rm -rf "$work"
    echo "bootstrap-llama: gguf-split built in $(( $(date +%s) - start )) s"
fi
if [ ! -x "$CACHE/$BIN" ] && mkdir -p "$CACHE" 2>/dev/null; then
    cp "$LOCAL/$BIN" "$CACHE/$BIN.$$.part" && mv "$CACHE/$BIN.$$.part" "$CACHE/$BIN" || true
fi
cp "$LOCAL/$BIN" "$DEST.part" && mv "$DEST.part" "$DEST"
