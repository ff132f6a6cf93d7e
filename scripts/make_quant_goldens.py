#!/usr/bin/env python3
"""Golden blocks for fixtures/quant/, made by ggml itself: the libggml-base inside
build/llama-venv (llama-cpp-python 0.3.36, built from PyPI's sdist by
scripts/bootstrap-llama.sh), called through ctypes.

    build/llama-venv/bin/python scripts/make_quant_goldens.py [--check]

Writes, for every type we quantize (Q8_0 Q4_0 Q4_1 Q5_0 Q5_1 Q2_K Q3_K Q4_K Q5_K Q6_K),
hard.<TYPE>.bin and special.<TYPE>.bin: ggml_quantize_chunk (no importance matrix, so
quantize_row_<type>_ref) of hard.f32 and special.f32 (scripts/make_quant_inputs.py). For
every type we only dequantize that ggml can decode, deq.<TYPE>.bin (blocks of seeded
random bytes whose scales take every special value: zeros, subnormals, the largest,
infinities, quiet and signalling NaNs; see deq_blocks) and deq.<TYPE>.f32 (ggml's
to_float of them). A file already on disk with the same bytes is left alone (the goldens
of the first seven types were made by ggml@d99724f2b141 and are unchanged by the pinned
ggml); fixtures/MANIFEST.tsv gets a row for each file written. --check writes nothing and
exits 1 if any file differs from what the pinned ggml gives.

tests/llama/test_quant_ggml.py imports this module for its ctypes harness."""
import ctypes
import hashlib
import platform
import sys
from importlib.metadata import version
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
FIX = ROOT / "fixtures" / "quant"
MANIFEST = ROOT / "fixtures" / "MANIFEST.tsv"

# ggml type ids (ggml.h enum ggml_type) of the block types; the tests check them against
# the library's own traits and libconvert's table.
GGML_ID = {
    "Q4_0": 2, "Q4_1": 3, "Q5_0": 6, "Q5_1": 7, "Q8_0": 8, "Q8_1": 9, "Q2_K": 10,
    "Q3_K": 11, "Q4_K": 12, "Q5_K": 13, "Q6_K": 14, "Q8_K": 15, "IQ2_XXS": 16,
    "IQ2_XS": 17, "IQ3_XXS": 18, "IQ1_S": 19, "IQ4_NL": 20, "IQ3_S": 21, "IQ2_S": 22,
    "IQ4_XS": 23, "IQ1_M": 29, "TQ1_0": 34, "TQ2_0": 35, "MXFP4": 39, "NVFP4": 40,
    "Q1_0": 41, "Q2_0": 42,
}
QUANTIZE = ["Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K"]
# The types we write by rows only (quant/types.h LC_WRITE_TYPES less LC_QUANT_TYPES);
# without an importance matrix their hard/special goldens are ggml_quantize_chunk's too
# (quantize_<type>, not quantize_row_<type>_ref: the two differ for IQ4_NL).
ROWS_ONLY = ["IQ4_NL", "IQ4_XS", "TQ1_0", "TQ2_0", "MXFP4"]
WRITE = QUANTIZE + ROWS_ONLY
# The types whose quantizer uses an importance matrix when it gets one (quant/types.h
# LC_WRITE_TYPES, USES and REQUIRES): imatrix.<TYPE>.bin holds ggml_quantize_chunk of
# hard.f32 + special.f32 as rows of IMATRIX_ROW values weighted by imatrix.f32.
IMATRIX = ["Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K", "IQ4_NL",
           "IQ4_XS"]
IMATRIX_ROW = 512
# The grid types (quant/ref_iq1.c, ref_iq2.c, ref_iq3.c): ggml's quantizers assert on
# inputs whose weights overflow or are NaN, so their goldens are made from grid.f32
# (grid_inputs: finite data whose squares stay finite, with ties and zeros), as rows of
# 256 weighted by the first 256 values of imatrix.f32 (grid.<TYPE>.bin) and, for the
# types that run without one, unweighted (grid-plain.<TYPE>.bin).
GRID = ["IQ3_XXS", "IQ3_S", "IQ2_S", "IQ2_XXS", "IQ2_XS", "IQ1_S", "IQ1_M"]
GRID_NEEDS_IMATRIX = ["IQ2_XXS", "IQ2_XS", "IQ1_S"]


def grid_inputs(n=8192, seed=21):
    """Values the grid quantizers take without asserting: normal data at several scales,
    bf16-rounded values (many ties), integers and halves (exact ties), sparse blocks,
    all-equal and all-zero sub-blocks, subnormals."""
    rng = np.random.default_rng(seed)
    parts = []
    while sum(p.size for p in parts) < n:
        k = len(parts) % 8
        if k == 0:
            v = rng.standard_normal(256) * 10.0 ** rng.uniform(-3, 3)
        elif k == 1:        # bf16: the low 16 bits cleared
            v = (rng.standard_normal(256) * 0.02).astype(np.float32)
            v = (v.view(np.uint32) & 0xFFFF0000).view(np.float32)
        elif k == 2:
            v = rng.integers(-4, 5, 256) * 0.25
        elif k == 3:
            v = np.where(rng.random(256) < 0.8, 0.0, rng.standard_normal(256))
        elif k == 4:
            v = np.repeat(rng.standard_normal(16), 16)
        elif k == 5:
            v = rng.standard_normal(256)
            v[rng.integers(0, 8) * 32:][:32] = 0
        elif k == 6:
            v = rng.standard_normal(256) * 1e-39
        else:
            v = np.abs(rng.standard_normal(256)) + 0.5
        parts.append(np.asarray(v, np.float32))
    return np.concatenate(parts)[:n].astype(np.float32)


def imatrix_vector(n=IMATRIX_ROW, seed=20):
    """An importance vector as llama-imatrix makes them (mean squared activations: >= 0,
    spread over decades), with the values that test the weighting: zeros, a subnormal,
    huge ones, runs of equal values."""
    rng = np.random.default_rng(seed)
    v = (10.0 ** rng.uniform(-4, 2, n)).astype(np.float32)
    v[::61] = 0.0
    v[7] = np.float32(1e-40)
    v[100:132] = 1.0
    v[300] = np.float32(1e30)
    return v.astype(np.float32)
DEQUANTIZE_ONLY = ["Q8_1", "Q8_K", "IQ2_XXS", "IQ2_XS", "IQ3_XXS", "IQ1_S", "IQ4_NL",
                   "IQ3_S", "IQ2_S", "IQ4_XS", "IQ1_M", "TQ1_0", "TQ2_0", "MXFP4", "NVFP4",
                   "Q1_0", "Q2_0"]


class TypeTraits(ctypes.Structure):
    """ggml.h struct ggml_type_traits."""
    _fields_ = [("type_name", ctypes.c_char_p), ("blck_size", ctypes.c_int64),
                ("blck_size_interleave", ctypes.c_int64), ("type_size", ctypes.c_size_t),
                ("is_quantized", ctypes.c_bool), ("to_float", ctypes.c_void_p),
                ("from_float_ref", ctypes.c_void_p)]


ROW_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)


class Ggml:
    """The pinned libggml-base, found next to llama_cpp's own libraries."""

    def __init__(self):
        import llama_cpp
        path = Path(llama_cpp.__file__).resolve().parent / "lib" / "libggml-base.so"
        if not path.is_file():
            raise FileNotFoundError(f"{path}: llama_cpp ships no libggml-base.so")
        self.path = path
        self.lib = lib = ctypes.CDLL(str(path))
        lib.ggml_quantize_chunk.restype = ctypes.c_size_t
        lib.ggml_quantize_chunk.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p,
                                            ctypes.c_int64, ctypes.c_int64, ctypes.c_int64,
                                            ctypes.c_void_p]
        lib.ggml_get_type_traits.restype = ctypes.POINTER(TypeTraits)
        lib.ggml_get_type_traits.argtypes = [ctypes.c_int]
        lib.ggml_row_size.restype = ctypes.c_size_t
        lib.ggml_row_size.argtypes = [ctypes.c_int, ctypes.c_int64]
        lib.ggml_quantize_requires_imatrix.restype = ctypes.c_bool
        lib.ggml_quantize_requires_imatrix.argtypes = [ctypes.c_int]
        self.version = f"llama-cpp-python-{version('llama_cpp_python')}"

    def traits(self, type_id):
        return self.lib.ggml_get_type_traits(type_id).contents

    def quantize(self, name, x):
        """ggml_quantize_chunk of x (float32, a whole number of blocks) as rows of one
        block each; without an imatrix every row is quantize_row_<type>_ref's."""
        tid = GGML_ID[name]
        t = self.traits(tid)
        x = np.ascontiguousarray(x, dtype=np.float32)
        assert x.size % t.blck_size == 0
        rows = x.size // t.blck_size
        out = np.zeros(rows * t.type_size, np.uint8)
        n = self.lib.ggml_quantize_chunk(tid, x.ctypes.data, out.ctypes.data, 0, rows,
                                         t.blck_size, None)
        assert n == out.size
        return out

    def quantize_rows(self, name, x, n_per_row, imatrix=None):
        """ggml_quantize_chunk of x as rows of n_per_row values, each weighted by imatrix
        (n_per_row float32, or None), as llama-quantize calls it."""
        tid = GGML_ID[name]
        x = np.ascontiguousarray(x, dtype=np.float32)
        assert x.size % n_per_row == 0
        rows = x.size // n_per_row
        rs = self.lib.ggml_row_size(tid, n_per_row)
        out = np.zeros(rows * rs, np.uint8)
        im = None
        if imatrix is not None:
            imatrix = np.ascontiguousarray(imatrix, dtype=np.float32)
            assert imatrix.size == n_per_row
            im = imatrix.ctypes.data
        n = self.lib.ggml_quantize_chunk(tid, x.ctypes.data, out.ctypes.data, 0, rows,
                                         n_per_row, im)
        assert n == out.size
        return out

    def dequantizer(self, name):
        """ggml's to_float for the type (its traits, or the exported dequantize_row_<t>
        where the traits have none: Q8_K); None when ggml has no dequantizer (Q8_1)."""
        t = self.traits(GGML_ID[name])
        if t.to_float:
            return ROW_FN(t.to_float)
        sym = "dequantize_row_" + (name[:2].lower() + name[2:] if name.endswith("_K")
                                   else name.lower())
        try:
            fn = getattr(self.lib, sym)
        except AttributeError:
            return None
        return ROW_FN(ctypes.cast(fn, ctypes.c_void_p).value)

    def dequantize(self, name, blocks):
        f = self.dequantizer(name)
        t = self.traits(GGML_ID[name])
        blocks = np.ascontiguousarray(blocks, dtype=np.uint8).reshape(-1)
        assert blocks.size % t.type_size == 0
        y = np.zeros(blocks.size // t.type_size * t.blck_size, np.float32)
        f(blocks.ctypes.data, y.ctypes.data, y.size)
        return y


# ---- dequantize inputs: random blocks with every special scale ----

F16_SPECIALS = [0x0000, 0x8000, 0x0001, 0x03ff, 0x0400, 0x3c00, 0x7bff, 0xfbff, 0x7c00,
                0xfc00, 0x7e00, 0xfe00, 0x7c01, 0x7d55, 0xfd00]
F32_SPECIALS = [0x00000000, 0x80000000, 0x00000001, 0x007fffff, 0x3f800000, 0x7f7fffff,
                0x7f800000, 0xff800000, 0x7fc00000, 0xffc00000, 0x7f800001, 0x7fa00000]
E8M0_SPECIALS = [0, 1, 2, 126, 127, 128, 253, 254, 255]
UE4M3_SPECIALS = [0x00, 0x01, 0x07, 0x08, 0x38, 0x7e, 0x7f, 0x80, 0xfe, 0xff]
F16_AT = {"Q8_1": [0, 2], "IQ2_XXS": [0], "IQ2_XS": [0], "IQ3_XXS": [0], "IQ1_S": [0],
          "IQ4_NL": [0], "IQ3_S": [0], "IQ2_S": [0], "IQ4_XS": [0], "TQ1_0": [52],
          "TQ2_0": [64], "Q1_0": [0], "Q2_0": [0]}


def deq_blocks(name, values=4096, seed=None):
    """Blocks of `name` holding `values` values: seeded random bytes, then in the first
    blocks the scale set to each special value in turn."""
    t_id = GGML_ID[name]
    seed = t_id if seed is None else seed
    bs, ts = BLOCK[name]
    nb = values // bs
    b = np.random.default_rng(1000 + seed).integers(0, 256, (nb, ts), dtype=np.uint8)
    if name in F16_AT:
        for i, v in enumerate(F16_SPECIALS[:nb]):
            for at in F16_AT[name]:
                b[i, at:at + 2] = np.array([v], "<u2").view(np.uint8)
    elif name == "Q8_K":
        for i, v in enumerate(F32_SPECIALS[:nb]):
            b[i, 0:4] = np.array([v], "<u4").view(np.uint8)
    elif name == "MXFP4":
        for i, v in enumerate(E8M0_SPECIALS[:nb]):
            b[i, 0] = v
    elif name == "NVFP4":
        for i, v in enumerate(UE4M3_SPECIALS[:nb]):
            b[i, i % 4] = v
    elif name == "IQ1_M":          # d's 16 bits are the top nibbles of 4 u16 at 48..55
        for i, v in enumerate(F16_SPECIALS[:nb]):
            sc = b[i, 48:56].copy().view("<u2")
            for k in range(4):
                sc[k] = (sc[k] & 0x0FFF) | (((v >> (4 * k)) & 0xF) << 12)
            b[i, 48:56] = sc.view(np.uint8)
    return b.reshape(-1)


# (block size, bytes per block), ggml-common.h; checked against ggml's traits by the tests.
BLOCK = {"Q4_0": (32, 18), "Q4_1": (32, 20), "Q5_0": (32, 22), "Q5_1": (32, 24),
         "Q8_0": (32, 34), "Q8_1": (32, 36), "Q2_K": (256, 84), "Q3_K": (256, 110),
         "Q4_K": (256, 144), "Q5_K": (256, 176), "Q6_K": (256, 210), "Q8_K": (256, 292),
         "IQ2_XXS": (256, 66), "IQ2_XS": (256, 74), "IQ3_XXS": (256, 98), "IQ1_S": (256, 50),
         "IQ4_NL": (32, 18), "IQ3_S": (256, 110), "IQ2_S": (256, 82), "IQ4_XS": (256, 136),
         "IQ1_M": (256, 56), "TQ1_0": (256, 54), "TQ2_0": (256, 66), "MXFP4": (32, 17),
         "NVFP4": (64, 36), "Q1_0": (128, 18), "Q2_0": (64, 18)}


def goldens(g):
    """{file name: (bytes, producer, producer_version)} for every golden this script owns."""
    ver = f"{g.version} {platform.machine()}-linux-gnu gcc-12 -O3"
    files = {}
    for inp in ("hard", "special"):
        x = np.fromfile(FIX / f"{inp}.f32", "<f4")
        for t in WRITE:
            sym = "quantize_row_" + (t[:2].lower() + t[2:] if t.endswith("_K") else t.lower())
            sym = sym + "_ref" if t in QUANTIZE else sym.replace("_row", "")
            files[f"{inp}.{t}.bin"] = (g.quantize(t, x).tobytes(), f"ggml {sym}", ver)
    x = np.concatenate([np.fromfile(FIX / f"{inp}.f32", "<f4") for inp in ("hard", "special")])
    im = imatrix_vector()
    files["imatrix.f32"] = (im.astype("<f4").tobytes(),
                            "scripts/make_quant_goldens.py imatrix_vector", f"numpy={np.__version__}")
    for t in IMATRIX:
        sym = "quantize_" + (t[:2].lower() + t[2:] if t.endswith("_K") else t.lower())
        files[f"imatrix.{t}.bin"] = (g.quantize_rows(t, x, IMATRIX_ROW, im).tobytes(),
                                     f"ggml {sym} with imatrix.f32", ver)
    gx = grid_inputs()
    files["grid.f32"] = (gx.astype("<f4").tobytes(), "scripts/make_quant_goldens.py grid_inputs",
                         f"numpy={np.__version__}")
    for t in GRID:
        sym = "quantize_" + t.lower()
        files[f"grid.{t}.bin"] = (g.quantize_rows(t, gx, 256, im[:256]).tobytes(),
                                  f"ggml {sym} with imatrix.f32[:256]", ver)
        if t not in GRID_NEEDS_IMATRIX:
            files[f"grid-plain.{t}.bin"] = (g.quantize_rows(t, gx, 256).tobytes(),
                                            f"ggml {sym}", ver)
    for t in DEQUANTIZE_ONLY:
        if g.dequantizer(t) is None:
            continue
        b = deq_blocks(t)
        files[f"deq.{t}.bin"] = (b.tobytes(), "scripts/make_quant_goldens.py deq_blocks",
                                 f"numpy={np.__version__}")
        sym = "dequantize_row_" + (t[:2].lower() + t[2:] if t.endswith("_K") else t.lower())
        files[f"deq.{t}.f32"] = (g.dequantize(t, b).astype("<f4").tobytes(), f"ggml {sym}",
                                 ver)
    return files


def main():
    check = sys.argv[1:] == ["--check"]
    if sys.argv[1:] and not check:
        print(__doc__, file=sys.stderr)
        return 2
    g = Ggml()
    written, bad = {}, []
    for name, (data, producer, ver) in goldens(g).items():
        path = FIX / name
        if path.exists() and path.read_bytes() == data:
            continue
        bad.append(name)
        if not check:
            path.write_bytes(data)
            written[f"quant/{name}"] = (producer, ver, hashlib.sha256(data).hexdigest())
    if check:
        for name in bad:
            print(f"fixtures/quant/{name} differs from the pinned ggml", file=sys.stderr)
        return 1 if bad else 0
    lines = MANIFEST.read_text().splitlines()
    head, rows = lines[0], [r.split("\t") for r in lines[1:] if r]
    keep = [r for r in rows if r[0] not in written]
    quant = sorted([r for r in keep if r[0].startswith("quant/")] +
                   [[f, *v] for f, v in written.items()])
    first = next((i for i, r in enumerate(keep) if r[0].startswith("quant/")), len(keep))
    out = keep[:first] + quant + [r for r in keep[first:] if not r[0].startswith("quant/")]
    MANIFEST.write_text("\n".join([head] + ["\t".join(r) for r in out]) + "\n")
    print(f"wrote {len(written)} files: {' '.join(sorted(written))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
