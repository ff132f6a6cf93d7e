#!/usr/bin/env bash
# make bench, block quantization: one thread, every type quant/ implements, each kernel
# variant (ref, avx2, avx512, neon) side by side with memcpy of the same f32 bytes and,
# when llama-cpp-python's build is there (scripts/bootstrap-llama.sh), ggml's own
# ggml_quantize_chunk (what llama-quantize runs), with a check that its bytes equal ours
# (tests/tools/lc-quant-bench.c). Variants this build or CPU lacks print "-".
#   LC_TEST_BIN          folder with lc-quant-bench (default build/test-bin)
#   LLAMA_PY             python of build/llama-venv, whose llama_cpp ships libggml-base.so
#   LC_BENCH_QUANT_MIB   MiB of f32 per type (default 64)
#   LC_BENCH_REPS        runs per type, best kept (default 3)
#   LC_BENCH_QUANT_TYPES e.g. Q4_K,Q6_K (default every type we quantize); a dequantize-only
#                        type named here (IQ4_XS, TQ2_0, ...) gets a dequantize row, timed
#                        on random blocks
#   LC_BENCH_CLOCK=cpu   time with the thread's CPU clock (a shared machine's load)
#   LC_BENCH_THREADS     threads of the second table (default: every core; 1: no table)
set -euo pipefail
cd "$(dirname "$0")/../.."
LLAMA_PY=${LLAMA_PY:-build/llama-venv/bin/python}
BENCH=${LC_TEST_BIN:-build/test-bin}/lc-quant-bench
lib=$("$LLAMA_PY" -c 'import llama_cpp, pathlib
print(pathlib.Path(llama_cpp.__file__).parent / "lib" / "libggml-base.so")' 2>/dev/null || true)
echo "== quant kernels: ref vs vector variants vs memcpy (vs ggml) =="
if [ -z "$lib" ] || [ ! -f "$lib" ]; then
    echo "bench quant: ggml column SKIPPED: no llama_cpp at LLAMA_PY=$LLAMA_PY (make check-llama builds it)"
    lib=
fi
LC_BENCH_THREADS=${LC_BENCH_THREADS:-$(nproc)} LC_BENCH_GGML=$lib "$BENCH" "${LC_BENCH_QUANT_MIB:-64}" "${LC_BENCH_REPS:-3}" \
    ref,avx2,avx512,neon ${LC_BENCH_QUANT_TYPES:+"$LC_BENCH_QUANT_TYPES"}
