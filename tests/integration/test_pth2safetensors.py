"""pth2safetensors against the real consumer: every torch-written fixture converts,
safetensors opens the result, and every tensor's bytes are the ones torch had
(sha256 from fixtures/pth/MANIFEST-tensors.tsv)."""
import hashlib
import json
import os
import struct
import subprocess

import numpy as np
import pytest

from pth_manifest import pth_manifest
from safetensors import safe_open

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", ".."))
FIX = os.path.join(ROOT, "fixtures")
TOOL = os.path.join(os.environ.get("LC_BIN", os.path.join(ROOT, "build", "bin")),
                    "pth2safetensors")


MANIFEST = pth_manifest()
NUMPY = {"F64": np.float64, "F32": np.float32, "F16": np.float16, "I64": np.int64,
         "I32": np.int32, "I16": np.int16, "I8": np.int8, "U8": np.uint8, "BOOL": np.bool_,
         "U16": np.uint16, "U32": np.uint32, "U64": np.uint64}


def run(*args, cwd=None):
    return subprocess.run([TOOL, *args], capture_output=True, text=True, cwd=cwd, timeout=60)


def read_st(path):
    """The file parsed by hand (header + raw bytes), to check the bytes of every dtype."""
    data = open(path, "rb").read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    meta = header.pop("__metadata__", {})
    body = data[8 + n:]
    tensors = {k: (v["dtype"], v["shape"], body[v["data_offsets"][0]:v["data_offsets"][1]])
               for k, v in header.items()}
    return tensors, meta


@pytest.mark.parametrize("rel", [r for r in MANIFEST if "/sharded/" not in r])
def test_convert_every_fixture(rel, tmp_path):
    out = tmp_path / "out.safetensors"
    r = run("-q", "--key", ".", os.path.join(FIX, rel), str(out))
    if rel.endswith("complex.pth"):
        assert r.returncode == 1 and "ComplexFloatStorage" in r.stderr
        assert not out.exists()
        return
    assert r.returncode == 0, r.stderr
    tensors, meta = read_st(out)
    assert meta == {"format": "pt"}
    want = MANIFEST[rel]
    assert sorted(tensors) == sorted(w["name"] for w in want)
    for w in want:
        dtype, shape, raw = tensors[w["name"]]
        assert dtype == w["dtype"] and ",".join(map(str, shape)) == w["shape"], w["name"]
        assert hashlib.sha256(raw).hexdigest() == w["sha256"], w["name"]
    # The real consumer opens it, and agrees on every dtype numpy has.
    with safe_open(str(out), framework="numpy") as f:
        assert sorted(f.keys()) == sorted(tensors)
        for name, (dtype, shape, raw) in tensors.items():
            if dtype in NUMPY:
                a = f.get_tensor(name)
                assert a.dtype == NUMPY[dtype] and list(a.shape) == shape
                assert a.tobytes() == raw


def test_dedupe_metadata_and_values(tmp_path):
    ver = sorted(d for d in os.listdir(os.path.join(FIX, "pth")) if d[0].isdigit())[-1]
    out = tmp_path / "o.safetensors"
    r = run("-q", "--dedupe", os.path.join(FIX, "pth", ver, "shared.pth"), str(out))
    assert r.returncode == 0, r.stderr
    tensors, meta = read_st(out)
    assert sorted(tensors) == ["embed.weight", "grid", "lone"]
    assert meta == {"format": "pt", "head": "grid", "tail": "grid", "odd": "grid",
                    "lm_head.weight": "embed.weight"}
    want = {w["name"]: w["sha256"] for w in MANIFEST[f"pth/{ver}/shared.pth"]}
    for name, (_, _, raw) in tensors.items():
        assert hashlib.sha256(raw).hexdigest() == want[name]


@pytest.mark.parametrize("ver", sorted(d for d in os.listdir(os.path.join(FIX, "pth"))
                                       if d[0].isdigit()))
def test_sharded_folder_to_folder(ver, tmp_path):
    src = os.path.join(FIX, "pth", ver, "sharded")
    out = tmp_path / "out"
    r = run("-q", src, str(out))
    assert r.returncode == 0, r.stderr
    text = (out / "model.safetensors.index.json").read_text()
    index = json.loads(text)
    # Laid out as transformers writes it.
    assert text == json.dumps(index, indent=2, sort_keys=True) + "\n"
    with open(os.path.join(src, "pytorch_model.bin.index.json")) as f:
        old = json.load(f)["weight_map"]
    assert sorted(index["weight_map"]) == sorted(old)
    total = 0
    for name, shard in index["weight_map"].items():
        want_shard = old[name].replace("pytorch_model", "model").replace(".bin", ".safetensors")
        assert shard == want_shard
        tensors, _ = read_st(out / shard)
        raw = tensors[name][2]
        total += len(raw)
        want = [w for w in MANIFEST[f"pth/{ver}/sharded/{old[name]}"] if w["name"] == name]
        assert hashlib.sha256(raw).hexdigest() == want[0]["sha256"]
    assert index["metadata"] == {"total_size": total}


def test_hostile_never_runs(tmp_path):
    for f in sorted(os.listdir(os.path.join(FIX, "bad", "pth"))):
        path = os.path.join(FIX, "bad", "pth", f)
        r = run("-q", path, "out.safetensors", cwd=tmp_path)
        assert r.returncode == 1, f
        assert len(r.stderr.splitlines()) == 1
        s = run("--scan", path, cwd=tmp_path)
        assert s.returncode == (1 if f.startswith("forbidden-") else 2), (f, s.stdout, s.stderr)
        assert sorted(os.listdir(tmp_path)) == [], os.listdir(tmp_path)


def test_dtype_cast_matches_numpy(tmp_path):
    """--dtype f16 rounds as numpy's astype(float16) does; integers are left alone."""
    ver = sorted(d for d in os.listdir(os.path.join(FIX, "pth")) if d[0].isdigit())[-1]
    src = os.path.join(FIX, "pth", ver, "dtypes.pth")
    assert run("-q", src, str(tmp_path / "a.safetensors")).returncode == 0
    r = run("-q", "--dtype", "f16", src, str(tmp_path / "b.safetensors"))
    assert r.returncode == 0, r.stderr
    with safe_open(str(tmp_path / "a.safetensors"), framework="numpy") as a, \
            safe_open(str(tmp_path / "b.safetensors"), framework="numpy") as b:
        for name in ("f32", "f64", "f16", "f32_special"):
            want = a.get_tensor(name).astype(np.float16)
            got = b.get_tensor(name)
            assert got.dtype == np.float16
            assert got.tobytes() == want.tobytes() or np.array_equal(got, want, equal_nan=True)
        for name in ("i64", "i32", "u8", "bool"):
            assert b.get_tensor(name).tobytes() == a.get_tensor(name).tobytes()
    assert run("--dtype", "f8", src, str(tmp_path / "c.safetensors")).returncode == 2


def legacy_hostile():
    """A legacy-format file whose object pickle calls os.system, then a storage."""
    head = (b"\x80\x02\x8a\x0a" + bytes.fromhex("6cfc9c46f9206aa85019") + b"." +
            b"\x80\x02M\xe9\x03." + b"\x80\x02}X\x0d\x00\x00\x00little_endian\x88s.")
    obj = b"\x80\x02cos\nsystem\nX\x18\x00\x00\x00touch LC_PWNED_legacy_os\x85R."
    keys = b"\x80\x02](X\x01\x00\x00\x000e."
    return head + obj + keys + struct.pack("<Q", 1) + struct.pack("<f", 1.0)


@pytest.mark.parametrize("name", ["legacy", "forbidden-os-system.bin",
                                  "forbidden-stack-global-memo.bin"])
def test_scan_lists_payloads_of_legacy_and_plain_pickles(name, tmp_path):
    """--scan names the refused global whatever the container: a legacy torch file, or
    a plain pickle from the pickle corpus (protocol 0 included)."""
    if name == "legacy":
        path = tmp_path / "legacy.pth"
        path.write_bytes(legacy_hostile())
    else:
        path = os.path.join(FIX, "bad", "pickle", name)
    work = tmp_path / "w"
    work.mkdir()
    s = run("--scan", str(path), cwd=work)
    assert s.returncode == 1, (s.stdout, s.stderr)
    assert "FORBIDDEN" in s.stdout
    if name != "forbidden-stack-global-memo.bin":
        assert "os.system FORBIDDEN" in s.stdout or "posix.system FORBIDDEN" in s.stdout
    r = run("-q", str(path), "o.safetensors", cwd=work)
    assert r.returncode == 1 and "allowlist" in r.stderr
    assert os.listdir(work) == []


@pytest.mark.parametrize("ver", sorted(d for d in os.listdir(os.path.join(FIX, "pth"))
                                       if d[0].isdigit()))
def test_sharded_output_is_all_or_nothing(ver, tmp_path):
    """Issue 11 item 5: shard 2 fails while being written (its 7272 bytes pass a
    `ulimit -f` of 6 KiB that shard 1's 5640 bytes fit under): no OUT folder, no shard
    1, no temporary left beside it."""
    src = os.path.join(FIX, "pth", ver, "sharded")
    out = tmp_path / "out"
    r = subprocess.run(["bash", "-c", 'ulimit -f 6; exec "$0" -q "$1" "$2"', TOOL, src,
                        str(out)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 1, r.stderr
    assert "model-00002-of-00002.safetensors" in r.stderr, r.stderr
    assert not out.exists()
    assert list(tmp_path.iterdir()) == []
    # A re-run into an existing OUT that holds someone else's file is refused, untouched.
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    r = run("-q", os.path.join(FIX, "pth", ver, "sharded"), str(out))
    assert r.returncode == 1 and "notes.txt" in r.stderr, r.stderr
    assert [p.name for p in out.iterdir()] == ["notes.txt"]
    # And a re-run over its own earlier output replaces it whole.
    (out / "notes.txt").unlink()
    assert run("-q", os.path.join(FIX, "pth", ver, "sharded"), str(out)).returncode == 0
    first = sorted(p.name for p in out.iterdir())
    assert run("-q", os.path.join(FIX, "pth", ver, "sharded"), str(out)).returncode == 0
    assert sorted(p.name for p in out.iterdir()) == first
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
