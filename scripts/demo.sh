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
pth=fixtures/pth/2.15.0/tiny_llama.pth
echo "demo: 6. pth2safetensors $pth (written by torch.save; its pickle is never run)"
pth2safetensors -q "$pth" "$work/tiny.safetensors"
model-inspect "$work/tiny.safetensors" | grep -E '^tensors:' | sed 's/^/    /'
echo "demo: 7. --scan lists what a checkpoint's pickle would call; a hostile one is refused:"
pth2safetensors --scan fixtures/bad/pth/forbidden-os_system.bin 2>&1 | grep -E 'FORBIDDEN|not on' \
    | head -n 2 | sed 's/^/    /' || true
hf=fixtures/hf/llama-spm
echo "demo: 8. safetensors2gguf $hf (a tiny HF llama, SentencePiece tokenizer) -> q8_0 GGUF"
safetensors2gguf -q --outtype q8_0 "$hf" "$work/tiny-q8_0.gguf"
model-inspect "$work/tiny-q8_0.gguf" | grep -E '^(format|tensors):|general.architecture|tokenizer.ggml.model' \
    | sed 's/^/    /'
if cmp -s "$work/tiny-q8_0.gguf" fixtures/hf-ref/llama-spm-q8_0.gguf; then
    echo "    byte-identical to the GGUF llama.cpp's convert_hf_to_gguf.py wrote (fixtures/hf-ref)"
else
    echo "    differs from llama.cpp's convert_hf_to_gguf.py output (fixtures/hf-ref)" >&2
    exit 1
fi
echo "demo: 9. and back: gguf2safetensors of the bf16 GGUF equals the HF source, byte for byte"
safetensors2gguf -q --outtype bf16 "$hf" "$work/tiny-bf16.gguf"
gguf2safetensors -q --dtype bf16 "$work/tiny-bf16.gguf" "$work/back.safetensors"
build/venv/bin/python - "$hf/model.safetensors" "$work/back.safetensors" <<'PY'
# numpy has no bf16: compare the raw bytes of every tensor through the header's offsets
import json, struct, sys
def raw(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        h = json.loads(f.read(n)); base = 8 + n; f.seek(0); data = f.read()
    return {k: data[base + v["data_offsets"][0]: base + v["data_offsets"][1]]
            for k, v in h.items() if k != "__metadata__"}
ra, rb = raw(sys.argv[1]), raw(sys.argv[2])
kept = {k: v for k, v in ra.items() if "rotary_emb" not in k}
assert kept == rb, sorted(set(kept) ^ set(rb))
print(f"    {len(rb)} tensors identical (rotary_emb.inv_freq is dropped on the way in, as llama.cpp does)")
PY
echo "demo: 10. model-verify $hf tiny-q8_0.gguf: did the conversion keep the model intact?"
model-verify -q "$hf" "$work/tiny-q8_0.gguf" >"$work/verify.txt" || {
    cat "$work/verify.txt" >&2; echo "    model-verify failed on our own conversion" >&2; exit 1; }
grep -E '^(metadata|tensors|  KL|  same top|verdict):?' "$work/verify.txt" | cut -c1-150 | sed 's/^/    /'
echo "demo: 11. the same file with layer 2's attn_q rows left unpermuted (a converter bug):"
cp "$work/tiny-q8_0.gguf" "$work/broken.gguf"
model-inspect --json "$work/broken.gguf" | build/venv/bin/python -c '
# Put blk.2.attn_q.weight rows back in transformers half-split order (4 heads of 16 rows),
# as a converter that skipped the llama Q/K permutation for that layer would leave them.
import json, sys
import numpy as np
t = next(t for t in json.load(sys.stdin)["tensors"] if t["name"] == "blk.2.attn_q.weight")
rows, heads = t["shape"][0], 4
with open(sys.argv[1], "r+b") as f:
    f.seek(t["offset"])
    w = np.frombuffer(f.read(t["nbytes"]), np.uint8).reshape(rows, -1)
    w = w.reshape(heads, rows // heads // 2, 2, -1).swapaxes(1, 2).reshape(rows, -1)
    f.seek(t["offset"])
    f.write(w.tobytes())
' "$work/broken.gguf"
set +e
model-verify -q --layers "$hf" "$work/broken.gguf" >"$work/verify.txt"
status=$?
set -e
grep -E 'FAIL|^      |part ways|^verdict' "$work/verify.txt" | cut -c1-150 | sed 's/^/    /'
echo "    exit status $status (0 pass, 1 fail, 2 error)"
[ "$status" -eq 1 ] || { echo "    expected a located failure (exit 1)" >&2; exit 1; }
echo "demo: done"
