"""Bare safetensors <-> GGUF: safetensors2gguf then gguf2safetensors must give back the
input byte for byte; gguf-py must read the GGUF in between, with the widened types."""
import json
import os
import struct
import subprocess

import ml_dtypes
import numpy as np
import pytest
from gguf import GGUFReader, GGMLQuantizationType as QT

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.environ.get("LC_BIN", os.path.join(ROOT, "build", "bin"))
SRC = os.path.join(ROOT, "fixtures", "gguf", "bare_all_dtypes.safetensors")

CARRIER = {"bool": QT.I8, "u8": QT.I16, "i8": QT.I8, "u16": QT.I32, "i16": QT.I16,
           "u32": QT.I64, "i32": QT.I32, "u64": QT.I64, "i64": QT.I64, "f16": QT.F16,
           "bf16": QT.BF16, "f32": QT.F32, "f64": QT.F64, "f8_e4m3": QT.F16,
           "f8_e5m2": QT.F16, "scalar": QT.F32}


def run(tool, *args):
    r = subprocess.run([os.path.join(BIN, tool), "-q", *map(str, args)],
                       capture_output=True, text=True)
    return r.returncode, r.stderr.strip()


def st_tensors(path):
    """{name: numpy array} of a safetensors file, parsed by hand so that BF16 and F8
    come out as ml_dtypes arrays (safetensors.numpy has no BF16)."""
    raw = open(path, "rb").read()
    n = struct.unpack_from("<Q", raw)[0]
    hdr = json.loads(raw[8:8 + n])
    hdr.pop("__metadata__", None)
    out = {}
    for name, e in hdr.items():
        b, end = e["data_offsets"]
        dt = NP[e["dtype"]]
        out[name] = np.frombuffer(raw[8 + n + b:8 + n + end], dtype=dt).reshape(e["shape"])
    return out


NP = {"BOOL": np.bool_, "U8": np.uint8, "I8": np.int8, "U16": np.uint16, "I16": np.int16,
      "U32": np.uint32, "I32": np.int32, "U64": np.uint64, "I64": np.int64,
      "F16": np.float16, "BF16": ml_dtypes.bfloat16, "F32": np.float32, "F64": np.float64,
      "F8_E4M3": ml_dtypes.float8_e4m3fn, "F8_E5M2": ml_dtypes.float8_e5m2}


def test_round_trip_is_byte_identical(tmp_path):
    g, back = tmp_path / "x.gguf", tmp_path / "back.safetensors"
    assert run("safetensors2gguf", SRC, g) == (0, "")
    r = GGUFReader(str(g))
    assert {t.name: t.tensor_type for t in r.tensors} == CARRIER
    assert r.fields["format"].contents() == "np"
    assert r.fields["safetensors.dtype.u8"].contents() == "U8"
    assert r.fields["safetensors.dtype.f8_e5m2"].contents() == "F8_E5M2"
    assert "safetensors.dtype.f32" not in r.fields
    assert "general.architecture" not in r.fields
    # Every widened value equals the original value (NaN where it was NaN).
    orig = st_tensors(SRC)
    for t in r.tensors:
        want = orig[t.name]
        got = t.data.view(np.uint16).view(ml_dtypes.bfloat16) if t.tensor_type == QT.BF16 \
            else t.data
        assert list(reversed([int(x) for x in t.shape])) == list(want.shape) or \
            (want.shape == () and [int(x) for x in t.shape] in ([], [1])), t.name
        if want.dtype.kind in "biu":
            assert np.array_equal(np.asarray(got, np.int64).ravel(),
                                  want.astype(np.int64).ravel()), t.name
        else:
            assert np.array_equal(np.asarray(got, np.float64).ravel(),
                                  want.astype(np.float64).ravel(), equal_nan=True), t.name
    assert run("gguf2safetensors", g, back) == (0, "")
    assert back.read_bytes() == open(SRC, "rb").read()


def test_u64_above_int64_is_a_clear_error(tmp_path):
    src = os.path.join(ROOT, "fixtures", "gguf", "bare_u64_big.safetensors")
    rc, msg = run("safetensors2gguf", src, tmp_path / "x.gguf")
    assert rc == 1
    n = struct.unpack_from("<Q", open(src, "rb").read())[0]
    # the input file, the tensor, and the byte offset of element 1 (2^63) in the input
    assert msg.startswith("safetensors2gguf: %s: big @ 0x%x: " % (src, 8 + n + 8)), msg
    assert "does not fit I64" in msg, msg
    assert not os.listdir(tmp_path), "no output and no temp file after a failure"


def test_quantized_gguf_is_refused_by_gguf2safetensors(tmp_path):
    rc, msg = run("gguf2safetensors", os.path.join(ROOT, "fixtures", "gguf", "tensors.gguf"),
                  tmp_path / "x.safetensors")
    assert rc == 1, msg
    assert ": w.q" in msg and "no such dtype" in msg, msg   # a quantized tensor, by name
    assert not os.listdir(tmp_path)


@pytest.mark.parametrize("tool", ["safetensors2gguf", "gguf2safetensors"])
def test_usage(tool):
    r = subprocess.run([os.path.join(BIN, tool)], capture_output=True, text=True)
    assert r.returncode == 2 and "usage:" in r.stderr
    r = subprocess.run([os.path.join(BIN, tool), "--help"], capture_output=True, text=True)
    assert r.returncode == 0 and "usage:" in r.stdout


def test_vocab_only_round_trip_claims_no_architecture(tmp_path):
    """A vocab-only GGUF -> safetensors (its keys as strings in __metadata__) -> GGUF is
    a container: no general.architecture (llama.cpp would read the strings as the
    model's typed keys); back to safetensors it is the same file."""
    v, st, g, st2 = (tmp_path / n for n in ("v.gguf", "v.safetensors", "c.gguf", "c.safetensors"))
    assert run("safetensors2gguf", "--vocab-only", os.path.join(ROOT, "fixtures", "hf",
                                                                "llama-spm"), v)[0] == 0
    assert run("gguf2safetensors", v, st) == (0, "")
    assert run("safetensors2gguf", st, g) == (0, "")
    f = GGUFReader(str(g)).fields
    assert "general.architecture" not in f
    assert bytes(f["safetensors.general.architecture"].parts[-1]) == b"llama"
    assert run("gguf2safetensors", g, st2) == (0, "")
    assert st2.read_bytes() == st.read_bytes()
