"""Sanity of the judge itself, always run: llama.cpp loads every reference GGUF
(fixtures/hf-ref/, written by llama.cpp's own convert_hf_to_gguf.py) and computes finite
logits of the right shape, so a failure in test_ours.py is about our files, not the judge."""
import json

import gguf
import numpy as np
import pytest

from conftest import HF, MODELS, OUTTYPES, llama, logits, ref_path, tokenize


@pytest.mark.parametrize("outtype", OUTTYPES)
@pytest.mark.parametrize("model", MODELS)
def test_reference_loads_and_gives_finite_logits(model, outtype):
    path = ref_path(model, outtype)
    cfg = json.loads((HF / model / "config.json").read_text())
    m = llama(path)
    assert m.n_vocab() == cfg["vocab_size"]
    assert m.n_embd() == cfg["hidden_size"]
    toks = tokenize(path, "hello world 123", add_bos=True)
    assert len(toks) >= 3
    out = logits(path, toks)
    assert out.shape == (len(toks), cfg["vocab_size"])
    assert np.isfinite(out).all()
    # Not all equal: a model that silently loaded zeros would give flat logits.
    assert float(out.std()) > 1e-4


@pytest.mark.parametrize("outtype", OUTTYPES)
@pytest.mark.parametrize("model", MODELS)
def test_reference_is_what_the_name_says(model, outtype):
    """The fixture names are right: architecture and the weights' type match the file name."""
    r = gguf.GGUFReader(ref_path(model, outtype))
    arch = r.fields["general.architecture"].contents()
    assert arch == ("qwen2" if model == "qwen2" else "llama")
    want = {"f32": gguf.GGMLQuantizationType.F32, "f16": gguf.GGMLQuantizationType.F16,
            "bf16": gguf.GGMLQuantizationType.BF16,
            "q8_0": gguf.GGMLQuantizationType.Q8_0}[outtype]
    emb = next(t for t in r.tensors if t.name == "token_embd.weight")
    assert emb.tensor_type == want
