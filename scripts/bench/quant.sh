#!/usr/bin/env bash
# make bench, block quantization: one-thread quantize speed of every type we quantize,
# our reference and our fastest variant next to ggml's ggml_quantize_chunk (what
# llama-quantize runs), on the same floats (scripts/bench/quant_ggml.py).
#
#   LC_TEST_BIN      folder with lc-quant-bench (default build/test-bin)
#   LLAMA_PY         python of build/llama-venv (scripts/bootstrap-llama.sh), for ggml
#   LC_BENCH_QUANT_MIB   MiB of f32 per type (default 16)
#   LC_BENCH_REPS    runs per type, best kept (default 3)
set -euo pipefail
cd "$(dirname "$0")/../.."
LLAMA_PY=${LLAMA_PY:-build/llama-venv/bin/python}
MIB=${LC_BENCH_QUANT_MIB:-16}
REPS=${LC_BENCH_REPS:-3}
export LC_TEST_BIN=${LC_TEST_BIN:-build/test-bin}
if ! "$LLAMA_PY" -c 'import llama_cpp' 2>/dev/null; then
    echo "bench quant: ggml column SKIPPED: no llama_cpp at LLAMA_PY=$LLAMA_PY (make check-llama builds it)"
    "$LC_TEST_BIN/lc-quant-bench" "$MIB" "$REPS"
    exit 0
fi
echo "bench quant:"
"$LLAMA_PY" scripts/bench/quant_ggml.py "$MIB" "$REPS"
