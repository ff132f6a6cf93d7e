# pth2safetensors end to end: converts real torch checkpoints, lists, scans, refuses
# hostile ones without running them, converts a sharded folder into a folder, and
# fails cleanly (exit 1, one line, no output, no temp file) on broken input.
set -u
fail=0
V=$(ls -d "$LC_ROOT"/fixtures/pth/2.* | tail -n 1)
no() { echo "FAIL: $*"; fail=1; }

pth2safetensors -q "$V/mlp.pth" out.safetensors || no "mlp.pth convert"
[ -s out.safetensors ] && ! ls -A | grep -q "^\.out\.safetensors\.lc-.*\.tmp$" || no "mlp.pth output"
head -c 200 out.safetensors | grep -q '"fc1.weight":{"dtype":"F32","shape":\[12,6\]' ||
    no "mlp.pth header: $(head -c 200 out.safetensors)"
grep -q '"__metadata__":{"format":"pt"}' out.safetensors || no "format metadata"

# Nested checkpoint: the model's tensors, scalars as metadata.
pth2safetensors -q "$V/checkpoint.pth" ck.safetensors || no "checkpoint convert"
grep -q '"epoch":"5"' ck.safetensors || no "epoch metadata"
[ "$(pth2safetensors --list "$V/checkpoint.pth" | wc -l)" -eq 4 ] || no "--list checkpoint"
pth2safetensors --list --key optimizer.state "$V/checkpoint.pth" | grep -q '^0.exp_avg	F32	\[12, 6\]$' ||
    no "--list --key: $(pth2safetensors --list --key optimizer.state "$V/checkpoint.pth")"

# --dedupe drops aliases and records them.
pth2safetensors -q --dedupe "$V/shared.pth" sh.safetensors || no "dedupe convert"
grep -q '"lm_head.weight":"embed.weight"' sh.safetensors || no "dedupe metadata"

# --scan: 0 clean, 1 refused (naming every global), 2 unreadable.
pth2safetensors --scan "$V/mlp.pth" >scan.txt; [ $? -eq 0 ] || no "scan clean rc"
grep -q "torch._utils._rebuild_tensor_v2 allowed" scan.txt || no "scan clean list"
for f in "$LC_ROOT"/fixtures/bad/pth/forbidden-*.bin; do
    pth2safetensors --scan "$f" >scan.txt 2>err.txt
    [ $? -eq 1 ] && grep -q "FORBIDDEN" scan.txt && grep -q "torch._utils._rebuild_tensor_v2 allowed" scan.txt ||
        no "scan $f: $(cat scan.txt err.txt)"
    pth2safetensors -q "$f" bad.safetensors >out.txt 2>err.txt
    [ $? -eq 1 ] && [ "$(wc -l <err.txt)" -eq 1 ] && grep -q "is not on the allowlist\|not allowed\|forbidden" err.txt ||
        no "convert $f: $(cat err.txt)"
    [ ! -e bad.safetensors ] && ! ls -A | grep -q "^\.bad\.safetensors\.lc-.*\.tmp$" || no "output left by $f"
done
echo garbage >junk.pth
pth2safetensors --scan junk.pth >/dev/null 2>&1; [ $? -eq 2 ] || no "scan of junk is not 2"
ls | grep -q LC_PWNED && no "a hostile payload ran"

# Broken input: one line naming the file and an offset, nothing left behind.
for f in "$LC_ROOT"/fixtures/bad/pth/malformed-*.bin junk.pth; do
    pth2safetensors -q "$f" o.safetensors >out.txt 2>err.txt
    rc=$?
    [ $rc -eq 1 ] && [ "$(wc -l <err.txt)" -eq 1 ] && grep -qF "$f" err.txt && [ ! -s out.txt ] &&
        [ ! -e o.safetensors ] && ! ls -A | grep -q "^\.o\.safetensors\.lc-.*\.tmp$" || no "$f: rc=$rc $(cat err.txt)"
done

# Sharded folder in, sharded folder out with a rewritten index.
pth2safetensors -q "$V/sharded" outdir || no "sharded convert"
[ -s outdir/model-00001-of-00002.safetensors ] && [ -s outdir/model-00002-of-00002.safetensors ] ||
    no "shards: $(ls outdir)"
grep -q '"weight_map"' outdir/model.safetensors.index.json || no "index written"
[ "$(grep -c '"model-0000[12]-of-00002.safetensors"' outdir/model.safetensors.index.json)" -eq \
  "$(grep -c '"pytorch_model-0000[12]-of-00002.bin"' "$V/sharded/pytorch_model.bin.index.json")" ] ||
    no "index entries differ"

# model-inspect reads checkpoints through formats/any.c.
model-inspect "$V/checkpoint.pth" >insp.txt || no "model-inspect pth"
grep -q '^format: *pth$' insp.txt && grep -q '"fc1.weight" *F32 *\[12, 6\]' insp.txt ||
    no "model-inspect pth: $(cat insp.txt)"
model-inspect "$V/sharded" | grep -q '^format: *pth-sharded$' || no "model-inspect pth folder"
model-inspect "$LC_ROOT/fixtures/bad/pth/forbidden-os_system.bin" >/dev/null 2>err.txt
[ $? -eq 1 ] && grep -q "os.system" err.txt || no "model-inspect hostile: $(cat err.txt)"

# Usage: 2; help and version: 0.
pth2safetensors >/dev/null 2>&1; [ $? -eq 2 ] || no "no args"
pth2safetensors a >/dev/null 2>&1; [ $? -eq 2 ] || no "one arg"
pth2safetensors --bogus a b >/dev/null 2>&1; [ $? -eq 2 ] || no "unknown option"
pth2safetensors --help | grep -q "usage: pth2safetensors" || no "--help"
pth2safetensors --version | grep -q libconvert || no "--version"
exit $fail
