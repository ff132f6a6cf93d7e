#!/usr/bin/env bash
# make bench: runs every scripts/bench/*.sh side by side with its baselines.
set -euo pipefail
: "${LC_BIN:?}"
for b in scripts/bench/*.sh; do [ -e "$b" ] && bash "$b"; done
echo "bench: done"
