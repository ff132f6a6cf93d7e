"""llama.cpp's own quantizer judges gguf-quantize on split inputs.

A model split by gguf-py's writer (scripts/split_gguf.py, as convert_hf_to_gguf.py
--split-max-tensors writes it) from what safetensors2gguf writes for fixtures/hf/qwen2-k
(rows of 256: real K blocks) and fixtures/hf/llama-q9 (10 layers, so the mixes' per-layer
rules count tensors across parts), and qwen2-k split with a first part that holds the
metadata only (gguf-split --no-tensor-first-split). For each TYPE below, gguf-quantize given the first part
writes what llama_model_quantize (llama-cpp-python 0.3.36's llama.cpp, one thread) writes:
  - by default one file, byte for byte;
  - with --keep-split the same parts, each byte for byte (params.keep_split = true),
and llama.cpp loads and runs both (the split one from its first part). The same holds for
--keep-split on an unsplit input (one part, OUT-00001-of-00001.gguf).
"""
import json
import subprocess
import sys

import numpy as np
import pytest

from conftest import HF, ROOT, llama
from test_quantize import CONVERT, OFFERED, llama_plan, llama_quantize, ours

sys.path.insert(0, str(ROOT / "scripts"))
from split_gguf import split_gguf  # noqa: E402

# input -> (model, tensors per part, first part without tensors)
MODELS = {"qwen2-k": ("qwen2-k", 5, False), "llama-q9": ("llama-q9", 17, False),
          "qwen2-k-meta-first": ("qwen2-k", 9, True)}
TYPES = ["Q8_0", "Q4_K_M", "Q6_K", "Q4_0", "F16"]


@pytest.fixture(scope="session")
def split_inputs(tmp_path_factory):
    """model -> (unsplit GGUF, first part)."""
    d = tmp_path_factory.mktemp("split-in")
    out = {}
    for name, (m, per, small) in MODELS.items():
        whole = d / f"{name}.gguf"
        r = subprocess.run([str(CONVERT), "-q", str(HF / m), str(whole)], capture_output=True,
                           text=True)
        assert r.returncode == 0, r.stderr
        (d / name).mkdir()
        parts = split_gguf(whole, d / name / f"{m}.gguf", per, small_first_shard=small)
        assert len(parts) > 2
        out[name] = (whole, parts[0])
    return out


def runs(path):
    m = llama(path)
    m.reset()
    m.eval([1, 2, 3, 4, 5])
    scores = np.array(m.scores[:m.n_tokens], dtype=np.float32)
    assert scores.shape[0] == 5 and np.isfinite(scores).all()


def need(ftype):
    if ftype not in OFFERED:
        pytest.skip(f"gguf-quantize does not offer {ftype} yet")


@pytest.mark.parametrize("model", list(MODELS))
@pytest.mark.parametrize("ftype", TYPES)
def test_merged_output_is_llama_quantize_s(split_inputs, tmp_path, model, ftype):
    need(ftype)
    _, first = split_inputs[model]
    rc, text = llama_quantize(first, tmp_path / "ref.gguf", ftype)
    assert rc == 0, text[-2000:]
    ours(["-q", "-t", "2", first, tmp_path / "ours.gguf", ftype])
    assert (tmp_path / "ours.gguf").read_bytes() == (tmp_path / "ref.gguf").read_bytes()
    runs(tmp_path / "ours.gguf")


@pytest.mark.parametrize("model", list(MODELS))
@pytest.mark.parametrize("ftype", TYPES)
def test_keep_split_parts_are_llama_quantize_s(split_inputs, tmp_path, model, ftype):
    need(ftype)
    _, first = split_inputs[model]
    (tmp_path / "ref").mkdir()
    (tmp_path / "ours").mkdir()
    rc, text = llama_quantize(first, tmp_path / "ref" / "q", ftype, keep_split=True)
    assert rc == 0, text[-2000:]
    ours(["-q", "-t", "2", "--keep-split", first, tmp_path / "ours" / "q.gguf", ftype])
    want = sorted(p.name for p in (tmp_path / "ref").iterdir())
    got = sorted(p.name for p in (tmp_path / "ours").iterdir())
    assert got == want and len(want) > 2
    for name in want:
        assert (tmp_path / "ours" / name).read_bytes() == \
            (tmp_path / "ref" / name).read_bytes(), name
    runs(tmp_path / "ours" / want[0])


def test_keep_split_plan_is_llama_quantize_s(split_inputs):
    """The per-tensor types of a --keep-split dry run (rules counted part by part) equal
    llama.cpp's own dry run with keep_split, for every TYPE, offered or not."""
    _, first = split_inputs["llama-q9"]
    for ftype in ["Q4_K_M", "Q3_K_M", "Q5_K_M", "Q4_K_S", "Q2_K", "Q6_K"]:
        want = llama_plan(first, ftype, keep_split=True)
        r = ours(["--dry-run", "--json", "--keep-split", first, ftype])
        got = {t["name"]: t["to"] for t in json.loads(r.stdout)["tensors"]}
        assert list(got) == list(want), f"{ftype}: tensor order"
        assert got == want, ftype


def test_keep_split_of_an_unsplit_input(split_inputs, tmp_path):
    whole, _ = split_inputs["qwen2-k"]
    rc, text = llama_quantize(whole, tmp_path / "r", "Q8_0", keep_split=True)
    assert rc == 0, text[-2000:]
    ours(["-q", "--keep-split", whole, tmp_path / "o", "Q8_0"])
    a, b = tmp_path / "r-00001-of-00001.gguf", tmp_path / "o-00001-of-00001.gguf"
    assert a.read_bytes() == b.read_bytes()
    runs(b)
