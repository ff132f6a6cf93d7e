#!/usr/bin/env bash
# Bench: a generated ~2 GiB bf16 mixtral folder with 64 experts as one tensor each ->
# GGUF f16 and Q4_K_M, beside cp and llama.cpp's converter (when $LC_REF_PY has torch),
# and the forward pass on it against llama.cpp at the same threads (moe_bench.py).
set -euo pipefail
: "${LC_BIN:?}" "${PY:?}"
"$PY" scripts/bench/moe_bench.py "$LC_BIN" build/bench
