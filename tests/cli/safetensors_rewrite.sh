# safetensors-rewrite reproduces files written by the reference writer byte for byte,
# merges a sharded checkpoint, and model-inspect describes all of them.
set -eu
fx="$LC_ROOT/fixtures/safetensors"
for f in "$fx"/*.safetensors; do
    safetensors-rewrite -q "$f" out.safetensors
    cmp "$f" out.safetensors
    ! ls -A | grep -q "^\.out\.safetensors\.lc-.*\.tmp$"
    model-inspect "$f" | grep -q "^format:   safetensors$"
    model-inspect --json "$f" | python3 -c 'import json, sys; d = json.load(sys.stdin); assert d["format"] == "safetensors", d'
    rm out.safetensors
done
# The text report of a known file, line by line where it is stable.
model-inspect "$fx/tiny_llama.safetensors" >r.txt
grep -q '^metadata: 1 key$' r.txt
grep -q '^  "format" (string) = "pt"$' r.txt
grep -q '^tensors:  21 ' r.txt
grep -Eq '^  "model.norm.weight" +F32 +\[16\] +64 ' r.txt
# Sharded: the folder and the index file both work and give the same file.
safetensors-rewrite -q "$fx/sharded" a.safetensors
safetensors-rewrite -q "$fx/sharded/model.safetensors.index.json" b.safetensors
cmp a.safetensors b.safetensors
model-inspect --json "$fx/sharded" | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert d["format"] == "safetensors-sharded", d["format"]
assert sorted(t["name"] for t in d["tensors"]) == ["lm_head.weight", "model.embed.weight",
    "model.layers.0.w", "model.layers.1.w"], d["tensors"]'
# An output that is the input (by any name) is refused before anything is written.
cp "$fx/all_dtypes.safetensors" self.safetensors
ln -s self.safetensors link.safetensors
for o in self.safetensors link.safetensors; do
    if safetensors-rewrite -q self.safetensors $o 2>err.txt; then exit 1; fi
    grep -q "refusing" err.txt
    cmp "$fx/all_dtypes.safetensors" self.safetensors
done
rm link.safetensors
# An output in a missing folder fails with the path, leaving nothing.
if safetensors-rewrite -q "$fx/empty.safetensors" nodir/x.safetensors 2>err.txt; then exit 1; fi
grep -q "nodir/x.safetensors" err.txt

# --no-fsync skips only the flush to disk: same bytes, renamed into place, no temporary.
safetensors-rewrite --no-fsync "$LC_ROOT/fixtures/safetensors/tiny_llama.safetensors" nosync.safetensors
cmp "$LC_ROOT/fixtures/safetensors/tiny_llama.safetensors" nosync.safetensors
! ls -A | grep -q "\.lc-.*\.tmp$"
