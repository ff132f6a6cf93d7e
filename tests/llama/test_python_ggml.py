"""The Python package's quantize_array / dequantize_array against ggml itself: the
libggml-base of this venv's llama.cpp (the pinned llama-cpp-python 0.3.36) through ctypes
(scripts/make_quant_goldens.py's harness, as test_quant_ggml.py uses it), on the same four
million edge-case values per type, every type we quantize (ggml_quantize_chunk without an
importance matrix) and every block type ggml decodes; as a matrix of rows split between
threads, as users call it. The package loads $LIBCONVERT_LIBRARY (make check-llama builds
build/pic/libconvert.so)."""
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(ROOT / "scripts"))
import libconvert as lc  # noqa: E402
import make_quant_goldens as mqg  # noqa: E402
from test_quant_ggml import KINDS, edge_inputs  # noqa: E402


@pytest.fixture(scope="module")
def ggml():
    return mqg.Ggml()


@pytest.fixture(scope="module")
def inputs():
    x = edge_inputs()
    return x[:x.size // 4096 * 4096]      # whole rows of 4096 (a multiple of every block)


WRITE = mqg.WRITE + mqg.GRID


def test_package_quantizes_every_type_ggml_quantizes():
    assert set(lc.quantize_types()) == set(WRITE)


@pytest.mark.parametrize("qtype", mqg.WRITE)
def test_quantize_array_is_ggml_quantize_chunk(ggml, inputs, qtype):
    want = ggml.quantize_rows(qtype, inputs, 4096)
    with np.errstate(all="ignore"):
        got = lc.quantize_array(inputs.reshape(-1, 4096), qtype, threads=4)
    block, size = mqg.BLOCK[qtype]
    assert got.shape == (inputs.size // 4096, 4096 // block * size)
    bad = np.nonzero((got.reshape(-1) != want).reshape(-1, size).any(axis=1))[0]
    if bad.size:
        kind = KINDS[(bad[0] * block // 256) % len(KINDS)]
        pytest.fail(f"{qtype}: {bad.size} blocks differ from ggml; first {bad[0]} ({kind})")


@pytest.mark.parametrize("qtype", [t for t in mqg.QUANTIZE + mqg.DEQUANTIZE_ONLY
                                   if t != "Q8_1"])
def test_dequantize_array_is_ggml(ggml, qtype):
    block, size = mqg.BLOCK[qtype]
    rng = np.random.default_rng(mqg.GGML_ID[qtype])
    blocks = np.concatenate([mqg.deq_blocks(qtype, 4096 * 16, seed=77),
                             rng.integers(0, 256, (1 << 20) // block * size, dtype=np.uint8)])
    want = ggml.dequantize(qtype, blocks).view("<u4")
    got = lc.dequantize_array(blocks.reshape(1, -1), qtype, threads=4).reshape(-1)
    bad = np.nonzero(got.view("<u4") != want)[0]
    assert bad.size == 0, f"{qtype}: {bad.size} values differ from ggml, first at {bad[0]}"


def weights(n, seed):
    """An importance vector as llama-imatrix's means of squares look: log-normal, with
    some zeros and a few huge ones."""
    rng = np.random.default_rng(seed)
    w = np.exp(rng.normal(0, 2, n)).astype(np.float32)
    w[rng.integers(0, n, n // 64)] = 0
    w[rng.integers(0, n, 4)] *= 1e6
    return w


@pytest.mark.parametrize("qtype", mqg.IMATRIX)
def test_quantize_array_with_imatrix_is_ggml(ggml, inputs, qtype):
    """The weighted searches on the rows of 256 edge-case values that are all finite
    (subnormals, huge values, sums of squares that overflow, ties, zeros). Rows holding a
    NaN or an infinity are left out: there the library's weighted quantizers (quant/, the
    same bytes as its own lc-quant-raw) do not give ggml's bytes for Q4_0, Q5_0, Q4_K and
    Q5_K, a difference of the library, not of this package, which gguf-quantize never
    meets (it refuses such inputs)."""
    rows = inputs.reshape(-1, 256)            # one kind of edge case a row
    rows = np.ascontiguousarray(rows[np.isfinite(rows).all(axis=1)])
    assert rows.shape[0] > 10000
    im = weights(256, mqg.GGML_ID[qtype])
    with np.errstate(all="ignore"):
        want = ggml.quantize_rows(qtype, rows, 256, im)
        got = lc.quantize_array(rows, qtype, imatrix=im, threads=4)
    size = mqg.BLOCK[qtype][1]
    bad = np.nonzero((got.reshape(-1) != want).reshape(-1, size).any(axis=1))[0]
    assert bad.size == 0, f"{qtype}: {bad.size} blocks differ from ggml, first {bad[0]}"


@pytest.mark.parametrize("weighted", [True, False])
@pytest.mark.parametrize("qtype", mqg.GRID)
def test_grid_types_are_ggml(ggml, qtype, weighted):
    """The grid types on finite data (ggml's quantizers assert on the rest), rows of 1024,
    with and (where ggml allows) without a matrix."""
    if not weighted and qtype in mqg.GRID_NEEDS_IMATRIX:
        pytest.skip("ggml requires an importance matrix for it (test_python_quant.py "
                    "checks the refusal)")
    rng = np.random.default_rng(mqg.GGML_ID[qtype])
    x = (rng.standard_normal(1 << 18) * np.repeat(np.exp(rng.normal(0, 2, 1 << 10)), 256)
         ).astype(np.float32)
    im = weights(1024, 7) if weighted else None
    want = ggml.quantize_rows(qtype, x, 1024, im)
    got = lc.quantize_array(x.reshape(-1, 1024), qtype, imatrix=im, threads=4)
    assert np.array_equal(got.reshape(-1), want), qtype
