#!/usr/bin/env bash
# Bench: one thread, every quant/ type, each kernel variant (ref, avx2, avx512, neon) side
# by side with memcpy of the same f32 bytes (tests/tools/lc-quant-bench.c). Variants this
# build or CPU lacks print "-". QUANT_BENCH_MIB (64) and QUANT_BENCH_REPS (3) size it;
# QUANT_BENCH_TYPES=Q4_K,Q6_K picks types.
set -euo pipefail
: "${LC_TEST_BIN:?}"
echo "== quant kernels: ref vs vector variants vs memcpy =="
"$LC_TEST_BIN/lc-quant-bench" "${QUANT_BENCH_MIB:-64}" "${QUANT_BENCH_REPS:-3}" \
    ref,avx2,avx512,neon ${QUANT_BENCH_TYPES:+"$QUANT_BENCH_TYPES"}
