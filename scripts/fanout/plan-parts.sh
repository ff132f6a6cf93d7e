#!/usr/bin/env bash
# How many parts a split run writes: prints N for a command line of gguf-quantize or
# safetensors2gguf with split options (--split-max-size, --split-max-tensors,
# --no-tensor-first-split), by running it with --dry-run (nothing is read but headers,
# nothing is written). The fan-out recipes beside it give each job --part K/N.
#
#   scripts/fanout/plan-parts.sh gguf-quantize --split-max-size 2G model.gguf out.gguf Q4_K_M
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 TOOL ARGS... (a split run's command line)" >&2; exit 2; }
plan=$("$@" --dry-run) || exit 1
# gguf-quantize says "part 1/N: ...", safetensors2gguf "output part 1/N PATH: ...".
n=$(printf '%s\n' "$plan" | sed -n 's|^\(output \)\{0,1\}part 1/\([0-9][0-9]*\)[: ].*|\2|p' | head -1)
[ -n "$n" ] || { echo "$0: the dry run lists no parts: give a split option" >&2; exit 1; }
echo "$n"
