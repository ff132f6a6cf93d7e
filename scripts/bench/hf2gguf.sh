#!/usr/bin/env bash
# Bench: safetensors2gguf on a generated ~1.5 GiB bf16 llama-shaped HF folder against cp
# of the folder and, when $LC_REF_PY names a python with torch + llama.cpp's
# convert_hf_to_gguf.py ($LC_REF_CONVERT, the script's path), against that (see
# hf2gguf_bench.py).
set -euo pipefail
: "${LC_BIN:?}" "${PY:?}"
"$PY" scripts/bench/hf2gguf_bench.py "$LC_BIN" build/bench
