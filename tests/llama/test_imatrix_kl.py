"""Our importance matrix is as good as llama.cpp's for quantizing: gguf-quantize --imatrix
with model-imatrix's matrix and with the matrix llama.cpp's own forward pass collects
(test_imatrix.py's Collector, the statistic of tools/imatrix) on the same chunks of
tokens, judged by llama.cpp's logits.

For each fixture model and TYPE: both files choose the same type for every tensor, and the
mean KL divergence of each file's next-token distribution from the unquantized model's
(llama.cpp's logits over the calibration chunks) agrees within noise: the difference of
the two means is at most NOISE x the standard error of the paired per-position
differences plus TOL x the mean KL itself (the matrices differ only by float
accumulation order, ~1e-5 relative, which flips a few grid choices at most).

Models: qwen2-k (rows of 256, so the i-quants write their own blocks, not IQ4_NL
fallbacks) and qwen3moe (per-expert matrices of a stack of experts). The figures are
printed (-s). Measured (192 positions): qwen2-k IQ2_XS KL 0.063664 ours vs 0.063632
llama.cpp's (diff 3.1e-5, SE 3.2e-5), IQ3_XXS 0.04146 vs 0.04148, IQ4_XS 0.012397 vs
0.012392, Q4_K_M 0.010782 vs 0.010779; qwen3moe within 5e-6 of each other for all four;
15 to 26 of 27 tensors byte-identical between the two files."""
import subprocess

import gguf
import numpy as np
import pytest

from conftest import BIN, llama, ref_path
from test_imatrix import CTX, llama_cpp_imatrix, ours
from test_quantize import inputs  # noqa: F401
from test_quantize_imatrix import write_gguf_imatrix

QUANTIZE = BIN / "gguf-quantize"
CHUNKS = 3
NOISE = 3.0
TOL = 0.05
TYPES = ["IQ2_XS", "IQ3_XXS", "IQ4_XS", "Q4_K_M"]


def source(inputs, model):  # noqa: F811
    return inputs["qwen2-k"] if model == "qwen2-k" else ref_path(model, "f32")


def kl_per_position(base, quant, chunks):
    """KL(base || quant) of every position's next-token distribution, float64."""
    out = []
    for ids in chunks:
        rows = []
        for path in (base, quant):
            m = llama(path)
            m.reset()
            m.eval(list(ids))
            rows.append(np.array(m.scores[:m.n_tokens], dtype=np.float64))
        lp, lq = (r - r.max(axis=1, keepdims=True) for r in rows)
        lp = lp - np.log(np.exp(lp).sum(axis=1, keepdims=True))
        lq = lq - np.log(np.exp(lq).sum(axis=1, keepdims=True))
        out.append((np.exp(lp) * (lp - lq)).sum(axis=1))
    return np.concatenate(out)


@pytest.fixture(scope="module")
def matrices(inputs, tmp_path_factory):  # noqa: F811
    """model -> (its GGUF, our matrix, llama.cpp's matrix, the chunks)."""
    d = tmp_path_factory.mktemp("imkl")
    out = {}
    for model in ("qwen2-k", "qwen3moe"):
        src = source(inputs, model)
        mine = d / f"{model}.ours.gguf"
        rep, _, _ = ours(src, mine)
        chunks = rep["tokens"][:CHUNKS]
        assert len(chunks) == CHUNKS and all(len(c) == CTX for c in chunks)
        sums, counts = llama_cpp_imatrix(src, chunks)
        theirs = d / f"{model}.llama.gguf"
        write_gguf_imatrix(theirs, {n: (sums[n].astype(np.float32),
                                        counts[n].astype(np.float32)) for n in sums},
                           chunk_count=CHUNKS, chunk_size=CTX)
        out[model] = (src, mine, theirs, chunks)
    return out


def quantize(src, im, out, ftype):
    r = subprocess.run([str(QUANTIZE), "-q", "-t", "1", "--imatrix", str(im), str(src),
                        str(out), ftype], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("ftype", TYPES)
@pytest.mark.parametrize("model", ["qwen2-k", "qwen3moe"])
def test_our_imatrix_quantizes_as_well_as_llama_cpp_s(matrices, model, ftype, tmp_path):
    src, mine, theirs, chunks = matrices[model]
    a, b = tmp_path / "ours.gguf", tmp_path / "llama.gguf"
    quantize(src, mine, a, ftype)
    quantize(src, theirs, b, ftype)
    ta = [(t.name, t.tensor_type.name) for t in gguf.GGUFReader(a).tensors]
    tb = [(t.name, t.tensor_type.name) for t in gguf.GGUFReader(b).tensors]
    assert ta == tb, "the same type for every tensor"
    da = {t.name: bytes(t.data.tobytes()) for t in gguf.GGUFReader(a).tensors}
    db = {t.name: bytes(t.data.tobytes()) for t in gguf.GGUFReader(b).tensors}
    same = sum(da[k] == db[k] for k in da)
    ka, kb = kl_per_position(src, a, chunks), kl_per_position(src, b, chunks)
    assert np.isfinite(ka).all() and np.isfinite(kb).all()
    diff = ka - kb
    se = diff.std(ddof=1) / np.sqrt(diff.size) if diff.size > 1 else 0.0
    print(f"\n{model} {ftype}: KL ours {ka.mean():.6f} llama.cpp's {kb.mean():.6f} "
          f"diff {diff.mean():+.2e} (SE {se:.1e}, n={diff.size}); "
          f"{same}/{len(da)} tensors byte-identical")
    assert abs(diff.mean()) <= NOISE * se + TOL * max(ka.mean(), kb.mean()), \
        (ka.mean(), kb.mean(), se)
