"""Issue 11 item 12, the metadata part: what a reader holds is bounded by the bytes
it read, whatever the file says.

Each case generates the worst input of its kind and runs the tool under
tests/tools/lc-peak (the tool's own peak RSS, the input's mapped pages included),
asserting peak <= RATIO * input bytes + SLACK: a ratio of memory to input, never a
wall-clock figure. On 02b6cd4 (before packed arrays and the header scanner) these
cost 8 to 70 times their input: 2 GB for a 60 MiB GGUF array in model-inspect, 4.2 GB
in gguf2safetensors, 1.4 GB for a 33 MB safetensors header.
"""
import json
import os
import struct
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(os.environ.get("LC_BIN", ROOT / "build" / "bin"))
TBIN = Path(os.environ.get("LC_TEST_BIN", ROOT / "build" / "test-bin"))
MiB = 1 << 20
# ASan keeps freed memory in quarantine and pads every block: under it a peak-memory
# figure means nothing, so the tools run for their results only.
SANITIZED = b"__asan_init" in (BIN / "model-inspect").read_bytes()


def peak(tmp_path, tool, *args, stdout=subprocess.DEVNULL):
    """(returncode, stderr, peak KiB) of BIN/tool run under lc-peak."""
    report = tmp_path / "peak.txt"
    r = subprocess.run([str(TBIN / "lc-peak"), str(report), str(BIN / tool), *map(str, args)],
                       stdout=stdout, stderr=subprocess.PIPE, text=True, timeout=300)
    return r.returncode, r.stderr, int(report.read_text().split()[1])


def assert_bounded(kib, size, ratio, slack_mib, what):
    if SANITIZED:
        return
    limit = ratio * size + slack_mib * MiB
    assert kib * 1024 <= limit, (f"{what}: peak {kib} KiB for {size} input bytes, "
                                 f"more than {ratio} x + {slack_mib} MiB ({limit // 1024} KiB)")


# ---- GGUF metadata arrays ----

def gstr(s):
    b = s.encode() if isinstance(s, str) else s
    return struct.pack("<Q", len(b)) + b


def gguf(path, key, vtype, payload):
    """A GGUF with one metadata entry and one F32 tensor of 8 elements."""
    out = bytearray(b"GGUF" + struct.pack("<IQQ", 3, 1, 1))
    out += gstr(key) + struct.pack("<I", vtype) + payload
    out += gstr("t") + struct.pack("<IQIQ", 1, 8, 0, 0)
    out += bytes(-len(out) % 32) + bytes(32)
    path.write_bytes(out)
    return path.stat().st_size


def array(elem, count, items):
    return struct.pack("<IQ", elem, count) + items


def test_u8_array_of_60_mib(tmp_path):
    """A u8 array costs its bytes: about 2x the file with the map, not 33x."""
    n = 60 * MiB
    f = tmp_path / "u8.gguf"
    size = gguf(f, "a.bytes", 9, array(0, n, bytes(range(256)) * (n // 256)))
    rc, err, kib = peak(tmp_path, "model-inspect", f)
    assert rc == 0, err
    assert_bounded(kib, size, 3, 32, "model-inspect")
    with open(tmp_path / "out.json", "w") as out:   # the full JSON, written as it goes
        rc, err, kib = peak(tmp_path, "model-inspect", "--json", f, stdout=out)
    assert rc == 0, err
    assert_bounded(kib, size, 3, 32, "model-inspect --json")
    text = (tmp_path / "out.json").read_bytes()
    start = text.index(b'"a.bytes": [') + len(b'"a.bytes": [')
    assert text[start:start + 20] == b"0, 1, 2, 3, 4, 5, 6,"
    assert text[start:].count(b", ") >= n - 1
    # gguf2safetensors writes the array as JSON text into the header: 3.5 bytes an
    # item pass the format's 100 MB limit, and it stops there.
    out = tmp_path / "u8.safetensors"
    rc, err, kib = peak(tmp_path, "gguf2safetensors", "-q", f, out)
    assert rc == 1 and "the header passes the limit of 100000000 bytes" in err, err
    assert not out.exists()
    assert_bounded(kib, size, 3, 128, "gguf2safetensors")


def test_array_of_4m_empty_strings(tmp_path):
    """2^22 empty strings: 8 bytes each on the wire, about 9 in memory (not 72)."""
    n = 1 << 22
    f = tmp_path / "s.gguf"
    size = gguf(f, "a.strings", 9, array(8, n, bytes(8 * n)))
    rc, err, kib = peak(tmp_path, "model-inspect", f)
    assert rc == 0, err
    assert_bounded(kib, size, 3, 32, "model-inspect")
    out = tmp_path / "s.safetensors"
    rc, err, kib = peak(tmp_path, "gguf2safetensors", "-q", f, out)
    assert rc == 0, err
    assert_bounded(kib, size, 4, 32, "gguf2safetensors")   # + the 25 MB header text
    head = out.read_bytes()
    n_hdr = struct.unpack("<Q", head[:8])[0]
    meta = json.loads(head[8:8 + n_hdr])["__metadata__"]
    assert json.loads(meta["a.strings"]) == [""] * n


def test_nested_arrays(tmp_path):
    """Inner arrays are packed too: 2^14 arrays of 1000 u8 (main: 33x the file), and
    2^20 arrays of one u8, one 32-byte value each (main: 7x)."""
    inner = array(0, 1000, bytes(1000))
    f = tmp_path / "nest.gguf"
    size = gguf(f, "a.nested", 9, array(9, 1 << 14, inner * (1 << 14)))
    rc, err, kib = peak(tmp_path, "model-inspect", f)
    assert rc == 0, err
    assert_bounded(kib, size, 3, 32, "model-inspect, 1000 items each")
    tiny = array(0, 1, b"\x07")
    f = tmp_path / "tiny.gguf"
    size = gguf(f, "a.nested", 9, array(9, 1 << 20, tiny * (1 << 20)))
    rc, err, kib = peak(tmp_path, "model-inspect", "--json", f)
    assert rc == 0, err
    assert_bounded(kib, size, 4, 16, "model-inspect, one item each")


def test_nested_arrays_round_trip(tmp_path):
    """What the packed reader reads, the writer writes back byte for byte."""
    strings = array(8, 3, gstr("") + gstr("ab") + gstr("\u00e9"))
    nested = array(9, 2, array(5, 2, struct.pack("<ii", -1, 7)) + strings)
    f = tmp_path / "n.gguf"
    gguf(f, "a.nested", 9, nested)
    out = tmp_path / "out.json"
    with open(out, "w") as o:
        subprocess.run([str(BIN / "model-inspect"), "--json", str(f)], stdout=o, check=True)
    assert json.loads(out.read_text())["metadata"]["a.nested"] == [[-1, 7], ["", "ab", "\u00e9"]]
    copy = tmp_path / "copy.gguf"
    subprocess.run([str(TBIN / "lc-gguf-copy"), str(f), str(copy)], check=True)
    assert copy.read_bytes() == f.read_bytes()


# ---- safetensors headers of 47 MB ----

HEADER = 47 * 1000 * 1000


def safetensors(path, text):
    text += b" " * (-len(text) % 8)
    path.write_bytes(struct.pack("<Q", len(text)) + text)
    return path.stat().st_size


def test_header_holding_a_huge_array(tmp_path):
    """A shape of 2^24 numbers: a cJSON tree of 1.4 GB on main; scanned, it costs
    nothing and is refused at its ninth dimension."""
    n = (1 << 24) - 50
    f = tmp_path / "shape.safetensors"
    size = safetensors(f, b'{"t":{"dtype":"U8","shape":[' + b"0," * n +
                       b'0],"data_offsets":[0,0]}}')
    for tool in ("model-inspect", "safetensors-rewrite"):
        args = [f] if tool == "model-inspect" else ["-q", f, tmp_path / "o.safetensors"]
        rc, err, kib = peak(tmp_path, tool, *args)
        assert rc == 1 and "shape has more than 8 dimensions" in err, err
        assert_bounded(kib, size, 2, 32, tool)


def test_header_of_many_tensors(tmp_path):
    """800,000 zero-size tensors: about 300 bytes each in the model (main: ~1 KB)."""
    parts, total = [], 0
    while total < HEADER:
        p = b'"%x":{"dtype":"U8","shape":[0],"data_offsets":[0,0]}' % len(parts)
        parts.append(p)
        total += len(p) + 1
    f = tmp_path / "many.safetensors"
    size = safetensors(f, b"{" + b",".join(parts) + b"}")
    rc, err, kib = peak(tmp_path, "model-inspect", f)
    assert rc == 0, err
    assert_bounded(kib, size, 8, 32, "model-inspect")


def test_header_of_many_metadata_strings(tmp_path):
    """4 million __metadata__ entries "k":"": each a key, an empty string and an
    entry of the model (about 130 bytes for 12 of text; main: ~290)."""
    parts, total = [], 0
    while total < HEADER:
        p = b'"%x":""' % len(parts)
        parts.append(p)
        total += len(p) + 1
    f = tmp_path / "meta.safetensors"
    size = safetensors(f, b'{"__metadata__":{' + b",".join(parts) + b"}}")
    rc, err, kib = peak(tmp_path, "model-inspect", f)
    assert rc == 0, err
    assert_bounded(kib, size, 14, 32, "model-inspect")


def test_index_holding_a_huge_array(tmp_path):
    """model.safetensors.index.json is scanned too: 10 MB of [0,0,...] beside an empty
    weight_map cost 400 MB as a cJSON tree."""
    f = tmp_path / "model.safetensors.index.json"
    f.write_text('{"metadata":{"a":[' + "0," * 5_000_000 + '0]},"weight_map":{}}')
    rc, err, kib = peak(tmp_path, "model-inspect", f)
    assert rc == 0, err
    assert_bounded(kib, f.stat().st_size, 2, 32, "model-inspect")


# ---- JSON still read into trees ----

def test_tokenizer_json_whose_tree_would_explode(tmp_path):
    """tokenizer.json goes to cJSON, whose tree is counted first: 20 MB of [0,0,...]
    (an 800 MB tree) is refused before parsing; a real file costs 10-15 times its
    bytes and passes (the fixtures convert in every other test)."""
    d = tmp_path / "m"
    d.mkdir()
    src = ROOT / "fixtures" / "hf" / "llama-bpe"
    for p in src.iterdir():
        (d / p.name).write_bytes(p.read_bytes())
    tj = json.loads((d / "tokenizer.json").read_text())
    text = json.dumps(tj)[:-1] + ', "junk": [' + "0," * 10_000_000 + "0]}"
    (d / "tokenizer.json").write_text(text)
    out = tmp_path / "o.gguf"
    rc, err, kib = peak(tmp_path, "safetensors2gguf", "-q", "--vocab-only", d, out)
    assert rc == 1 and "tokenizer.json" in err and "would take" in err, err
    assert len(err.strip().splitlines()) == 1
    assert not out.exists()
    assert SANITIZED or kib < 64 * 1024, f"peak {kib} KiB"


def test_bin_index_whose_tree_would_explode(tmp_path):
    """pytorch_model.bin.index.json, the same bound."""
    f = tmp_path / "pytorch_model.bin.index.json"
    f.write_text('{"metadata":[' + "0," * 5_000_000 + '0],"weight_map":{"a":"x.bin"}}')
    out = tmp_path / "o"
    rc, err, kib = peak(tmp_path, "pth2safetensors", "-q", f, out)
    assert rc == 1 and "would take" in err, err
    assert SANITIZED or kib < 48 * 1024, f"peak {kib} KiB"
