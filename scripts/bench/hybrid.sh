#!/usr/bin/env bash
# Bench: a generated ~2 GiB bf16 qwen35moe folder (Qwen3.5's recurrent and gated
# attention layers, 64 experts as one tensor each, the MTP block) -> GGUF f16 and Q4_K_M,
# beside cp and llama.cpp's converter (when $LC_REF_PY has torch), and the forward pass
# on it against llama.cpp at the same threads (moe_bench.py qwen35moe).
set -euo pipefail
: "${LC_BIN:?}" "${PY:?}"
"$PY" scripts/bench/moe_bench.py "$LC_BIN" build/bench qwen35moe
