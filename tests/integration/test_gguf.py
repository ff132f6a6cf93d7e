"""GGUF reader and writer against gguf-py (the real producer and a real consumer).

Every fixture made by GGUFWriter is copied by lc-gguf-copy (our reader, then our
writer); gguf-py's GGUFReader must then read the copy and agree with the original on
every key, value type, value, tensor name, type, shape and data byte, and the copy must
be byte-identical to the original (the one documented difference: we always write
version 3, so the version-2 fixture differs in its version field only). The bad corpus
must fail with the code and byte offset its generator records."""
import os
import struct
import subprocess
import sys

import numpy as np
import pytest
from gguf import GGUFReader

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import make_gguf_fixtures as gen  # noqa: E402

GOOD = os.path.join(ROOT, "fixtures", "gguf")
BAD = os.path.join(ROOT, "fixtures", "bad", "gguf")
COPY = os.path.join(os.environ.get("LC_TEST_BIN", os.path.join(ROOT, "build", "test-bin")),
                    "lc-gguf-copy")
FIXTURES = sorted(f for f in os.listdir(GOOD) if f.endswith(".gguf"))


def copy(src, dst, chunk=None):
    args = [COPY] + (["--chunk", str(chunk)] if chunk else []) + [src, str(dst)]
    r = subprocess.run(args, capture_output=True, text=True)
    return r.returncode, r.stderr.strip()


def fields(path):
    """{key: (types, raw bytes of every part)} in file order, GGUF.* header fields out."""
    out = {}
    for k, f in GGUFReader(path).fields.items():
        if k.startswith("GGUF."):
            continue
        out[k] = ([int(t) for t in f.types], [bytes(p.tobytes()) for p in f.parts])
    return out


def tensors(path):
    return [(t.name, int(t.tensor_type), [int(x) for x in t.shape], t.data.tobytes())
            for t in GGUFReader(path).tensors]


@pytest.mark.parametrize("name", FIXTURES)
@pytest.mark.parametrize("chunk", [None, 7])
def test_copy_agrees_with_gguf_py(name, chunk, tmp_path):
    src = os.path.join(GOOD, name)
    dst = tmp_path / "copy.gguf"
    rc, msg = copy(src, dst, chunk)
    assert rc == 0, msg
    assert list(fields(src).items()) == list(fields(dst).items())
    assert tensors(src) == tensors(dst)
    a, b = open(src, "rb").read(), dst.read_bytes()
    if name.startswith("v2"):
        assert struct.unpack_from("<I", a, 4)[0] == 2 and struct.unpack_from("<I", b, 4)[0] == 3
        assert a[:4] + a[8:] == b[:4] + b[8:]
    else:
        assert a == b


def test_fixture_values_read_back():
    """Checks decoded values (not just raw parts) for the types gguf-py decodes itself."""
    r = GGUFReader(os.path.join(GOOD, "tensors.gguf"))
    want = {"t.u8": 200, "t.i8": -100, "t.u64": 2**64 - 1, "t.i64": -(2**63),
            "t.string": "hello, gguf", "t.empty_string": "", "t.bool_true": True,
            "t.arr_str": ["a", "", "\u00e9t\u00e9"]}
    for k, v in want.items():
        assert r.fields[k].contents() == v, k
    assert abs(r.fields["t.f32"].contents() - 3.14159) < 1e-6
    names = [t.name for t in r.tensors]
    assert names[:3] == ["w.f32", "w.f16", "w.bf16"]
    f16 = next(t for t in r.tensors if t.name == "w.f16")
    assert [int(x) for x in f16.shape] == [8, 3, 2]      # ne order, innermost first


def test_empty_arrays_copy(tmp_path):
    src = os.path.join(GOOD, "empty_values.gguf")
    rc, msg = copy(src, tmp_path / "e.gguf")
    assert rc == 0, msg
    r = GGUFReader(str(tmp_path / "e.gguf"))
    assert r.fields["e.arr_u32"].contents() == []
    assert r.fields["e.str"].contents() == ""
    assert open(src, "rb").read() == (tmp_path / "e.gguf").read_bytes()


def test_bad_corpus_is_current():
    cases = gen.bad_cases()
    on_disk = sorted(f for f in os.listdir(BAD) if f.endswith(".bin"))
    assert on_disk == sorted(c[0] for c in cases)
    for name, data, _, _ in cases:
        assert open(os.path.join(BAD, name), "rb").read() == data, name


@pytest.mark.parametrize("case", gen.bad_cases(), ids=lambda c: c[0])
def test_bad_file_fails_with_code_and_offset(case, tmp_path):
    name, _, code, off = case
    rc, msg = copy(os.path.join(BAD, name), tmp_path / "out.gguf")
    assert rc == 1, msg
    assert msg.startswith("lc-gguf-copy: %s: " % code), msg
    assert "@ 0x%x: " % off in msg, msg
    assert not os.listdir(tmp_path), "a failed copy must leave no file"
