"""quantize_array / dequantize_array against ggml's own bytes (fixtures/quant/, made by the
pinned ggml's ggml_quantize_chunk: every type we write, hard and non-finite inputs,
without and with an importance matrix) and gguf-py's gguf.quants where it has the type
(quantize: Q8_0 Q4_0 Q4_1 Q5_0 Q5_1; dequantize: every type it decodes).
tests/llama/test_python_ggml.py compares with ggml_quantize_chunk itself on millions of
values (make check-llama)."""
import numpy as np
import pytest
from gguf import GGMLQuantizationType as Q
from gguf import quants
from gguf.constants import GGML_QUANT_SIZES

from pylc import FIX, libconvert as lc
from test_quant import (ALL, CASES, DEQ_GGML, DEQ_PY, GRID, GRID_NEEDS_IMATRIX, IMATRIX,
                        LEGACY, SIGNED_GRID, WRITE)

QF = FIX / "quant"


def blocks_differ(qtype, got, want):
    _, size = GGML_QUANT_SIZES[getattr(Q, qtype)]
    assert got.size == want.size, f"{qtype}: {got.size} bytes, want {want.size}"
    return np.nonzero((got.reshape(-1) != want.reshape(-1)).reshape(-1, size).any(axis=1))[0]


def test_every_type_of_quant_is_offered():
    assert set(lc.quantize_types()) == set(WRITE) | set(GRID)
    assert {t for t in lc.quantize_types() if lc.imatrix_use(t) == "requires"} == \
        set(GRID_NEEDS_IMATRIX)
    assert {t for t in lc.quantize_types() if lc.imatrix_use(t) == "ignores"} == \
        {"Q8_0", "TQ1_0", "TQ2_0", "MXFP4"}
    assert set(lc.dequantize_types()) == set(ALL) | set(DEQ_GGML) | {"Q8_1"}


@pytest.mark.parametrize("inp", ["hard", "special"])
@pytest.mark.parametrize("qtype", WRITE)
def test_quantize_array_is_ggml_golden(qtype, inp):
    x = np.fromfile(QF / f"{inp}.f32", "<f4")
    want = np.fromfile(QF / f"{inp}.{qtype}.bin", np.uint8)
    got = lc.quantize_array(x, qtype)
    bad = blocks_differ(qtype, got, want)
    assert bad.size == 0, f"{qtype} {inp}: blocks {bad[:5]} differ from ggml"


@pytest.mark.parametrize("qtype", IMATRIX)
def test_quantize_array_with_imatrix_is_ggml_golden(qtype):
    """ggml_quantize_chunk of rows of 512 weighted by imatrix.f32 (zeros, a subnormal,
    huge and equal weights)."""
    x = np.concatenate([np.fromfile(QF / f"{inp}.f32", "<f4") for inp in ("hard", "special")])
    im = np.fromfile(QF / "imatrix.f32", "<f4")
    want = np.fromfile(QF / f"imatrix.{qtype}.bin", np.uint8)
    with np.errstate(all="ignore"):
        got = lc.quantize_array(x.reshape(-1, im.size), qtype, imatrix=im, threads=3)
    bad = blocks_differ(qtype, got, want)
    assert bad.size == 0, f"{qtype}: blocks {bad[:5]} differ from ggml"


@pytest.mark.parametrize("plain", [False, True])
@pytest.mark.parametrize("qtype", GRID)
def test_quantize_array_grid_types_are_ggml_golden(qtype, plain):
    x = np.fromfile(QF / "grid.f32", "<f4").reshape(-1, 256)
    im = np.fromfile(QF / "imatrix.f32", "<f4")[:256]
    if plain and qtype in GRID_NEEDS_IMATRIX:
        with pytest.raises(lc.ArgumentError, match="needs an importance matrix"):
            lc.quantize_array(x, qtype)
        return
    want = np.fromfile(QF / f"grid{'-plain' if plain else ''}.{qtype}.bin", np.uint8)
    got = lc.quantize_array(x, qtype, imatrix=None if plain else im)
    assert blocks_differ(qtype, got, want).size == 0


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("qtype", LEGACY)
def test_quantize_array_is_gguf_py(qtype, case):
    x = CASES[case].astype(np.float32).reshape(2, -1)
    with np.errstate(all="ignore"):
        want = quants.quantize(x, getattr(Q, qtype))
    got = lc.quantize_array(x, getattr(Q, qtype))       # gguf-py's type enum works too
    assert got.dtype == want.dtype == np.uint8 and got.shape == want.shape
    assert blocks_differ(qtype, got, want).size == 0


@pytest.mark.parametrize("qtype", LEGACY)
def test_quantize_array_large_matrix_is_gguf_py(qtype):
    """A model-sized matrix, split between threads: the same bytes as gguf-py, and as
    one thread."""
    x = np.random.default_rng(5).standard_normal((512, 4096)).astype(np.float32)
    want = quants.quantize(x, getattr(Q, qtype))
    got = lc.quantize_array(x, qtype, threads=4)
    assert got.shape == want.shape and np.array_equal(got, want)
    assert np.array_equal(lc.quantize_array(x, qtype, threads=1), got)


@pytest.mark.parametrize("qtype", WRITE)
def test_quantize_array_shapes_and_inputs(qtype):
    """Rows along the last axis, any leading shape, any float dtype and layout."""
    block, size = GGML_QUANT_SIZES[getattr(Q, qtype)]
    x = np.random.default_rng(1).standard_normal((3, 2, block * 2))
    got = lc.quantize_array(x, qtype)
    assert got.shape == (3, 2, size * 2)
    flat = lc.quantize_array(x.astype(np.float32).reshape(-1), qtype)
    assert np.array_equal(got.reshape(-1), flat)
    xt = np.asfortranarray(x.astype(np.float16))
    assert np.array_equal(lc.quantize_array(xt, qtype),
                          lc.quantize_array(x.astype(np.float16).astype(np.float32), qtype))


def test_quantize_array_refusals():
    with pytest.raises(ValueError, match="multiple of 32"):
        lc.quantize_array(np.ones(33, np.float32), "Q8_0")
    with pytest.raises(ValueError, match="no quantizer"):
        lc.quantize_array(np.ones(256, np.float32), "NVFP4")
    with pytest.raises(ValueError, match="unknown type"):
        lc.quantize_array(np.ones(32, np.float32), "Q9_9")
    with pytest.raises(ValueError, match="importance matrix has shape"):
        lc.quantize_array(np.ones((2, 256), np.float32), "Q4_K", imatrix=np.ones(255))


@pytest.mark.parametrize("inp", ["hard", "special"])
@pytest.mark.parametrize("qtype", ALL)
def test_dequantize_array_is_gguf_py(qtype, inp):
    blocks = np.fromfile(QF / f"{inp}.{qtype}.bin", np.uint8)
    _, size = GGML_QUANT_SIZES[getattr(Q, qtype)]
    b = blocks.reshape(-1, size)
    with np.errstate(all="ignore"):
        want = quants.dequantize(b, getattr(Q, qtype)).astype(np.float32)
    got = lc.dequantize_array(b, qtype)
    assert got.shape == want.shape and got.dtype == np.float32
    assert np.array_equal(got.view("<u4"), want.view("<u4"))


@pytest.mark.parametrize("qtype", DEQ_PY)
def test_dequantize_only_types_are_gguf_py(qtype):
    block, size = GGML_QUANT_SIZES[getattr(Q, qtype)]
    b = np.random.default_rng(3).integers(0, 256, (64, size * 4), dtype=np.uint8)
    with np.errstate(all="ignore"):
        want = quants.dequantize(b, getattr(Q, qtype)).astype(np.float32)
    got = lc.dequantize_array(b, qtype, (64, block * 4))
    same = got.view("<u4") == want.view("<u4")
    if qtype in SIGNED_GRID:     # a NaN's sign (see test_quant.py): NaN on both sides
        same |= np.isnan(got) & np.isnan(want)
    assert same.all(), f"{qtype}: {np.count_nonzero(~same)} values differ from gguf-py"


@pytest.mark.parametrize("qtype", DEQ_GGML)
def test_dequantize_array_is_ggml_golden(qtype):
    """ggml's own dequantizer output (every dequantize-only type, Q8_K Q1_0 Q2_0 too)."""
    blocks = np.fromfile(QF / f"deq.{qtype}.bin", np.uint8)
    want = np.fromfile(QF / f"deq.{qtype}.f32", "<u4")
    got = lc.dequantize_array(blocks.reshape(1, -1), qtype)
    assert np.array_equal(got.reshape(-1).view("<u4"), want)


def test_round_trip_through_save_and_open(tmp_path):
    x = np.random.default_rng(2).standard_normal((8, 256)).astype(np.float32)
    b = lc.quantize_array(x, "Q4_K")
    lc.save_gguf(tmp_path / "q.gguf", {"w": b}, {"general.architecture": "test"},
                 raw_dtypes={"w": "Q4_K"})
    with lc.open(tmp_path / "q.gguf") as m:
        assert m.tensors["w"] == lc.TensorInfo("w", "Q4_K", (8, 256), b.nbytes)
        assert np.array_equal(m.tensor("w"), b)
        np.testing.assert_array_equal(m.tensor("w", dequantize=True),
                                      lc.dequantize_array(b, "Q4_K"))
        assert np.abs(m.tensor("w", dequantize=True) - x).max() < 0.2
