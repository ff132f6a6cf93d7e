#!/usr/bin/env bash
# Bench: the Python package beside the Python peers, in one run (see python_bench.py).
set -euo pipefail
: "${PY:?}"
make --no-print-directory shared >/dev/null
"$PY" scripts/bench/python_bench.py build/bench
