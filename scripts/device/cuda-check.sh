#!/usr/bin/env bash
# The CUDA back end on a lent GPU machine, in one call that fits a short lease: what
# `make check-cuda` and `make bench-cuda` do, from binaries built here (that machine has
# no Debian packages, no criterion, no cJSON: scripts/device/bundle.sh puts the CUDA=1
# build, stripped, and the shared objects it links into .dev/, which the call carries).
# Each step has its own time limit and log under $OUT; a summary table comes last.
set -u
cd "$(dirname "$0")/../.."
D=.dev
export LD_LIBRARY_PATH=$PWD/$D/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
OUT=${OUT:-/tmp/cuda-out}; mkdir -p "$OUT"
SAN=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
summary=()
step() {  # step NAME LIMIT_S CMD...
    local name=$1 limit=$2; shift 2
    local t0=$(date +%s%N) rc
    timeout "$limit" "$@" > "$OUT/$name.log" 2>&1; rc=$?
    local ms=$(( ($(date +%s%N) - t0) / 1000000 ))
    summary+=("$(printf '%-10s rc=%-3s %6d ms  %s' "$name" "$rc" "$ms" "$(tail -n 1 "$OUT/$name.log" | cut -c1-110)")")
}
{ nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv; nproc; } > "$OUT/machine.log" 2>&1
step probe 20 $D/test-bin/lc-cuda-check probe
step kernels 45 $D/test-bin/lc-cuda-check kernels
step variants 45 env LC_TEST_REQUIRE_CUDA=1 LC_FIXTURES=fixtures $D/unit-tests --jobs 1 --filter 'quant_variants/*'
if [ -z "${NO_BENCH:-}" ]; then     # NO_BENCH=1: the checks alone (8 files come back)
step kbench 45 $D/test-bin/lc-cuda-bench 256 5
step wholefile 130 env LC_BIN=$D/bin LC_TEST_BIN=$D/test-bin PY=python3 BENCH_RUNS=${BENCH_RUNS:-2} scripts/bench-cuda.sh
fi
step device_py ${PY_LIMIT:-100} env LC_TEST_DEVICE_REAL=1 LC_BIN=$PWD/$D/bin python3 -m pytest -q -x -n 16 -p no:cacheprovider tests/integration/test_device.py
step memcheck 45 "$SAN" --tool memcheck --error-exitcode 1 --leak-check full $D/test-bin/lc-cuda-check kernels 65536
step racecheck 45 "$SAN" --tool racecheck --error-exitcode 1 $D/test-bin/lc-cuda-check kernels 65536
cat "$OUT/machine.log"
printf '%s\n' "${summary[@]}" | tee "$OUT/summary.txt"
