# model-inspect reads GGUF: its JSON agrees with gguf-py's GGUFReader on every tensor
# (shape outermost first, bytes, absolute offset) and key; a bad file fails with exit 1
# and names the offset.
set -euo pipefail
py=$LC_ROOT/build/venv/bin/python
f=$LC_ROOT/fixtures/gguf/tensors.gguf
model-inspect "$f" > out.txt
grep -q gguf out.txt
grep -q 'w.q4_k' out.txt
model-inspect --json "$f" > out.json
"$py" - out.json "$f" <<'PY'
import json, sys
from gguf import GGUFReader
j = json.load(open(sys.argv[1]))
r = GGUFReader(sys.argv[2])
assert j["format"] == "gguf", j["format"]
assert j["header_size"] == r.data_offset, (j["header_size"], r.data_offset)
ts = {t["name"]: t for t in j["tensors"]}
assert [t["name"] for t in j["tensors"]] == [t.name for t in r.tensors]
for t in r.tensors:
    got = ts[t.name]
    assert got["shape"] == [int(x) for x in reversed(t.shape)], (t.name, got["shape"])
    assert got["nbytes"] == int(t.n_bytes), t.name
    assert got["offset"] == int(t.data_offset), t.name
keys = [k for k in r.fields if not k.startswith("GGUF.")]
assert list(j["metadata"]) == keys, (list(j["metadata"]), keys)
assert j["metadata"]["t.i64"] == -(2**63)
assert j["metadata"]["t.arr_nested3"] == [[["x"], ["y", "z"]], [["w"]]]
PY
bad=$LC_ROOT/fixtures/bad/gguf/malformed-duplicate-key.bin
if model-inspect "$bad" > /dev/null 2> err.txt; then
    echo "bad file accepted"; exit 1
else
    test $? -eq 1
fi
grep -q '@ 0x2b' err.txt
grep -q 'duplicate metadata key' err.txt
# A file llama.cpp refuses is still shown, with the rule it breaks; exit 1 and the
# error line a normal open gives.
long=$LC_ROOT/fixtures/bad/gguf/malformed-name-64-bytes.bin
if model-inspect "$long" > out.txt 2> err.txt; then
    echo "a name of 64 bytes passed as clean"; exit 1
else
    test $? -eq 1
fi
grep -q 'refused gguf.name-too-long: nnnn*' out.txt
grep -q '"nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn"' out.txt
test "$(wc -l < err.txt)" -eq 1
grep -q "malformed-name-64-bytes.bin: nnn* @ 0x[0-9a-f]*: tensor name of 64 bytes" err.txt
model-inspect --json "$long" > out.json 2> /dev/null || true
"$py" - out.json <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
refused = [w for w in j["warnings"] if w["refused"]]
assert [w["rule"] for w in refused] == ["gguf.name-too-long"], j["warnings"]
assert len(j["tensors"]) == 2
PY
# The good fixture holds only notes (gguf-py writes nested arrays and a UTF-8 key):
# exit 0, and the notes say so.
model-inspect --json "$f" > out.json
"$py" - out.json <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
rules = sorted({w["rule"] for w in j["warnings"]})
assert not any(w["refused"] for w in j["warnings"]), j["warnings"]
assert rules == ["gguf.array-nested", "gguf.key-ascii", "gguf.quantization-version"], rules
PY
