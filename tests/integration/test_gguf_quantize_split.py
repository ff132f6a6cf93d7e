"""gguf-quantize on split GGUFs without llama.cpp (tests/llama/test_quantize_split.py
compares the bytes with llama_model_quantize): the parts found from the first one, the
merged output equal to quantizing the model unsplit, --keep-split's parts and keys, and
bad sets of parts (missing, inconsistent, not a regular file, duplicate tensors): one
line naming the part's file, exit 1, and no OUT (no part of it) left behind."""
import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import gguf
import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from split_gguf import split_gguf  # noqa: E402
from test_gguf_quantize import nothing_left, one_line, run, tiny_llama  # noqa: E402


def split_model(d, per_part=6, layers=2, **kw):
    """A tiny llama GGUF (d/whole.gguf) and its parts d/parts/m-0000k-of-0000n.gguf."""
    whole = tiny_llama(d / "whole.gguf", layers=layers, **kw)
    (d / "parts").mkdir()
    return whole, split_gguf(whole, d / "parts" / "m.gguf", per_part)


def key_value_at(path, key):
    """The file offset of KEY's value (after its u32 type) in a GGUF."""
    data = path.read_bytes()
    k = key.encode()
    at = data.index(struct.pack("<Q", len(k)) + k)
    return at + 8 + len(k) + 4


def patch(path, at, fmt, value):
    data = bytearray(path.read_bytes())
    struct.pack_into(fmt, data, at, value)
    path.write_bytes(bytes(data))


# ---- good sets ----

def test_merged_output_equals_the_unsplit_model_s(tmp_path):
    whole, parts = split_model(tmp_path, layers=3)
    assert len(parts) == 5
    run("-q", whole, tmp_path / "a.gguf", "Q8_0")
    run("-q", parts[0], tmp_path / "b.gguf", "Q8_0")
    assert (tmp_path / "a.gguf").read_bytes() == (tmp_path / "b.gguf").read_bytes()
    r = gguf.GGUFReader(tmp_path / "b.gguf")
    assert not [k for k in r.fields if k.startswith("split.")]


def test_keep_split_writes_the_input_s_parts(tmp_path):
    _, parts = split_model(tmp_path)
    run("-q", "--keep-split", parts[0], tmp_path / "o.gguf", "Q8_0")
    outs = sorted(tmp_path.glob("o-*.gguf"))
    assert [p.name for p in outs] == [f"o-{k:05d}-of-00004.gguf" for k in range(1, 5)]
    total = 0
    for k, (inp, out) in enumerate(zip(parts, outs)):
        ri, ro = gguf.GGUFReader(inp), gguf.GGUFReader(out)
        assert [t.name for t in ro.tensors] == [t.name for t in ri.tensors]
        keys = [x for x in ro.fields if not x.startswith("GGUF.")]
        assert keys[-3:] == ["split.no", "split.count", "split.tensors.count"]
        if k:
            assert keys == ["split.no", "split.count", "split.tensors.count"]
        assert ro.fields["split.no"].contents() == k
        assert ro.fields["split.count"].contents() == 4
        assert ro.fields["split.tensors.count"].contents() == 21
        total += len(ro.tensors)
    assert total == 21
    # An unsplit input gives one part, without split keys (as llama-quantize).
    run("-q", "--keep-split", tmp_path / "whole.gguf", tmp_path / "w", "Q8_0")
    r = gguf.GGUFReader(tmp_path / "w-00001-of-00001.gguf")
    assert not [x for x in r.fields if x.startswith("split.")]


def test_keep_split_dry_run_and_json_show_the_parts(tmp_path):
    _, parts = split_model(tmp_path)
    r = run("--dry-run", "--keep-split", parts[0], tmp_path / "o.gguf", "Q8_0")
    lines = [x for x in r.stdout.splitlines() if x.startswith("part ")]
    assert len(lines) == 4
    assert lines[0].startswith(f"part 1/4: {tmp_path}/o-00001-of-00004.gguf: 6 tensors")
    assert lines[3].startswith(f"part 4/4: {tmp_path}/o-00004-of-00004.gguf: 3 tensors")
    r = run("--dry-run", "--json", "--keep-split", parts[0], tmp_path / "o.gguf", "Q8_0")
    d = json.loads(r.stdout)
    assert d["in_parts"] == 4
    assert [p["tensors"] for p in d["parts"]] == [6, 6, 6, 3]
    assert d["parts"][2]["path"] == f"{tmp_path}/o-00003-of-00004.gguf"
    assert sum(p["bytes_out"] for p in d["parts"]) == d["bytes_out"]
    assert {t["part"] for t in d["tensors"]} == {1, 2, 3, 4}
    nothing_left(tmp_path, {"whole.gguf", "parts"})


# ---- bad sets ----

def refused(tmp_path, first, part_name, *, keep=(), code=1):
    """Both modes refuse the set with one line naming part_name; nothing is left."""
    for mode in ([], ["--keep-split"]):
        r = run("-q", *mode, first, tmp_path / "o.gguf", "Q8_0", ok=False)
        assert r.returncode == code, r.stderr
        line = one_line(r)
        assert part_name in line, line
    nothing_left(tmp_path, {"whole.gguf", "parts", *keep})
    return line


def test_a_missing_part(tmp_path):
    _, parts = split_model(tmp_path)
    parts[2].unlink()
    line = refused(tmp_path, parts[0], parts[2].name)
    assert "part 3 of 4 is missing" in line


def test_a_part_of_another_split(tmp_path):
    _, parts = split_model(tmp_path)
    patch(parts[1], key_value_at(parts[1], "split.count"), "<H", 5)
    assert "split.count is 5" in refused(tmp_path, parts[0], parts[1].name)


def test_a_part_out_of_place(tmp_path):
    _, parts = split_model(tmp_path)
    patch(parts[3], key_value_at(parts[3], "split.no"), "<H", 1)
    assert "split.no is 1" in refused(tmp_path, parts[0], parts[3].name)


def test_a_tensor_total_that_does_not_add_up(tmp_path):
    _, parts = split_model(tmp_path)
    for p in parts:
        patch(p, key_value_at(p, "split.tensors.count"), "<i", 20)
    assert "20" in refused(tmp_path, parts[0], parts[3].name)


def test_a_part_that_is_a_fifo(tmp_path):
    _, parts = split_model(tmp_path)
    parts[1].unlink()
    os.mkfifo(parts[1])
    line = refused(tmp_path, parts[0], parts[1].name, keep={parts[1].name})
    assert "FIFO" in line


def test_a_tensor_in_two_parts(tmp_path):
    _, parts = split_model(tmp_path)
    names = [t.name for t in gguf.GGUFReader(parts[1]).tensors]
    first = [t.name for t in gguf.GGUFReader(parts[0]).tensors]
    # A name of part 2 rewritten to one of part 1 of the same length.
    a, b = next((x, y) for x in names for y in first if len(x) == len(y) and x != y)
    data = parts[1].read_bytes()
    parts[1].write_bytes(data.replace(a.encode(), b.encode(), 1))
    line = refused(tmp_path, parts[0], parts[1].name)
    assert b in line and "also in part 1" in line


def test_not_the_first_part_or_a_renamed_one(tmp_path):
    _, parts = split_model(tmp_path)
    line = refused(tmp_path, parts[1], parts[1].name)
    assert "give the first part" in line
    renamed = tmp_path / "parts" / "model.gguf"
    parts[0].rename(renamed)
    line = refused(tmp_path, renamed, "model.gguf")
    assert "-00001-of-00004.gguf" in line


def test_a_failed_keep_split_leaves_no_part(tmp_path):
    """A NaN in the last part's tensor: no part appears, and an old part stays as it was."""
    def nan(name, a):
        if name == "blk.1.ffn_down.weight":
            a[1, 1] = np.nan
    _, parts = split_model(tmp_path, fill=nan)
    old = tmp_path / "o-00001-of-00004.gguf"
    old.write_bytes(b"old")
    r = run("-q", "--keep-split", parts[0], tmp_path / "o", "Q8_0", ok=False)
    assert r.returncode == 1 and "blk.1.ffn_down.weight" in one_line(r)
    assert old.read_bytes() == b"old"
    nothing_left(tmp_path, {"whole.gguf", "parts", old.name})


def test_keep_split_refuses_an_empty_middle_part(tmp_path):
    """Parts 1 and 3 hold tensors, part 2 none: the merged output is fine; --keep-split
    is refused before anything is written (llama_model_quantize crashes on it)."""
    whole = tiny_llama(tmp_path / "whole.gguf", layers=1)
    (tmp_path / "parts").mkdir()
    r = gguf.GGUFReader(whole)
    names = [t.name for t in r.tensors]
    groups = [names[:4], [], names[4:]]
    for k, group in enumerate(groups):
        w = gguf.GGUFWriter(str(tmp_path / "parts" / f"m-{k + 1:05d}-of-00003.gguf"), "llama")
        if k == 0:
            for f in r.fields.values():
                if not f.name.startswith("GGUF.") and f.name != "general.architecture":
                    w.add_key_value(f.name, f.contents(), f.types[0],
                                    f.types[-1] if f.types[0] == gguf.GGUFValueType.ARRAY
                                    else None)
        w.add_uint16("split.no", k)
        w.add_uint16("split.count", 3)
        w.add_int32("split.tensors.count", len(names))
        for t in r.tensors:
            if t.name in group:
                w.add_tensor(t.name, t.data, raw_dtype=t.tensor_type)
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_tensors_to_file()
        w.close()
    first = tmp_path / "parts" / "m-00001-of-00003.gguf"
    run("-q", first, tmp_path / "a.gguf", "Q8_0")
    run("-q", whole, tmp_path / "b.gguf", "Q8_0")
    assert (tmp_path / "a.gguf").read_bytes() == (tmp_path / "b.gguf").read_bytes()
    r = run("-q", "--keep-split", first, tmp_path / "o", "Q8_0", ok=False)
    assert r.returncode == 1
    assert "part 2 of 3 holds no tensors" in one_line(r)
    nothing_left(tmp_path, {"whole.gguf", "parts", "a.gguf", "b.gguf"})
