#!/usr/bin/env bash
# make bench, block quantization: one-thread quantize speed of every type we quantize,
# our reference (LC_QUANT=ref) and our fastest variant, each next to ggml's
# ggml_quantize_chunk (what llama-quantize runs; without an importance matrix it is
# quantize_row_<type>_ref, single-threaded) timed in turns on the same floats, with a
# check that ggml's bytes equal ours (tests/tools/lc-quant-bench.c).
#
#   LC_TEST_BIN          folder with lc-quant-bench (default build/test-bin)
#   LLAMA_PY             python of build/llama-venv (scripts/bootstrap-llama.sh), whose
#                        llama_cpp ships the libggml-base.so we time
#   LC_BENCH_QUANT_MIB   MiB of f32 per type (default 16)
#   LC_BENCH_REPS        runs per type, best kept (default 3)
set -euo pipefail
cd "$(dirname "$0")/../.."
LLAMA_PY=${LLAMA_PY:-build/llama-venv/bin/python}
MIB=${LC_BENCH_QUANT_MIB:-16}
REPS=${LC_BENCH_REPS:-3}
BENCH=${LC_TEST_BIN:-build/test-bin}/lc-quant-bench
lib=$("$LLAMA_PY" -c 'import llama_cpp, pathlib
print(pathlib.Path(llama_cpp.__file__).parent / "lib" / "libggml-base.so")' 2>/dev/null || true)
if [ -z "$lib" ] || [ ! -f "$lib" ]; then
    echo "bench quant: ggml column SKIPPED: no llama_cpp at LLAMA_PY=$LLAMA_PY (make check-llama builds it)"
    lib=
fi
echo "bench quant: one thread; ggml = ggml_quantize_chunk of llama-cpp-python's build"
LC_QUANT=ref "$BENCH" "$MIB" "$REPS" ${lib:+"$lib"}
"$BENCH" "$MIB" "$REPS" ${lib:+"$lib"}
