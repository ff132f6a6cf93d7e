#!/usr/bin/env bash
# Bench: gguf-quantize, whole file, Q8_0 and Q4_K_M, against llama.cpp's own quantizer
# (llama_model_quantize through build/llama-venv, when it is there) with the same threads,
# on the generated ~1.5 GiB model converted to a bf16 GGUF (see quantize_bench.py).
set -euo pipefail
: "${LC_BIN:?}" "${PY:?}"
"$PY" scripts/bench/quantize_bench.py "$LC_BIN" build/bench
