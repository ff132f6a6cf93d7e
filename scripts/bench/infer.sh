#!/usr/bin/env bash
# Bench: the reference forward pass (infer/, through tests/tools/lc-infer) on a generated
# 0.2 G-parameter llama in f16, Q8_0 and Q4_K_M at 64, 512 and 2048 tokens, next to
# llama.cpp (llama-cpp-python in build/llama-venv, from `make check-llama`) on the same
# GGUF files, tokens and threads (see infer_bench.py).
set -euo pipefail
: "${LC_BIN:?}" "${PY:?}"
"$PY" scripts/bench/infer_bench.py "$LC_BIN" build/bench
