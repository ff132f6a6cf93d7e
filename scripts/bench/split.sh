#!/usr/bin/env bash
# Bench: one model to Q4_K_M as one process (one file, and the 4-part set) against its 4
# parts as 4 jobs under GNU parallel (scripts/fanout/parallel.sh's way), on the generated
# ~1.5 GiB model (see split_bench.py).
set -euo pipefail
: "${LC_BIN:?}" "${PY:?}"
"$PY" scripts/bench/split_bench.py "$LC_BIN" build/bench
