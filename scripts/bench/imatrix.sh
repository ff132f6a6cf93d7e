#!/usr/bin/env bash
# make bench, importance-matrix quantization and the row-only types (IQ*, TQ*): ours
# (quant/ row entries, the best variant) next to ggml's ggml_quantize_chunk with the same
# importance vector, one thread and all, with a check that the bytes are equal
# (tests/tools/lc-imatrix-bench.c).
#   LC_TEST_BIN            folder with lc-imatrix-bench (default build/test-bin)
#   LLAMA_PY               python of build/llama-venv, whose llama_cpp ships libggml-base.so
#   LC_BENCH_IMATRIX_MIB   MiB of f32 per type (default 4)
#   LC_BENCH_REPS          runs per type, best kept (default 3)
#   LC_BENCH_IMATRIX_TYPES e.g. IQ2_XS,IQ4_XS (default every type that uses an imatrix)
#   LC_BENCH_THREADS       threads of the second row (default: every core; 1: none)
set -euo pipefail
cd "$(dirname "$0")/../.."
LLAMA_PY=${LLAMA_PY:-build/llama-venv/bin/python}
BENCH=${LC_TEST_BIN:-build/test-bin}/lc-imatrix-bench
lib=$("$LLAMA_PY" -c 'import llama_cpp, pathlib
print(pathlib.Path(llama_cpp.__file__).parent / "lib" / "libggml-base.so")' 2>/dev/null || true)
echo "== importance-matrix quantization: ours vs ggml_quantize_chunk (MB/s of f32) =="
if [ -z "$lib" ] || [ ! -f "$lib" ]; then
    echo "bench imatrix: ggml column SKIPPED: no llama_cpp at LLAMA_PY=$LLAMA_PY (make check-llama builds it)"
    lib=
fi
LC_BENCH_THREADS=${LC_BENCH_THREADS:-$(nproc)} LC_BENCH_GGML=$lib "$BENCH" \
    "${LC_BENCH_IMATRIX_MIB:-4}" "${LC_BENCH_REPS:-3}" ${LC_BENCH_IMATRIX_TYPES:+"$LC_BENCH_IMATRIX_TYPES"}
# The whole model: model-imatrix's tokens/s next to llama.cpp's forward pass, and
# gguf-quantize --imatrix IQ2_XS / IQ4_XS next to llama_model_quantize, with peak RSS
# (imatrix_bench.py; BENCH_THREADS there defaults to 1). LC_BENCH_IMATRIX_FILE=0 skips it.
if [ "${LC_BENCH_IMATRIX_FILE:-1}" != 0 ]; then
    LC_LLAMA_PY=$LLAMA_PY "${PY:-build/venv/bin/python}" scripts/bench/imatrix_bench.py \
        "${LC_BIN:-build/bin}" build/bench
fi
