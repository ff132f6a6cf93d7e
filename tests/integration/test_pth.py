"""formats/pth against what torch itself wrote and read back.

fixtures/pth/MANIFEST-tensors.tsv holds, for every tensor torch.save wrote, the
sha256 of torch's own t.contiguous() bytes (scripts/make_torch_fixtures.py);
our reader, driven through tests/tools/lc-pth-dump, must give the same bytes.
Hostile and malformed checkpoints must fail cleanly with the right code, and a
hostile payload must never run (no marker file appears).
"""
import collections
import hashlib
import io
import json
import os
import struct
import subprocess
import zipfile
import zlib

import pytest

from pth_manifest import pth_manifest

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", ".."))
FIX = os.path.join(ROOT, "fixtures")
DUMP = os.path.join(os.environ.get("LC_TEST_BIN", os.path.join(ROOT, "build", "test-bin")),
                    "lc-pth-dump")


MANIFEST = pth_manifest()
UNSUPPORTED = {"complex.pth"}  # complex64: no safetensors-compatible dtype in our IR


def dump(path, *args, cwd=None):
    return subprocess.run([DUMP, *args, path], capture_output=True, text=True, cwd=cwd,
                          timeout=60)


def parse(out):
    tensors, meta = [], collections.OrderedDict()
    for line in out.splitlines():
        f = line.split("\t")
        if f[0] == "tensor":
            tensors.append({"name": f[1], "dtype": f[2], "shape": f[3], "nbytes": int(f[4]),
                            "kind": f[5]})
        elif f[0] == "meta":
            meta[f[1]] = f[2]
    return tensors, meta


def load_raw(path, tmp_path, *args):
    raw = tmp_path / "raw"
    raw.mkdir(exist_ok=True)
    r = dump(path, "--raw", str(raw), *args)
    assert r.returncode == 0, r.stderr
    tensors, meta = parse(r.stdout)
    for i, t in enumerate(tensors):
        data = (raw / f"{i}.bin").read_bytes()
        assert len(data) == t["nbytes"], t["name"]
        t["sha256"] = hashlib.sha256(data).hexdigest()
    return tensors, meta


@pytest.mark.parametrize("rel", list(MANIFEST))
@pytest.mark.parametrize("mode", [[], ["--chunk", "7"], ["--zero-copy"]])
def test_every_fixture_matches_torch(rel, mode, tmp_path):
    """Every tensor of every torch-written file: names in pickle order, dtype, shape and
    the bytes torch's t.contiguous() has; chunk 7 reads across element boundaries,
    --zero-copy reads stored storages through the map instead of pread."""
    path = os.path.join(FIX, rel)
    if os.path.basename(rel) in UNSUPPORTED:
        r = dump(path, "--key", ".")
        assert r.returncode == 1
        assert r.stderr.startswith("lc-pth-dump: unsupported: ")
        assert "ComplexFloatStorage" in r.stderr
        return
    got, _ = load_raw(path, tmp_path, "--key", ".", *mode)
    want = MANIFEST[rel]
    assert [t["name"] for t in got] == [w["name"] for w in want]
    for t, w in zip(got, want):
        assert (t["dtype"], t["shape"], t["sha256"]) == (w["dtype"], w["shape"], w["sha256"]), \
            t["name"]


def versions():
    return sorted(d for d in os.listdir(os.path.join(FIX, "pth"))
                  if os.path.isdir(os.path.join(FIX, "pth", d)))


@pytest.mark.parametrize("ver", versions())
def test_zero_copy_where_possible(ver):
    """With zero_copy, stored little-endian contiguous storages are views; without,
    and for DEFLATE or strided storages, tensors are lazy sources."""
    for name, flags, kind in (("tiny_llama.pth", ["--zero-copy"], "view"),
                              ("legacy.pth", ["--zero-copy"], None),
                              ("tiny_llama.pth", [], "lazy"),
                              ("tiny_llama_deflate.pth", ["--zero-copy"], "lazy"),
                              ("noncontig.pth", ["--zero-copy"], "lazy")):
        r = dump(os.path.join(FIX, "pth", ver, name), *flags)
        t, _ = parse(r.stdout)
        assert t, r.stderr
        if kind:
            assert all(x["kind"] == kind for x in t), (name, flags)
        else:   # legacy: the transposed "t" is gathered, the rest are views
            assert [x["kind"] for x in t] == ["view"] * 6 + ["lazy"]


@pytest.mark.parametrize("ver", versions())
def test_nested_checkpoint_picks_model(ver, tmp_path):
    path = os.path.join(FIX, "pth", ver, "checkpoint.pth")
    got, meta = load_raw(path, tmp_path)
    want = [w for w in MANIFEST[f"pth/{ver}/checkpoint.pth"] if w["name"].startswith("model.")]
    assert [t["name"] for t in got] == [w["name"][len("model."):] for w in want]
    assert [t["sha256"] for t in got] == [w["sha256"] for w in want]
    assert meta == {"epoch": "5", "step": "123", "best": "0.5"}


@pytest.mark.parametrize("ver", versions())
def test_key_selects_optimizer_state(ver, tmp_path):
    path = os.path.join(FIX, "pth", ver, "checkpoint.pth")
    got, _ = load_raw(path, tmp_path, "--key", "optimizer.state")
    want = [w for w in MANIFEST[f"pth/{ver}/checkpoint.pth"]
            if w["name"].startswith("optimizer.state.")]
    assert [t["name"] for t in got] == [w["name"][len("optimizer.state."):] for w in want]
    assert [t["sha256"] for t in got] == [w["sha256"] for w in want]


def test_key_missing_is_notfound():
    r = dump(os.path.join(FIX, "pth", versions()[0], "checkpoint.pth"), "--key", "ema")
    assert r.returncode == 1 and r.stderr.startswith("lc-pth-dump: notfound: ")
    assert '"ema"' in r.stderr


@pytest.mark.parametrize("ver", versions())
def test_dedupe_follows_safetensors_convert(ver):
    """safetensors' convert keeps, per overlapping group, the whole-storage tensor with
    the smallest name: grid covers the shared base; embed.weight < lm_head.weight."""
    r = dump(os.path.join(FIX, "pth", ver, "shared.pth"), "--dedupe")
    assert r.returncode == 0, r.stderr
    tensors, meta = parse(r.stdout)
    assert [t["name"] for t in tensors] == ["grid", "embed.weight", "lone"]
    assert meta == {"head": "grid", "tail": "grid", "odd": "grid",
                    "lm_head.weight": "embed.weight"}
    r = dump(os.path.join(FIX, "pth", ver, "shared.pth"))
    assert len(parse(r.stdout)[0]) == 7   # without --dedupe every name is its own tensor


@pytest.mark.parametrize("ver", versions())
def test_sharded_folder(ver, tmp_path):
    folder = os.path.join(FIX, "pth", ver, "sharded")
    with open(os.path.join(folder, "pytorch_model.bin.index.json")) as f:
        wmap = json.load(f)["weight_map"]
    for target in (folder, os.path.join(folder, "pytorch_model.bin.index.json")):
        got, _ = load_raw(target, tmp_path)
        assert sorted(t["name"] for t in got) == sorted(wmap)
        want = {}
        for shard in set(wmap.values()):
            for w in MANIFEST[f"pth/{ver}/sharded/{shard}"]:
                want[w["name"]] = w["sha256"]
        assert {t["name"]: t["sha256"] for t in got} == want
    # An index named without a folder: its shards are in the current one.
    r = dump("pytorch_model.bin.index.json", cwd=folder)
    assert r.returncode == 0, r.stderr
    assert sorted(t["name"] for t in parse(r.stdout)[0]) == sorted(wmap)


def write_index(folder, wmap):
    with open(os.path.join(folder, "pytorch_model.bin.index.json"), "w") as f:
        json.dump({"metadata": {}, "weight_map": wmap}, f)


@pytest.mark.parametrize("case", ["missing", "extra", "moved", "escape"])
def test_sharded_index_lies(case, tmp_path):
    ver = versions()[-1]
    src = os.path.join(FIX, "pth", ver, "sharded")
    with open(os.path.join(src, "pytorch_model.bin.index.json")) as f:
        wmap = json.load(f)["weight_map"]
    for name in set(wmap.values()):
        (tmp_path / name).write_bytes(open(os.path.join(src, name), "rb").read())
    shards = sorted(set(wmap.values()))
    name = sorted(wmap)[0]
    if case == "missing":
        wmap["not.a.tensor"] = shards[0]
    elif case == "extra":
        del wmap[name]
    elif case == "moved":
        wmap[name] = [s for s in shards if s != wmap[name]][0]
    else:
        wmap[name] = "../" + wmap[name]
    write_index(str(tmp_path), wmap)
    r = dump(str(tmp_path))
    assert r.returncode == 1
    code = "malformed" if case == "escape" else "mismatch"
    assert r.stderr.startswith(f"lc-pth-dump: {code}: "), r.stderr


# ---- hostile and malformed checkpoints ----

HOSTILE = {
    "forbidden-os_system.bin": "os.system",
    "forbidden-builtins_eval.bin": "builtins.eval",
    "forbidden-subprocess_popen.bin": "subprocess.Popen",
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_refused_and_never_run(name, tmp_path):
    r = dump(os.path.join(FIX, "bad", "pth", name), cwd=tmp_path)
    assert r.returncode == 1
    assert r.stderr.startswith("lc-pth-dump: forbidden: "), r.stderr
    assert HOSTILE[name] in r.stderr
    assert "archive/data.pkl" in r.stderr
    assert not [f for f in os.listdir(tmp_path) if f.startswith("LC_PWNED_")]


PICKLE_BAD = os.path.join(FIX, "bad", "pickle")


@pytest.mark.parametrize("name", sorted(f for f in os.listdir(PICKLE_BAD)
                                        if f.startswith("forbidden-")))
def test_hostile_plain_pickles_refused_as_checkpoints(name, tmp_path):
    """The pickle helper's hostile corpus, saved as .pth: refused by the allowlist
    (whatever the protocol), never run."""
    r = dump(os.path.join(PICKLE_BAD, name), cwd=tmp_path)
    assert r.returncode == 1
    assert r.stderr.startswith("lc-pth-dump: forbidden: "), r.stderr
    assert os.listdir(tmp_path) == []


def test_local_central_name_mismatch_refused(tmp_path):
    r = dump(os.path.join(FIX, "bad", "pth", "malformed-zip_name_mismatch.bin"), cwd=tmp_path)
    assert r.returncode == 1
    assert r.stderr.startswith("lc-pth-dump: malformed: "), r.stderr
    assert not [f for f in os.listdir(tmp_path) if f.startswith("LC_PWNED_")]


def bstr(s):
    b = s.encode()
    return b"X" + struct.pack("<I", len(b)) + b


def tensor_pickle(key="0", cls=b"FloatStorage", numel=4, offset=0, size=(4,), stride=(1,),
                  extra=b""):
    """data.pkl for {'w': tensor} built from opcodes, like torch writes it."""
    dims = lambda t: b"(" + b"".join(b"J" + struct.pack("<i", d) for d in t) + b"t"
    p = b"\x80\x02}q\x00(" + bstr("w") + b"ctorch._utils\n_rebuild_tensor_v2\n("
    p += b"(" + bstr("storage") + b"ctorch\n" + cls + b"\n" + bstr(key) + bstr("cpu")
    p += b"J" + struct.pack("<i", numel) + b"tQ"
    p += b"J" + struct.pack("<i", offset) + dims(size) + dims(stride) + b"\x89"
    p += b"ccollections\nOrderedDict\n)R" + extra + b"tRu."
    return p


def torch_zip(path, entries, method=zipfile.ZIP_STORED):
    with zipfile.ZipFile(path, "w", method) as z:
        for name, data in entries:
            z.writestr(zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0)), data)


FLOATS = struct.pack("<4f", 1.0, -2.0, 3.5, 4.0)
BAD_CASES = {
    "no_data_pkl": ([("archive/version", b"3\n")], "notfound"),
    "missing_storage": ([("archive/data.pkl", tensor_pickle(key="7"))], "notfound"),
    "short_storage": ([("archive/data.pkl", tensor_pickle()), ("archive/data/0", FLOATS[:12])],
                      "malformed"),
    "view_past_storage": ([("archive/data.pkl", tensor_pickle(offset=1)),
                           ("archive/data/0", FLOATS)], "malformed"),
    "stride_past_storage": ([("archive/data.pkl", tensor_pickle(size=(2, 2), stride=(3, 1))),
                             ("archive/data/0", FLOATS)], "malformed"),
    "bad_byteorder": ([("archive/data.pkl", tensor_pickle()), ("archive/byteorder", b"middle"),
                       ("archive/data/0", FLOATS)], "malformed"),
    "complex_storage": ([("archive/data.pkl", tensor_pickle(cls=b"ComplexFloatStorage")),
                         ("archive/data/0", FLOATS * 2)], "unsupported"),
    "conj_metadata": ([("archive/data.pkl", tensor_pickle(extra=b"}" + bstr("conj") + b"\x88s")),
                       ("archive/data/0", FLOATS)], "unsupported"),
    "two_checkpoints": ([("a/data.pkl", tensor_pickle()), ("a/data/0", FLOATS),
                         ("b/data.pkl", tensor_pickle())], "malformed"),
}


@pytest.mark.parametrize("case", sorted(BAD_CASES))
def test_malformed_checkpoints(case, tmp_path):
    entries, code = BAD_CASES[case]
    path = tmp_path / "bad.pth"
    torch_zip(path, entries)
    r = dump(str(path))
    assert r.returncode == 1, r.stdout
    assert r.stderr.startswith(f"lc-pth-dump: {code}: "), r.stderr


def test_handmade_good_checkpoint_and_negation(tmp_path):
    """The hand-built pickle reads as torch would: offsets, strides, neg metadata."""
    path = tmp_path / "ok.pth"
    torch_zip(path, [("archive/data.pkl",
                      tensor_pickle(size=(2, 2), stride=(1, 2),
                                    extra=b"}" + bstr("neg") + b"\x88s")),
                     ("archive/data/0", FLOATS)])
    raw = tmp_path / "raw"
    raw.mkdir()
    r = dump(str(path), "--raw", str(raw))
    assert r.returncode == 0, r.stderr
    assert struct.unpack("<4f", (raw / "0.bin").read_bytes()) == (-1.0, -3.5, 2.0, -4.0)


@pytest.mark.parametrize("ver", versions())
@pytest.mark.parametrize("name", ["tiny_llama.pth", "legacy.pth", "tiny_llama_deflate.pth"])
def test_truncated_files_fail_cleanly(ver, name, tmp_path):
    data = open(os.path.join(FIX, "pth", ver, name), "rb").read()
    for cut in sorted({1, 2, 9, 30, 100, len(data) // 3, len(data) // 2, len(data) - 22,
                       len(data) - 1}):
        p = tmp_path / f"cut{cut}.pth"
        p.write_bytes(data[:cut])
        r = dump(str(p))
        assert r.returncode == 1, cut
        code = r.stderr.split(":")[1].strip()
        assert code in {"truncated", "malformed", "notfound"}, (cut, r.stderr)


def test_deflated_data_pkl_and_storage(tmp_path):
    path = tmp_path / "deflated.pth"
    torch_zip(path, [("archive/data.pkl", tensor_pickle(size=(2, 2), stride=(1, 2))),
                     ("archive/data/0", FLOATS)], method=zipfile.ZIP_DEFLATED)
    raw = tmp_path / "raw"
    raw.mkdir()
    r = dump(str(path), "--raw", str(raw), "--chunk", "3")
    assert r.returncode == 0, r.stderr
    assert struct.unpack("<4f", (raw / "0.bin").read_bytes()) == (1.0, 3.5, -2.0, 4.0)
