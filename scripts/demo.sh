#!/usr/bin/env bash
# make demo: runs the tools end to end on a bundled example and says what it did.
# Builds nothing itself (make demo builds the tools first); takes well under a second.
set -euo pipefail
: "${LC_BIN:?}"
export PATH="$LC_BIN:$PATH"
src=fixtures/safetensors/tiny_llama.safetensors
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "demo: 1. model-inspect $src (written by safetensors.numpy.save_file)"
model-inspect "$src" | sed -n '1,12p;$p' | sed 's/^/    /'
echo "    ..."
echo "demo: 2. the same as JSON, for scripts (first 200 bytes):"
model-inspect --json "$src" | head -c 200 | sed 's/^/    /'
echo " ..."
echo "demo: 3. safetensors-rewrite $src -> out.safetensors"
safetensors-rewrite -q "$src" "$work/out.safetensors"
if cmp -s "$src" "$work/out.safetensors"; then
    echo "    identical to the reference writer's file, byte for byte ($(wc -c <"$src") bytes)"
else
    echo "    the rewrite DIFFERS from the input" >&2
    exit 1
fi
echo "demo: 4. a sharded checkpoint (index + 2 shards) merged into one file"
safetensors-rewrite -q fixtures/safetensors/sharded "$work/merged.safetensors"
model-inspect "$work/merged.safetensors" | grep -E '^tensors:' | sed 's/^/    /'
echo "demo: 5. a damaged file is refused with the file, the tensor and the byte offset:"
head -c 3000 "$src" >"$work/cut.safetensors"
if model-inspect "$work/cut.safetensors" 2>&1 >/dev/null | sed "s|$work/||; s/^/    /"; then :; fi
echo "demo: done"
