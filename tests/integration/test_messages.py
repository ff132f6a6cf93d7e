"""What the tools print about a file never carries the file's raw bytes, and names the
right file (issue 11, items 14 and 16).

Names read from a file reach the error line, model-inspect's report (text and JSON)
and pth2safetensors --list; a name holding a newline and ANSI escapes must not forge
a second, coloured line there. And an error found while writing, at an offset in an
input (a CRC, a value the cast cannot hold), names that input, not the output.
"""
import json
import os
import re
import struct
import subprocess
import zipfile

import numpy as np
import pytest
from safetensors.numpy import save_file

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.environ.get("LC_BIN", os.path.join(ROOT, "build", "bin"))
HOSTILE = "a\nall checks passed\x1b[32m"
# Any C0 control, DEL, or the C1 range as UTF-8: what a terminal acts on.
RAW = re.compile(rb"[\x00-\x08\x0a-\x1f\x7f]|\xc2[\x80-\x9f]")


def tool(name, *args):
    return subprocess.run([os.path.join(BIN, name), *map(str, args)], capture_output=True,
                          timeout=60)


def assert_clean(out):
    m = RAW.search(out)
    assert m is None, f"raw byte {m.group()!r} in {out!r}"


def assert_one_line(err):
    assert err.endswith(b"\n") and err.count(b"\n") == 1, err
    assert_clean(err[:-1])
    assert b"all checks passed\\x1b[32m" in err, err


# ---- GGUF ----

def gstr(s):
    b = s.encode() if isinstance(s, str) else s
    return struct.pack("<Q", len(b)) + b


def gguf(keys=(), tensors=(), data_len=None):
    """keys: names of u8 values; tensors: names of 1-element F32 tensors."""
    b = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(keys) + 1)
    b += gstr("general.architecture") + struct.pack("<I", 8) + gstr("llama")
    for k in keys:
        b += gstr(k) + struct.pack("<IB", 0, 1)
    for i, t in enumerate(tensors):
        b += gstr(t) + struct.pack("<IQIQ", 1, 1, 0, 32 * i)
    b += bytes(-len(b) % 32)
    return b + bytes(32 * len(tensors) if data_len is None else data_len)


def test_gguf_key_with_escapes(tmp_path):
    p = tmp_path / "k.gguf"
    p.write_bytes(gguf(keys=[HOSTILE], tensors=["w"]))
    r = tool("gguf2safetensors", p, tmp_path / "o.safetensors")      # a strict reader
    assert r.returncode == 1
    assert_one_line(r.stderr)
    assert b"control byte" in r.stderr
    for args in ([], ["--json"]):                                     # shown anyway
        r = tool("model-inspect", *args, p)
        assert r.returncode == 1, r.stderr
        assert_one_line(r.stderr)
        assert_clean(r.stdout.replace(b"\n", b""))
        assert b"all checks passed" in r.stdout
    j = json.loads(r.stdout)
    assert HOSTILE in j["metadata"]
    assert [w["rule"] for w in j["warnings"] if w["refused"]] == ["gguf.key-control"]


def test_gguf_tensor_name_with_escapes(tmp_path):
    p = tmp_path / "t.gguf"
    p.write_bytes(gguf(tensors=["x", HOSTILE], data_len=34))          # data past the end
    r = tool("model-inspect", p)
    assert r.returncode == 1
    assert_one_line(r.stderr)
    p.write_bytes(gguf(tensors=["x", HOSTILE]))
    r = tool("model-inspect", p)
    assert r.returncode == 0, r.stderr
    assert_clean(r.stdout.replace(b"\n", b""))
    assert b'"a\\nall checks passed\\u001b[32m"' in r.stdout


# ---- safetensors ----

def test_safetensors_name_with_escapes(tmp_path):
    p = tmp_path / "s.safetensors"
    save_file({HOSTILE: np.zeros(2, np.float32), "b": np.ones(1, np.uint8)}, str(p))
    r = tool("model-inspect", p)
    assert r.returncode == 0
    assert_clean(r.stdout.replace(b"\n", b""))
    assert b'"a\\nall checks passed\\u001b[32m"' in r.stdout
    # The same header with one byte too few of data: the error names the tensor.
    data = p.read_bytes()
    n = struct.unpack("<Q", data[:8])[0]
    hdr = json.loads(data[8:8 + n])
    hdr[HOSTILE]["data_offsets"] = [0, 7]
    hdr["b"]["data_offsets"] = [7, 8]
    text = json.dumps(hdr).encode()
    p.write_bytes(struct.pack("<Q", len(text)) + text + bytes(8))
    for name, args in (("model-inspect", [p]), ("safetensors-rewrite", [p, tmp_path / "o"])):
        r = tool(name, *args)
        assert r.returncode == 1
        assert_one_line(r.stderr)


# ---- PyTorch ----

def bstr(s):
    b = s.encode()
    return b"X" + struct.pack("<I", len(b)) + b


def pth(path, name, offset=0, method=zipfile.ZIP_STORED, crc=None, values=None):
    """{name: FloatTensor(4)} as torch.save writes it (or of `values`, a float32 array);
    `crc` overrides the storage's."""
    data = struct.pack("<4f", 1, 2, 3, 4) if values is None else values.tobytes()
    n = struct.pack("<I", len(data) // 4)
    dims = b"(J" + n + b"t(J\x01\x00\x00\x00t"
    p = b"\x80\x02ccollections\nOrderedDict\nq\x00)R(" + bstr(name)
    p += b"ctorch._utils\n_rebuild_tensor_v2\n((" + bstr("storage")
    p += b"ctorch\nFloatStorage\n" + bstr("0") + bstr("cpu") + b"J" + n + b"tQ"
    p += b"J" + struct.pack("<i", offset) + dims + b"\x89ccollections\nOrderedDict\n)RtRu."
    with zipfile.ZipFile(path, "w") as z:
        for entry, data, m in (("archive/data.pkl", p, zipfile.ZIP_STORED),
                               ("archive/data/0", data, method)):
            zi = zipfile.ZipInfo(entry, date_time=(2020, 1, 1, 0, 0, 0))
            zi.compress_type = m
            z.writestr(zi, data)
    if crc is not None:   # in the local and the central header alike
        b = bytearray(open(path, "rb").read())
        for sig, crc_at, name_len_at, name_at in ((b"PK\x03\x04", 14, 26, 30),
                                                  (b"PK\x01\x02", 16, 28, 46)):
            i = b.find(sig)
            while i >= 0:
                n = struct.unpack_from("<H", b, i + name_len_at)[0]
                if bytes(b[i + name_at:i + name_at + n]) == b"archive/data/0":
                    struct.pack_into("<I", b, i + crc_at, crc)
                i = b.find(sig, i + 4)
        open(path, "wb").write(bytes(b))


def test_pth_name_with_escapes(tmp_path):
    p = tmp_path / "n.pth"
    pth(p, HOSTILE)
    r = tool("pth2safetensors", "--list", p)
    assert r.returncode == 0, r.stderr
    assert r.stdout == b"a\\nall checks passed\\x1b[32m\tF32\t[4]\n"
    r = tool("model-inspect", p)
    assert_clean(r.stdout.replace(b"\n", b""))
    r = tool("pth2safetensors", p, tmp_path / "o.safetensors")
    assert r.returncode == 0, r.stderr


def test_pickle_global_with_escapes(tmp_path):
    """A module name from STACK_GLOBAL may hold any bytes: --scan and the error line."""
    p = tmp_path / "g.pth"
    pkl = b"\x80\x04" + bstr(HOSTILE) + bstr("system") + b"\x93)R."
    with zipfile.ZipFile(p, "w") as z:
        z.writestr(zipfile.ZipInfo("archive/data.pkl", date_time=(2020, 1, 1, 0, 0, 0)), pkl)
    r = tool("pth2safetensors", "--scan", p)
    assert r.returncode == 1, r.stderr
    assert_clean(r.stdout[:-1])
    assert r.stdout.endswith(b"all checks passed\\x1b[32m.system FORBIDDEN\n"), r.stdout
    assert_one_line(r.stderr)
    r = tool("pth2safetensors", p, tmp_path / "o.safetensors")
    assert r.returncode == 1
    assert_one_line(r.stderr)


# ---- errors found while writing name the input they are about ----

def test_pth_bad_crc_names_the_checkpoint(tmp_path):
    p = tmp_path / "crc.pth"
    pth(p, "w", method=zipfile.ZIP_DEFLATED, crc=0xDEADBEEF)
    out = tmp_path / "out.safetensors"
    for args in ([], ["--dtype", "f16"]):
        r = tool("pth2safetensors", "-q", *args, p, out)
        assert r.returncode == 1
        assert r.stderr.startswith(b"pth2safetensors: " + str(p).encode() + b": archive/data/0"
                                   b" @ 0x"), r.stderr
        assert b"crc32" in r.stderr and str(out).encode() not in r.stderr
        assert not out.exists()


@pytest.mark.parametrize("n", [4, 1 << 20])     # 4 MiB: the kernel-copy path
def test_pth_flipped_stored_bytes_fail_the_crc(tmp_path, n):
    """A STORED storage whose bytes no longer match its CRC-32 fails, on the pread path
    and on copy_file_range's (where the bytes never reach this process), naming the
    checkpoint, the entry and the offset of its CRC field, as torch.load refuses it."""
    p = tmp_path / "flip.pth"
    pth(p, "w", values=np.arange(n, dtype=np.float32))
    b = bytearray(p.read_bytes())
    i = b.find(np.arange(n, dtype=np.float32).tobytes()[:16])
    b[i + 4 * (n // 2) + 1] ^= 0x40             # one data byte, in the middle
    p.write_bytes(bytes(b))
    cd = b.rfind(b"PK\x01\x02")                 # the data entry's central header is last
    assert b[cd + 46:cd + 46 + 14] == b"archive/data/0"
    out = tmp_path / "out.safetensors"
    for args in ([], ["--dtype", "f16"]):
        r = tool("pth2safetensors", "-q", *args, p, out)
        assert r.returncode == 1, r.stderr
        assert r.stderr.count(b"\n") == 1, r.stderr
        assert r.stderr.startswith(b"pth2safetensors: %s: archive/data/0 @ 0x%x: crc32 of the "
                                   b"data is " % (str(p).encode(), cd + 16)), r.stderr
        assert not out.exists()
    r = tool("pth2safetensors", "--list", p)       # listing reads no data
    assert r.returncode == 0, r.stderr


def test_gguf_value_that_does_not_fit_names_the_gguf(tmp_path):
    st, g = tmp_path / "u.safetensors", tmp_path / "u.gguf"
    save_file({"big": np.array([1, 2], np.uint64)}, str(st))
    assert tool("safetensors2gguf", "-q", st, g).returncode == 0
    b = bytearray(g.read_bytes())
    b[-32 + 8:-32 + 16] = b"\xff" * 8     # element 1 becomes -1: no U64 holds it
    g.write_bytes(bytes(b))
    out = tmp_path / "back.safetensors"
    r = tool("gguf2safetensors", "-q", g, out)
    assert r.returncode == 1
    assert r.stderr.startswith(b"gguf2safetensors: " + str(g).encode() + b": big @ 0x"), r.stderr
    assert b"does not fit U64" in r.stderr and not out.exists()
