#!/usr/bin/env bash
# Bench: safetensors-rewrite of a generated 1 GiB file against cp (see st_bench.py).
set -euo pipefail
: "${LC_BIN:?}" "${PY:?}"
"$PY" scripts/bench/st_bench.py "$LC_BIN" build/bench
