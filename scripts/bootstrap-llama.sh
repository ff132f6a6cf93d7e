#!/usr/bin/env bash
# Makes build/llama-venv: llama.cpp (through llama-cpp-python, built from PyPI's sdist)
# plus the oracles tests/llama/ compares against. Safe to run again; cheap when done.
#
#   scripts/bootstrap-llama.sh                  build (once) and install the judge, check it runs
#   scripts/bootstrap-llama.sh --wheel-path     print where the wheel for today's flags lives
#   scripts/bootstrap-llama.sh --check-wheel W  exit 1 (one line) if wheel W holds AMX code
#
# Building llama.cpp takes 10-15 minutes on 2 cores, so the wheel is built once and kept
# in two places: build/wheels/KEY/ (this clone) and $LC_WHEEL_CACHE/KEY/ (default
# $HOME/.cache/libconvert/wheels, shared by every clone on the machine, so CI does not
# rebuild it). Either copy is used when present; the other is refilled from it.
#
# Why the ISA is spelled out (not -march=native): ggml's native build compiles its AMX
# kernels in (tileloadd, tilezero, ...) whenever CPUID advertises AMX, and the Xeon VMs
# CI runs on advertise it while their hypervisor traps the instructions: the first model
# evaluation died with SIGILL and every test after it. The judge compares files and
# logits, not speed, so it is built for x86-64 with AVX2/FMA/F16C (every machine of this
# kind has them) and AMX and AVX-512 off, and runs the same on any of them. KEY is a hash
# of these flags: a wheel built with other flags (the old native ones among them, kept
# at build/wheels/ or the cache's top level) is never picked up, and each wheel is still
# disassembled before use and refused if it holds an AMX instruction. pip's own cache of
# built wheels is keyed by the sdist alone, not by CMAKE_ARGS, so it is bypassed.
set -euo pipefail
[ "${1:-}" = --check-wheel ] && [ -n "${2:-}" ] && set -- "$1" "$(realpath "$2")"
cd "$(dirname "$0")/.."

LLAMA_VERSION=0.3.36
VENV=build/llama-venv
REQ=scripts/llama/requirements.txt
PYTHON=${PYTHON:-python3}
name="llama_cpp_python-$LLAMA_VERSION-py3-none-linux_$(uname -m).whl"

common="-DGGML_CUDA=OFF -DGGML_METAL=OFF -DGGML_VULKAN=OFF"
case "$(uname -m)" in
    x86_64) isa="-DGGML_NATIVE=OFF -DGGML_SSE42=ON -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_BMI2=ON"
            isa="$isa -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AVX_VNNI=OFF -DGGML_AVX512=OFF"
            isa="$isa -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF" ;;
    *)      isa="" ;;  # no AMX elsewhere: ggml's native build is safe there
esac
JUDGE_CMAKE_ARGS=${CMAKE_ARGS:-"$common $isa"}
# The recipe's version goes into the key too: bump it when the build changes otherwise.
RECIPE=2
KEY=$(printf '%s\n' "$LLAMA_VERSION" "$RECIPE" "$JUDGE_CMAKE_ARGS" | sha256sum | cut -c1-16)
LOCAL=build/wheels/$KEY
CACHE=${LC_WHEEL_CACHE:-$HOME/.cache/libconvert/wheels}/$KEY

# AMX instructions (tile loads/stores/config, the tile dot products) in any shared
# object of wheel $1: exit 1 with one line when there are some.
check_wheel() {
    local whl=$1 tmp hits
    tmp=$(mktemp -d)
    if ! "$PYTHON" -m zipfile -e "$whl" "$tmp" 2>/dev/null; then
        rm -rf "$tmp"
        echo "bootstrap-llama: $whl: not a readable wheel" >&2; return 1
    fi
    hits=$(find "$tmp" -name '*.so*' -type f -print0 |
           xargs -0 -r objdump -d --no-show-raw-insn 2>/dev/null |
           grep -c -E '\s(tileloadd|tileloaddt1|tilestored|tilezero|tilerelease|ldtilecfg|sttilecfg|tdpb[su][su]d|tdpbf16ps|tdpfp16ps)(\s|$)' || true)
    rm -rf "$tmp"
    if [ "$hits" -gt 0 ]; then
        echo "bootstrap-llama: $whl: holds $hits AMX instructions (a native build on a CPU that advertises AMX); not used" >&2
        return 1
    fi
}

case "${1:-}" in
    --wheel-path) echo "$LOCAL/$name"; exit 0 ;;
    --check-wheel) check_wheel "$2"; exit $? ;;
    "") ;;
    *) echo "usage: $0 [--wheel-path | --check-wheel WHEEL]" >&2; exit 2 ;;
esac

command -v objdump >/dev/null || { echo "bootstrap-llama: needs objdump (binutils)" >&2; exit 1; }
mkdir -p "$LOCAL"
mkdir -p "$CACHE" 2>/dev/null || true
# Each copy is disassembled once (8 s); the stamp beside it holds the sum it was checked at.
checked() {
    local w=$1 sum
    sum=$(sha256sum "$w" | cut -d' ' -f1)
    [ "$(cat "$w.no-amx" 2>/dev/null)" = "$sum" ] && return 0
    check_wheel "$w" || return 1
    echo "$sum" > "$w.no-amx"
}
for w in "$LOCAL/$name" "$CACHE/$name"; do
    if [ -s "$w" ] && ! checked "$w"; then rm -f "$w" "$w.no-amx"; fi
done
if [ ! -s "$LOCAL/$name" ] && [ -s "$CACHE/$name" ]; then
    echo "bootstrap-llama: using the cached wheel $CACHE/$name"
    cp "$CACHE/$name" "$LOCAL/$name.part" && mv "$LOCAL/$name.part" "$LOCAL/$name"
fi
if [ ! -s "$LOCAL/$name" ]; then
    echo "bootstrap-llama: building llama-cpp-python==$LLAMA_VERSION from PyPI's sdist" \
         "(once; 10-15 min on 2 cores; log in build/llama-wheel.log)"
    echo "bootstrap-llama: CMAKE_ARGS=$JUDGE_CMAKE_ARGS"
    start=$(date +%s)
    if ! CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-2} \
         CMAKE_ARGS="$JUDGE_CMAKE_ARGS" \
         "$PYTHON" -m pip wheel -v --disable-pip-version-check --no-deps --no-cache-dir \
             --no-binary llama-cpp-python "llama-cpp-python==$LLAMA_VERSION" \
             -w "$LOCAL" > build/llama-wheel.log 2>&1; then
        tail -n 40 build/llama-wheel.log >&2
        echo "bootstrap-llama: building the wheel failed (full log: build/llama-wheel.log)" >&2
        exit 1
    fi
    echo "bootstrap-llama: wheel built in $(( $(date +%s) - start )) s"
    checked "$LOCAL/$name" || { rm -f "$LOCAL/$name"; exit 1; }
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

# llama.cpp's own gguf-split beside it (tests/llama/test_gguf_split.py), from the same
# sdist and flags; built once (5-10 min), then copied from its cache.
JUDGE_CMAKE_ARGS="$JUDGE_CMAKE_ARGS" PYTHON="$PYTHON" \
    scripts/llama/build-gguf-split.sh "$VENV/bin/llama-gguf-split"

# The judge's own sanity check, every time (under a second): a tiny model loaded and a
# few tokens evaluated in a process of its own. If llama.cpp cannot run on this CPU, that
# is said once here, naming the signal, instead of by every test that loads a model.
set +e
"$VENV/bin/python" scripts/llama/judge_sanity.py fixtures/hf-ref/llama-spm-f32.gguf
rc=$?
set -e
if [ "$rc" -gt 128 ]; then
    sig=$(kill -l $((rc - 128)) 2>/dev/null || echo "$((rc - 128))")
    echo "bootstrap-llama: the judge died with SIG$sig evaluating a tiny model" \
         "(fixtures/hf-ref/llama-spm-f32.gguf): llama.cpp cannot run on this CPU as built" >&2
    exit 1
elif [ "$rc" -ne 0 ]; then
    echo "bootstrap-llama: the judge could not evaluate a tiny model (exit $rc)" >&2
    exit 1
fi
