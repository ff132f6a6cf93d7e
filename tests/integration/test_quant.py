"""Oracle tests for quant/: our scalar reference against the real producers.

1. Golden blocks made by ggml's own quantize_row_<type>_ref (fixtures/quant/; producer
   and version in fixtures/MANIFEST.tsv) for all ten types we quantize, on hard and
   non-finite inputs. The inputs come from scripts/make_quant_inputs.py; the goldens of
   Q2_K, Q3_K and Q5_K were made by scripts/make_quant_goldens.py with the pinned ggml
   (build/llama-venv), which also confirms the older ones (ggml@d99724f2b141). This and
   tests/llama/test_quant_ggml.py (ggml itself on millions of values, `make check-llama`)
   are the oracles for the K types' quantization.
2. gguf-py's numpy port (gguf.quants.quantize) on hard inputs for Q8_0 Q4_0 Q4_1
   Q5_0 Q5_1. It matches ggml bit for bit except for the sign of a zero scale or
   minimum (see test_signed_zero_scale_follows_ggml); NaN inputs are not compared
   with it (numpy's max/argmax propagate NaN where ggml's comparisons skip it).
3. gguf.quants.dequantize for every type it decodes (ours and the dequantize-only IQ,
   TQ, MXFP4 and NVFP4 types), on golden and on random blocks; ggml's own dequantizer
   output (fixtures/quant/deq.<TYPE>.f32) for every dequantize-only type, which covers
   Q8_K, Q1_0 and Q2_0 that gguf-py lacks.
4. quant/iq_tables.h is what scripts/gen_iq_tables.py makes from the installed gguf-py.
All go through tests/tools/lc-quant-raw (LC_TEST_BIN)."""
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from gguf import GGMLQuantizationType as Q
from gguf import quants
from gguf.constants import GGML_QUANT_SIZES

ROOT = Path(__file__).resolve().parents[2]
FIX = ROOT / "fixtures" / "quant"
RAW = Path(os.environ.get("LC_TEST_BIN", ROOT / "build" / "test-bin")) / "lc-quant-raw"

ALL = ["Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K"]
# quant/types.h LC_WRITE_TYPES: ALL and the types written by rows only (the grid types'
# goldens come from grid.f32: ggml's quantizers assert on some of hard/special's values).
GRID = ["IQ3_XXS", "IQ3_S", "IQ2_S", "IQ2_XXS", "IQ2_XS", "IQ1_S", "IQ1_M"]
GRID_NEEDS_IMATRIX = ["IQ2_XXS", "IQ2_XS", "IQ1_S"]
WRITE = ALL + ["IQ4_NL", "IQ4_XS", "TQ1_0", "TQ2_0", "MXFP4"]
LEGACY = ["Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1"]
# quant/types.h LC_DEQUANT_TYPES, and the ones gguf-py can decode too.
DEQ_ONLY = ["Q8_1", "Q8_K", "IQ2_XXS", "IQ2_XS", "IQ3_XXS", "IQ1_S", "IQ4_NL", "IQ3_S",
            "IQ2_S", "IQ4_XS", "IQ1_M", "TQ1_0", "TQ2_0", "MXFP4", "NVFP4", "Q1_0", "Q2_0"]
DEQ_PY = [t for t in DEQ_ONLY if t not in ("Q8_1", "Q8_K", "Q1_0", "Q2_0")]
DEQ_GGML = [t for t in DEQ_ONLY if t != "Q8_1"]          # ggml has no Q8_1 dequantizer
# Types whose values ggml forms as v * (sign ? -1.f : 1.f), compiled by gcc to a negation:
# a NaN scale comes out with its sign flipped where gguf-py's multiply keeps it. Against
# gguf-py only, those NaNs compare as NaN whatever their sign (ggml's goldens: exactly).
SIGNED_GRID = {"IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ3_XXS", "IQ3_S"}


def lc(op, qtype, data: bytes, tmp_path) -> bytes:
    src, dst = tmp_path / "in.bin", tmp_path / "out.bin"
    src.write_bytes(data)
    subprocess.run([str(RAW), op, qtype, str(src), str(dst)], check=True)
    return dst.read_bytes()


def lc_quantize(qtype, x: np.ndarray, tmp_path) -> np.ndarray:
    return np.frombuffer(lc("quantize", qtype, x.astype("<f4").tobytes(), tmp_path), np.uint8)


def lc_dequantize(qtype, blocks: np.ndarray, tmp_path) -> np.ndarray:
    return np.frombuffer(lc("dequantize", qtype, blocks.tobytes(), tmp_path), "<u4")


def py_quantize(qtype, x: np.ndarray) -> np.ndarray:
    return quants.quantize(x.reshape(1, -1), getattr(Q, qtype)).reshape(-1)


def py_dequantize_bits(qtype, blocks: np.ndarray) -> np.ndarray:
    _, size = GGML_QUANT_SIZES[getattr(Q, qtype)]
    with np.errstate(all="ignore"):
        y = quants.dequantize(blocks.reshape(-1, size), getattr(Q, qtype))
    return y.astype(np.float32).reshape(-1).view("<u4")


def diff_blocks(qtype, got, want):
    _, size = GGML_QUANT_SIZES[getattr(Q, qtype)]
    assert got.size == want.size, f"{qtype}: {got.size} bytes, want {want.size}"
    bad = np.nonzero((got != want).reshape(-1, size).any(axis=1))[0]
    return bad


# ---- 1. golden blocks from ggml itself ----

@pytest.mark.parametrize("inp", ["hard", "special"])
@pytest.mark.parametrize("qtype", WRITE)
def test_quantize_matches_ggml_golden(qtype, inp, tmp_path):
    x = np.fromfile(FIX / f"{inp}.f32", "<f4")
    want = np.fromfile(FIX / f"{inp}.{qtype}.bin", np.uint8)
    got = lc_quantize(qtype, x, tmp_path)
    bad = diff_blocks(qtype, got, want)
    assert bad.size == 0, f"{qtype} {inp}: {bad.size} blocks differ from ggml, first {bad[:5]}"


def test_golden_fixtures_are_not_degenerate():
    # A golden file of zeros would make the comparison above vacuous.
    for qtype in ALL:
        b = np.fromfile(FIX / f"hard.{qtype}.bin", np.uint8)
        assert np.unique(b).size > 16, qtype


# Importance-matrix quantization (scripts/make_quant_goldens.py IMATRIX): ggml_quantize_chunk
# of hard.f32 + special.f32 as rows of 512 weighted by imatrix.f32 (zeros, a subnormal,
# huge and equal weights), i.e. ggml's quantize_row_<type>_impl.
IMATRIX = ["Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K", "IQ4_NL",
           "IQ4_XS"]


def lc_quantize_rows(qtype, x, n_per_row, imatrix, tmp_path, env=None):
    src, dst, im = tmp_path / "in.bin", tmp_path / "out.bin", tmp_path / "im.bin"
    x.astype("<f4").tofile(src)
    args = [str(RAW), "quantize", qtype, str(src), str(dst), str(n_per_row)]
    if imatrix is not None:
        imatrix.astype("<f4").tofile(im)
        args.append(str(im))
    subprocess.run(args, check=True, env=env)
    return np.fromfile(dst, np.uint8)


@pytest.mark.parametrize("qtype", IMATRIX)
def test_imatrix_quantize_matches_ggml_golden(qtype, tmp_path):
    x = np.concatenate([np.fromfile(FIX / f"{inp}.f32", "<f4") for inp in ("hard", "special")])
    im = np.fromfile(FIX / "imatrix.f32", "<f4")
    want = np.fromfile(FIX / f"imatrix.{qtype}.bin", np.uint8)
    got = lc_quantize_rows(qtype, x, im.size, im, tmp_path)
    bad = diff_blocks(qtype, got, want)
    assert bad.size == 0, f"{qtype}: {bad.size} blocks differ from ggml, first {bad[:5]}"
    # The weighting matters: the same rows without it are other bytes.
    plain = np.fromfile(FIX / f"hard.{qtype}.bin", np.uint8)
    assert not np.array_equal(want[:plain.size], plain), qtype


@pytest.mark.parametrize("plain", [False, True])
@pytest.mark.parametrize("qtype", GRID)
def test_grid_types_match_ggml_golden(qtype, plain, tmp_path):
    if plain and qtype in GRID_NEEDS_IMATRIX:
        # ggml requires an importance matrix for it; so do we.
        src, dst = tmp_path / "in.f32", tmp_path / "out.bin"
        np.ones(256, np.float32).tofile(src)
        r = subprocess.run([str(RAW), "quantize", qtype, str(src), str(dst)],
                           capture_output=True, text=True)
        assert r.returncode == 1 and "needs an importance matrix" in r.stderr
        return
    x = np.fromfile(FIX / "grid.f32", "<f4")
    im = np.fromfile(FIX / "imatrix.f32", "<f4")[:256]
    want = np.fromfile(FIX / f"grid{'-plain' if plain else ''}.{qtype}.bin", np.uint8)
    got = lc_quantize_rows(qtype, x, 256, None if plain else im, tmp_path)
    bad = diff_blocks(qtype, got, want)
    assert bad.size == 0, f"{qtype}: {bad.size} blocks differ from ggml, first {bad[:5]}"
    assert np.unique(want).size > 64


# ---- 2. gguf-py's numpy quantizers on hard inputs ----

def hard_cases():
    rng = np.random.default_rng(7)
    B = 32
    with np.errstate(over="ignore"):
        return {
            "normal": rng.standard_normal(B * 64),
            "uniform": rng.uniform(-3, 3, B * 64),
            "ties_q8": np.tile(np.r_[127.0, -127.0, np.arange(-15, 15) + 0.5], 4),
            "ties_q4": np.tile(np.r_[-8.0, np.arange(-8, 7) + 0.5, np.arange(0, 16) * 0.5], 4),
            "all_equal": np.repeat(rng.standard_normal(16), B),
            "all_equal_neg": np.full(B * 2, -2.5),
            "tiny": rng.standard_normal(B * 16) * 1e-30,
            "subnormal": rng.standard_normal(B * 16) * 1e-40,
            "subnormal_multiples": rng.integers(-300, 300, B * 16) * 2.0**-149,
            "huge": rng.standard_normal(B * 16) * 1e37,
            "max_finite": np.tile(np.r_[3.4e38, -1.0, rng.uniform(-1, 1, B - 2)], 4),
            "zeros": np.zeros(B * 2),
            "absmin_eq_absmax": np.tile(np.r_[2.0, -2.0, rng.uniform(-2, 2, B - 2)], 8),
            "absmin_eq_absmax_neg_first": np.tile(np.r_[-2.0, 2.0, rng.uniform(-2, 2, B - 2)], 8),
            "mixed_signs": rng.choice([-1.0, 1.0, 0.5, -0.5, 0.25], B * 32),
        }


CASES = hard_cases()


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("qtype", LEGACY)
def test_quantize_matches_gguf_py(qtype, case, tmp_path):
    x = CASES[case].astype(np.float32)
    with np.errstate(all="ignore"):
        want = py_quantize(qtype, x)
    got = lc_quantize(qtype, x, tmp_path)
    bad = diff_blocks(qtype, got, want)
    assert bad.size == 0, f"{qtype} {case}: blocks {bad[:5]} differ from gguf-py"


# The one place gguf-py and ggml disagree on finite input: the sign of a zero.
# ggml (the spec) starts its search from max = +0.0, so an all-zero Q4_0/Q5_0 block
# gets d = +0.0/-8 = -0.0 (bits 0x8000) whatever the signs of its zeros; numpy takes
# the first element, so a block starting with -0.0 gets +0.0. For Q4_1/Q5_1 ggml's
# `if (v < min) min = v` keeps the first zero it sees; numpy's min() may return
# either. Decoded values are equal; only the stored sign bit differs.
@pytest.mark.parametrize("qtype", LEGACY)
def test_signed_zero_scale_follows_ggml(qtype, tmp_path):
    x = np.zeros(64, np.float32)
    x[0] = -0.0                 # block 0 starts with -0.0; block 1 starts with +0.0
    x[33] = -0.0                # and holds a -0.0 later
    got = lc_quantize(qtype, x, tmp_path)
    _, size = GGML_QUANT_SIZES[getattr(Q, qtype)]
    b0, b1 = got[:size], got[size:]
    d0, d1 = b0[:2].view("<u2")[0], b1[:2].view("<u2")[0]
    if qtype in ("Q4_0", "Q5_0"):
        assert (d0, d1) == (0x8000, 0x8000)
        with np.errstate(all="ignore"):
            assert py_quantize(qtype, x)[:2].view("<u2")[0] == 0x0000   # gguf-py differs
    elif qtype in ("Q4_1", "Q5_1"):
        m0, m1 = b0[2:4].view("<u2")[0], b1[2:4].view("<u2")[0]
        assert (d0, m0, d1, m1) == (0, 0x8000, 0, 0x0000)   # m = the first zero seen
    else:
        assert (d0, d1) == (0, 0)
    # Apart from those sign bits, every byte agrees with gguf-py.
    with np.errstate(all="ignore"):
        want = py_quantize(qtype, x).reshape(2, size).copy()
    got2 = got.reshape(2, size).copy()
    zero_fields = {"Q4_0": [1], "Q5_0": [1], "Q4_1": [3], "Q5_1": [3], "Q8_0": []}[qtype]
    for i in zero_fields:          # high byte of d (Q4_0/Q5_0) or of m (Q4_1/Q5_1)
        got2[:, i] &= 0x7F
        want[:, i] &= 0x7F
    assert np.array_equal(got2, want)


@pytest.mark.parametrize("qtype", LEGACY)
def test_quantize_rejects_partial_block(qtype, tmp_path):
    src, dst = tmp_path / "in.f32", tmp_path / "out.bin"
    np.ones(33, np.float32).tofile(src)
    r = subprocess.run([str(RAW), "quantize", qtype, str(src), str(dst)],
                       capture_output=True, text=True)
    assert r.returncode == 1
    assert "not a multiple" in r.stderr
    assert not dst.exists()


# ---- 3. dequantization against gguf-py, every type ----

@pytest.mark.parametrize("inp", ["hard", "special"])
@pytest.mark.parametrize("qtype", ALL)
def test_dequantize_golden_matches_gguf_py(qtype, inp, tmp_path):
    blocks = np.fromfile(FIX / f"{inp}.{qtype}.bin", np.uint8)
    got = lc_dequantize(qtype, blocks, tmp_path)
    want = py_dequantize_bits(qtype, blocks)
    assert got.size == want.size
    assert np.array_equal(got, want), f"{qtype} {inp}: {np.count_nonzero(got != want)} differ"


@pytest.mark.parametrize("qtype", ALL)
def test_dequantize_random_blocks_matches_gguf_py(qtype, tmp_path):
    # Random bytes, scales included: f16 NaN, infinity and subnormal scales occur.
    _, size = GGML_QUANT_SIZES[getattr(Q, qtype)]
    blocks = np.random.default_rng(11).integers(0, 256, (96, size), dtype=np.uint8)
    got = lc_dequantize(qtype, blocks, tmp_path)
    want = py_dequantize_bits(qtype, blocks)
    assert np.array_equal(got, want), f"{qtype}: {np.count_nonzero(got != want)} values differ"


@pytest.mark.parametrize("qtype", ALL)
def test_round_trip_error_is_small(qtype, tmp_path):
    # Guards against a quantizer and dequantizer that agree with each other but are
    # both wrong: normal data must come back within the type's resolution.
    x = np.random.default_rng(3).standard_normal(4096).astype(np.float32)
    blocks = lc_quantize(qtype, x, tmp_path)
    y = lc_dequantize(qtype, blocks, tmp_path).view(np.float32)
    rmse = float(np.sqrt(np.mean((y - x) ** 2)))
    limit = {"Q8_0": 0.006, "Q4_0": 0.095, "Q4_1": 0.085, "Q5_0": 0.046, "Q5_1": 0.042,
             "Q2_K": 0.31, "Q3_K": 0.16, "Q4_K": 0.078, "Q5_K": 0.039,
             "Q6_K": 0.019}[qtype]   # measured: .0053 .086 .078 .042 .039 .30 .15 .071 .037 .017
    assert 0 < rmse < limit, f"{qtype} rmse {rmse}"


# ---- 3b. the dequantize-only types ----

def blocks_of(qtype, n, seed):
    _, size = GGML_QUANT_SIZES[getattr(Q, qtype)]
    return np.random.default_rng(seed).integers(0, 256, (n, size), dtype=np.uint8)


def equal_to_gguf_py(qtype, got, want):
    """Bit equality, except that NaNs of SIGNED_GRID types may differ in sign."""
    same = got == want
    if qtype in SIGNED_GRID:
        nan = lambda u: (u & 0x7F800000) == 0x7F800000 and (u & 0x007FFFFF) != 0  # noqa: E731
        same |= np.vectorize(nan, otypes=[bool])(got) & ((got ^ want) == 0x80000000)
    return same


@pytest.mark.parametrize("qtype", DEQ_PY)
def test_dequantize_only_random_blocks_match_gguf_py(qtype, tmp_path):
    # A million values of random bytes per type: every grid entry, sign pattern and
    # scale bit pattern (NaN, infinite and subnormal scales included) occurs.
    block, _ = GGML_QUANT_SIZES[getattr(Q, qtype)]
    blocks = blocks_of(qtype, (1 << 20) // block, 17)
    got = lc_dequantize(qtype, blocks, tmp_path)
    want = py_dequantize_bits(qtype, blocks)
    assert got.size == want.size
    same = equal_to_gguf_py(qtype, got, want)
    assert same.all(), f"{qtype}: {np.count_nonzero(~same)} values differ"


@pytest.mark.parametrize("qtype", DEQ_GGML)
def test_dequantize_only_matches_ggml_golden(qtype, tmp_path):
    blocks = np.fromfile(FIX / f"deq.{qtype}.bin", np.uint8)
    want = np.fromfile(FIX / f"deq.{qtype}.f32", "<u4")
    got = lc_dequantize(qtype, blocks, tmp_path)
    assert got.size == want.size == 4096
    bad = np.nonzero(got != want)[0]
    assert bad.size == 0, (f"{qtype}: {bad.size} values differ from ggml, first at {bad[0]}: "
                           f"{got[bad[0]]:08x}, want {want[bad[0]]:08x}")
    if qtype in DEQ_PY:
        assert equal_to_gguf_py(qtype, py_dequantize_bits(qtype, blocks), want).all()


def test_dequantize_only_goldens_are_not_degenerate():
    # Many distinct finite values (a ternary type has few per scale, many scales), and
    # the special scales made it in: NaNs wherever a scale can be one (the FP4 scales
    # cannot; MXFP4's largest, 2^127, overflows to infinity instead).
    for qtype in DEQ_GGML:
        y = np.fromfile(FIX / f"deq.{qtype}.f32", "<f4")
        assert np.unique(y[np.isfinite(y)]).size > 12, qtype
        assert np.isnan(y).any() == (qtype not in ("MXFP4", "NVFP4")), qtype
        assert np.isinf(y).any() == (qtype != "NVFP4"), qtype


def test_quantize_refuses_dequantize_only_types(tmp_path):
    src, dst = tmp_path / "in.f32", tmp_path / "out.bin"
    np.ones(256, np.float32).tofile(src)
    r = subprocess.run([str(RAW), "quantize", "NVFP4", str(src), str(dst)],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "unsupported" in r.stderr
    assert not dst.exists()


def test_type_table_lists_every_ggml_block_type():
    # lc-quant-raw types: NAME GGUF_ID BLOCK TYPE_SIZE QUANTIZE DEQUANTIZE, from
    # libconvert/dtype.c and the kernel table; gguf-py's sizes as the second opinion.
    out = subprocess.run([str(RAW), "types"], check=True, capture_output=True, text=True)
    rows = {f[0]: tuple(int(v) for v in f[1:]) for f in map(str.split, out.stdout.splitlines())}
    assert sorted(t for t, r in rows.items() if r[3]) == sorted(WRITE + GRID)
    assert sorted(t for t, r in rows.items() if r[4]) == sorted(ALL + DEQ_ONLY)
    for name, (gid, block, size, _, _) in rows.items():
        if hasattr(Q, name):
            assert getattr(Q, name) == gid, name
            # gguf-py 0.19.0 still sizes Q8_1 as 40 bytes (f32 d and s); ggml's block_q8_1
            # has been two binary16 values, 36 bytes, for years (tests/llama checks ggml).
            if name != "Q8_1":
                assert GGML_QUANT_SIZES[getattr(Q, name)] == (block, size), name


# ---- 4. the generated tables ----

def test_iq_tables_are_generated_from_gguf_py():
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_iq_tables.py"), "--check"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
