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


def test_package_quantizes_every_type_ggml_quantizes():
    assert set(lc.quantize_types()) == set(mqg.QUANTIZE)


@pytest.mark.parametrize("qtype", mqg.QUANTIZE)
def test_quantize_array_is_ggml_quantize_chunk(ggml, inputs, qtype):
    want = ggml.quantize(qtype, inputs)
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
