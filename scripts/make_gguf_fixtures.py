#!/usr/bin/env python3
"""Generates the GGUF fixtures: good files made by gguf-py's GGUFWriter (the real
producer) under fixtures/gguf/, and the bad corpus under fixtures/bad/gguf/, each bad
file named <code>-<what>.bin after the lc_code the reader must return.

    build/venv/bin/python scripts/make_gguf_fixtures.py [--check]

Everything is deterministic (fixed seeds, no timestamps). bad_cases() is also imported
by tests/integration/test_gguf.py, which checks every bad file's code and offset.
--check only verifies that the files on disk equal what would be generated."""
import hashlib
import os
import struct
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GOOD = os.path.join(ROOT, "fixtures", "gguf")
BAD = os.path.join(ROOT, "fixtures", "bad", "gguf")
MANIFEST = os.path.join(ROOT, "fixtures", "MANIFEST.tsv")
PYV = "python=" + sys.version.split()[0]


# ---- good files, by gguf-py ----

def _writer_files():
    """Returns {name: bytes} for every file GGUFWriter makes here."""
    import tempfile
    import gguf
    from gguf import GGUFValueType as VT, GGMLQuantizationType as QT
    from gguf import quants

    out = {}

    def write(name, fill, alignment=None):
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, name)
            w = gguf.GGUFWriter(p, "llama")
            if alignment:
                w.add_custom_alignment(alignment)
            fill(w)
            w.write_header_to_file()
            w.write_kv_data_to_file()
            w.write_tensors_to_file()
            w.close()
            with open(p, "rb") as f:
                out[name] = f.read()

    rng = np.random.default_rng(1234)

    def all_values(w):
        w.add_key_value("t.u8", 200, VT.UINT8)
        w.add_key_value("t.i8", -100, VT.INT8)
        w.add_key_value("t.u16", 65000, VT.UINT16)
        w.add_key_value("t.i16", -32000, VT.INT16)
        w.add_key_value("t.u32", 4000000000, VT.UINT32)
        w.add_key_value("t.i32", -2000000000, VT.INT32)
        w.add_key_value("t.f32", 3.14159, VT.FLOAT32)
        w.add_key_value("t.bool_true", True, VT.BOOL)
        w.add_key_value("t.bool_false", False, VT.BOOL)
        w.add_key_value("t.string", "hello, gguf", VT.STRING)
        w.add_key_value("t.empty_string", "", VT.STRING)
        w.add_key_value("t.u64", 2**64 - 1, VT.UINT64)
        w.add_key_value("t.i64", -(2**63), VT.INT64)
        w.add_key_value("t.f64", -1.0e300, VT.FLOAT64)
        w.add_key_value("t.unicode.\u00e9\u4e2d\U0001f600", "\u00fcnic\u00f6de \u2713", VT.STRING)
        w.add_key_value("t.arr_u8", [1, 2, 3], VT.ARRAY, VT.UINT8)
        w.add_key_value("t.arr_i32", [-1, 0, 1, 2**31 - 1], VT.ARRAY, VT.INT32)
        w.add_key_value("t.arr_f32", [0.5, -2.25, 1e-7], VT.ARRAY, VT.FLOAT32)
        w.add_key_value("t.arr_f64", [0.1, 1e308], VT.ARRAY, VT.FLOAT64)
        w.add_key_value("t.arr_bool", [True, False, True], VT.ARRAY, VT.BOOL)
        w.add_key_value("t.arr_u64", [0, 2**64 - 1], VT.ARRAY, VT.UINT64)
        w.add_key_value("t.arr_str", ["a", "", "\u00e9t\u00e9"], VT.ARRAY, VT.STRING)
        w.add_key_value("t.arr_nested", [[1, 2], [3]], VT.ARRAY)
        w.add_key_value("t.arr_nested3", [[["x"], ["y", "z"]], [["w"]]], VT.ARRAY)

    def tensors(w):
        f32 = rng.standard_normal((3, 4)).astype(np.float32)
        w.add_tensor("w.f32", f32)
        w.add_tensor("w.f16", rng.standard_normal((2, 3, 8)).astype(np.float16))
        w.add_tensor("w.bf16", quants.quantize(rng.standard_normal((4, 8)).astype(np.float32),
                                               QT.BF16), raw_dtype=QT.BF16)
        w.add_tensor("w.q8_0", quants.quantize(rng.standard_normal((2, 64)).astype(np.float32),
                                               QT.Q8_0), raw_dtype=QT.Q8_0)
        w.add_tensor("w.q4_0", quants.quantize(rng.standard_normal((3, 32)).astype(np.float32),
                                               QT.Q4_0), raw_dtype=QT.Q4_0)
        # gguf-py cannot quantize Q4_K: raw 144-byte blocks (2 rows of 256).
        w.add_tensor("w.q4_k", rng.integers(0, 256, (2, 144), dtype=np.uint8), raw_dtype=QT.Q4_K)
        w.add_tensor("w.i32", np.arange(5, dtype=np.int32))
        w.add_tensor("w.f64_4d", rng.standard_normal((2, 1, 3, 2)).astype(np.float64))

    write("values.gguf", all_values)
    write("tensors.gguf", lambda w: (all_values(w), tensors(w)))
    write("align64.gguf", lambda w: (w.add_key_value("t.name", "aligned", VT.STRING),
                                     tensors(w)), alignment=64)
    write("meta_only.gguf", lambda w: w.add_key_value("t.x", 1, VT.UINT32))
    # gguf-py writes only version 3; version 2 has the same layout, so patch the field.
    v2 = bytearray(out["tensors.gguf"])
    struct.pack_into("<I", v2, 4, 2)
    out["v2_patched.gguf"] = bytes(v2)
    return out


def _empty_values_file():
    """gguf-py refuses empty arrays, so this one is built by hand: empty arrays (flat and
    nested) and an empty string; no tensors."""
    b = bytearray(b"GGUF" + struct.pack("<IQQ", 3, 0, 4))

    def key(k, t):
        kb = k.encode()
        b.extend(struct.pack("<Q", len(kb)) + kb + struct.pack("<I", t))
    key("e.arr_u32", 9); b.extend(struct.pack("<IQ", 4, 0))
    key("e.arr_str", 9); b.extend(struct.pack("<IQ", 8, 0))
    key("e.nested", 9); b.extend(struct.pack("<IQ", 9, 2) + struct.pack("<IQ", 0, 0)
                                 + struct.pack("<IQ", 0, 1) + b"\x07")
    key("e.str", 8); b.extend(struct.pack("<Q", 0))
    b.extend(b"\0" * (-len(b) % 32))   # padded like GGUFWriter's files
    return bytes(b)


# ---- bare safetensors inputs for safetensors2gguf, by safetensors' own serializer ----

def _bare_files():
    """{name: bytes}: one tensor of every safetensors dtype GGUF lacks or has, plus a
    U64 file with a value GGUF's I64 cannot hold. Written by safetensors'
    serialize_file (the Rust reference writer) from raw bytes."""
    import tempfile
    from safetensors import TensorSpec, serialize_file
    rng = np.random.default_rng(99)
    keep = []

    def spec(dtype, shape, raw):
        a = np.frombuffer(raw, dtype=np.uint8).copy()
        keep.append(a)
        return TensorSpec(dtype=dtype, shape=shape, data_ptr=a.ctypes.data, data_len=a.nbytes)

    def rand(n):
        return rng.integers(0, 256, n, dtype=np.uint8).tobytes()

    # E5M2 NaNs other than 0x7e come back as 0x7e (f16 keeps no such payload): avoid them.
    e5m2 = bytes(b if (b & 0x7f) not in (0x7d, 0x7f) else 0x11 for b in rand(12))
    tensors = {
        "bool": spec("bool", [3, 2], bytes(rng.integers(0, 2, 6, dtype=np.uint8))),
        "u8": spec("uint8", [7], rand(7)),
        "i8": spec("int8", [2, 2], rand(4)),
        "u16": spec("uint16", [3], rand(6)),
        "i16": spec("int16", [3], rand(6)),
        "u32": spec("uint32", [2, 2], rand(16)),
        "i32": spec("int32", [2], rand(8)),
        "u64": spec("uint64", [2], struct.pack("<QQ", 2**63 - 1, 12345)),
        "i64": spec("int64", [1], rand(8)),
        "f16": spec("float16", [2, 3], np.arange(6, dtype=np.float16).tobytes()),
        "bf16": spec("bfloat16", [4], rand(8)),
        "f32": spec("float32", [2, 1, 2], np.linspace(-1, 1, 4, dtype=np.float32).tobytes()),
        "f64": spec("float64", [2], np.array([1e300, -0.0]).tobytes()),
        "f8_e4m3": spec("float8_e4m3fn", [12], rand(12)),
        "f8_e5m2": spec("float8_e5m2", [3, 4], e5m2),
        "scalar": spec("float32", [], np.float32(2.5).tobytes()),
    }
    out = {}
    with tempfile.TemporaryDirectory() as d:
        # One metadata key: safetensors orders two or more by a Rust HashMap, which
        # would make the file differ from run to run.
        for name, t, meta in (("bare_all_dtypes.safetensors", tensors, {"format": "np"}),
                              ("bare_u64_big.safetensors",
                               {"big": spec("uint64", [2], struct.pack("<QQ", 1, 2**63))},
                               None)):
            p = os.path.join(d, name)
            serialize_file(t, p, meta)
            with open(p, "rb") as f:
                out[name] = f.read()
    return out


# ---- bad corpus, by hand with known offsets ----

class B:
    """Appends little-endian fields and remembers where named ones start."""
    def __init__(self):
        self.b = bytearray()
        self.at = {}
        self.fields = []   # (start, size, reported offset) for truncation cases

    def put(self, fmt, v, name=None, report=None):
        start = len(self.b)
        if name:
            self.at[name] = start
        self.b.extend(struct.pack("<" + fmt, v))
        self.fields.append((start, struct.calcsize(fmt), start if report is None else report))
        return start

    def str(self, s, name=None):
        s = s.encode() if isinstance(s, str) else s
        start = self.put("Q", len(s), name)
        if s:
            self.fields.append((len(self.b), len(s), start))
            self.b.extend(s)
        return start


def base(version=3, n_tensors=2, kvs=None, tinfos=None, align=32, data=True):
    """A small valid file: two metadata entries and two F32 tensors unless told."""
    g = B()
    g.b.extend(b"GGUF"); g.fields.append((0, 4, 0)); g.at["magic"] = 0
    g.put("I", version, "version")
    g.put("Q", n_tensors, "n_tensors")
    kvs = kvs if kvs is not None else [("k.a", 4, ("I", 7)), ("k.s", 8, "hi")]
    g.put("Q", len(kvs), "n_kv")
    for i, (k, t, v) in enumerate(kvs):
        g.str(k, "key%d" % i)
        g.put("I", t, "type%d" % i)
        g.at["val%d" % i] = len(g.b)
        if callable(v):
            v(g)
        elif isinstance(v, str):
            g.str(v)
        else:
            g.put(*v)
    if tinfos is None:
        tinfos = [("t0", [4, 2], 0, 0), ("t1", [4], 0, 32)]
    for i, (name, ne, typ, off) in enumerate(tinfos):
        g.str(name, "name%d" % i)
        g.put("I", len(ne), "ndim%d" % i)
        g.at["ne%d" % i] = len(g.b)
        for e in ne:
            g.put("Q", e)
        g.put("I", typ, "gtype%d" % i)
        g.put("Q", off, "off%d" % i)
    if data:
        pad = (-len(g.b)) % align
        g.at["pad"] = len(g.b)
        g.b.extend(b"\0" * pad)
        g.at["data"] = len(g.b)
        g.b.extend(struct.pack("<8f", *range(8)) + struct.pack("<4f", 1, 2, 3, 4))
        g.b.extend(b"\0" * 16)
    return g


def nested(depth):
    def f(g):
        for _ in range(depth):
            g.put("I", 9); g.put("Q", 1)
        g.at["deep"] = len(g.b)
        g.put("I", 4); g.put("Q", 1); g.put("I", 1)
    return f


def bad_cases():
    """Returns [(file name, bytes, code name, expected error offset)]."""
    cases = []
    ok = base()

    def add(code, what, g_or_bytes, off):
        data = bytes(g_or_bytes.b if isinstance(g_or_bytes, B) else g_or_bytes)
        cases.append(("%s-%s.bin" % (code, what), data, code, off))

    def patched(fmt, field, v, g=None):
        g = g or base()
        struct.pack_into(fmt if fmt[0] in "<>" else "<" + fmt, g.b, g.at[field], v)
        return g

    # Truncated inside every field of the header and infos, and inside the data.
    # The reader first checks that both counts fit in what follows the 24-byte header
    # (a tensor info takes at least 24 bytes, an entry 13): short files fail there.
    for i, (start, size, rep) in enumerate(ok.fields):
        cut = start + size // 2
        if cut >= 24 and 2 * 24 > cut - 24:
            rep = 8
        elif cut >= 24 and 2 * 24 + 2 * 13 > cut - 24:
            rep = 16
        add("truncated", "field%02d-at-%d" % (i, start), ok.b[:cut], rep)
    add("truncated", "data-t0", ok.b[:ok.at["data"] + 10], ok.at["off0"])
    add("truncated", "data-t1", ok.b[:ok.at["data"] + 40], ok.at["off1"])
    add("truncated", "padding", ok.b[:ok.at["pad"] + 3], ok.at["pad"])
    add("malformed", "bad-magic", b"GGUG" + ok.b[4:], 0)
    add("unsupported", "version-1", patched("I", "version", 1).b, 4)
    add("unsupported", "version-4", patched("I", "version", 4).b, 4)
    add("unsupported", "version-0", patched("I", "version", 0).b, 4)
    add("unsupported", "big-endian", patched(">I", "version", 3).b, 4)
    add("overflow", "n-tensors-2e63", patched("Q", "n_tensors", 2**63).b, 8)
    add("overflow", "n-tensors-2e64m1", patched("Q", "n_tensors", 2**64 - 1).b, 8)
    add("truncated", "n-tensors-2e40", patched("Q", "n_tensors", 2**40).b, 8)
    add("overflow", "n-kv-2e63", patched("Q", "n_kv", 2**63).b, 16)
    add("overflow", "n-kv-2e64m1", patched("Q", "n_kv", 2**64 - 1).b, 16)
    add("truncated", "n-kv-2e60", patched("Q", "n_kv", 2**60).b, 16)
    add("truncated", "key-len-2e63", patched("Q", "key0", 2**63).b, ok.at["key0"])
    add("truncated", "key-len-2e64m1", patched("Q", "key0", 2**64 - 1).b, ok.at["key0"])
    g = base(kvs=[("k.s", 8, ("Q", 2**62))])
    add("truncated", "string-past-eof", g, g.at["val0"])
    g = base(kvs=[("k.a", 9, lambda g: (g.put("I", 10), g.put("Q", 2**62, "cnt")))])
    add("overflow", "array-count-x-elem", g, g.at["cnt"])
    g = base(kvs=[("k.a", 9, lambda g: (g.put("I", 8), g.put("Q", 2**63, "cnt")))])
    add("overflow", "array-of-strings-2e63", g, g.at["cnt"])
    g = base(kvs=[("k.a", 9, lambda g: (g.put("I", 0), g.put("Q", 2**40, "cnt")))])
    add("truncated", "array-count-past-eof", g, g.at["cnt"])
    g = base(kvs=[("k.a", 9, nested(8))])
    add("overflow", "nested-too-deep", g, g.at["deep"])
    g = base(kvs=[("k.a", 13, ("I", 0))])
    add("malformed", "unknown-value-type", g, g.at["type0"])
    g = base(kvs=[("k.a", 9, lambda g: (g.put("I", 99, "et"), g.put("Q", 0)))])
    add("malformed", "unknown-array-type", g, g.at["et"])
    g = base(kvs=[("k.b", 7, ("B", 2))])
    add("malformed", "bool-2", g, g.at["val0"])
    g = base(kvs=[("k.a", 4, ("I", 1)), ("k.a", 4, ("I", 2))])
    add("malformed", "duplicate-key", g, g.at["key1"])
    g = base(kvs=[("k\0a", 4, ("I", 1))])
    add("malformed", "key-with-nul", g, g.at["key0"])
    for v in (0, 3):
        g = base(kvs=[("general.alignment", 4, ("I", v))])
        add("malformed", "alignment-%d" % v, g, g.at["val0"])
    g = base(kvs=[("general.alignment", 10, ("Q", 32))])
    add("malformed", "alignment-u64", g, g.at["type0"])
    g = base(tinfos=[("t0", [4, 2], 0, 0), ("t0", [4], 0, 32)])
    add("malformed", "duplicate-tensor", g, g.at["name1"])
    g = base(tinfos=[("t0", [4, 2], 0, 0), ("t1", [4], 4, 32)])
    add("unsupported", "ggml-type-4", g, g.at["gtype1"])
    g = base(tinfos=[("t0", [4, 2], 0, 0), ("t1", [4], 1000, 32)])
    add("unsupported", "ggml-type-1000", g, g.at["gtype1"])
    g = base(tinfos=[("t0", [4, 2], 0, 0), ("t1", [1, 1, 1, 1, 4], 0, 32)])
    add("malformed", "n-dims-5", g, g.at["ndim1"])
    g = base(tinfos=[("t0", [2**32, 2**32], 0, 0), ("t1", [4], 0, 32)])
    add("overflow", "ne-product", g, g.at["ne0"])
    g = base(tinfos=[("t0", [2**31, 2**32], 0, 0), ("t1", [4], 0, 32)])
    add("overflow", "ne-product-int64", g, g.at["ne0"])
    g = base(tinfos=[("t0", [2**63], 0, 0), ("t1", [4], 0, 32)])
    add("overflow", "ne-negative", g, g.at["ne0"])
    g = base(tinfos=[("t0", [2**62], 28, 0), ("t1", [4], 0, 32)])
    add("overflow", "nbytes", g, g.at["ne0"])
    g = base(tinfos=[("t0", [33], 8, 0), ("t1", [4], 0, 64)])
    add("malformed", "row-not-block-multiple", g, g.at["ne0"])
    g = base(tinfos=[("t0", [4, 2], 0, 0), ("t1", [4], 0, 33)])
    add("malformed", "offset-misaligned", g, g.at["off1"])
    g = base(tinfos=[("t0", [4, 2], 0, 0), ("t1", [4], 0, 0)])
    add("malformed", "offset-overlap", g, g.at["off1"])
    g = base(tinfos=[("t0", [4, 2], 0, 0), ("t1", [4], 0, 64)])
    add("malformed", "offset-gap", g, g.at["off1"])
    g = base(tinfos=[("t0", [4, 2], 0, 32), ("t1", [4], 0, 64)])
    add("malformed", "offset-first-not-zero", g, g.at["off0"])
    g = base(tinfos=[("t0", [4, 2], 0, 0), ("t1", [4, 2**20], 0, 32)])
    add("truncated", "offset-past-eof", g, g.at["off1"])
    # Rules of ggml's loader and of the spec (formats/gguf.c RULES).
    g = base(kvs=[("", 4, ("I", 1))])
    add("malformed", "key-empty", g, g.at["key0"])
    g = base(kvs=[("a\nall checks passed\x1b[32m", 4, ("I", 1))])
    add("malformed", "key-control", g, g.at["key0"])
    g = base(kvs=[("general..name", 8, "x")])
    add("malformed", "key-empty-segment", g, g.at["key0"])
    g = base(kvs=[("general.alignment", 4, ("I", 4))])
    add("malformed", "alignment-4", g, g.at["val0"])
    g = base(tinfos=[("t0", [4, 2], 0, 0), ("n" * 64, [4], 0, 32)])
    add("malformed", "name-64-bytes", g, g.at["name1"])
    g = base()
    end = g.at["pad"]
    g.b[end] = 0xEE
    add("malformed", "padding-not-zero", g, end)
    g = base(tinfos=[("t0", [2**63 - 1], 24, 0), ("t1", [4], 0, 32)])
    add("overflow", "ne-int64-max", g, g.at["ne0"])
    return cases


def _write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def main():
    from importlib.metadata import version
    gguf_version = version("gguf")
    check = "--check" in sys.argv[1:]
    files = {}
    for name, data in _writer_files().items():
        producer = "gguf-py GGUFWriter" + (" (version patched to 2)" if "v2" in name else "")
        files[os.path.join("fixtures", "gguf", name)] = (data, producer, gguf_version)
    from importlib.metadata import version as _v
    for name, data in _bare_files().items():
        files[os.path.join("fixtures", "gguf", name)] = (
            data, "safetensors serialize_file", _v("safetensors"))
    files[os.path.join("fixtures", "gguf", "empty_values.gguf")] = (
        _empty_values_file(), "scripts/make_gguf_fixtures.py (by hand)", PYV)
    for name, data, _, _ in bad_cases():
        files[os.path.join("fixtures", "bad", "gguf", name)] = (
            data, "scripts/make_gguf_fixtures.py (by hand)", PYV)
    bad = 0
    for rel, (data, _, _) in files.items():
        p = os.path.join(ROOT, rel)
        if check:
            if not os.path.exists(p) or open(p, "rb").read() != data:
                print("stale:", rel); bad += 1
        else:
            _write(p, data)
    if check:
        sys.exit(1 if bad else 0)
    # Replace this script's rows in the manifest (paths relative to fixtures/), keep
    # everyone else's.
    mine = ("gguf/", "bad/gguf/")
    rows = []
    if os.path.exists(MANIFEST):
        with open(MANIFEST) as f:
            rows = [l for l in f.read().splitlines() if l and not l.startswith(mine)]
    if not rows or not rows[0].startswith("file\t"):
        rows.insert(0, "file\tproducer\tproducer_version\tsha256")
    for rel in sorted(files):
        data, producer, version = files[rel]
        rows.append("\t".join([os.path.relpath(rel, "fixtures"), producer, version,
                                hashlib.sha256(data).hexdigest()]))
    with open(MANIFEST, "w") as f:
        f.write("\n".join(rows) + "\n")
    print("wrote %d files" % len(files))


if __name__ == "__main__":
    main()
