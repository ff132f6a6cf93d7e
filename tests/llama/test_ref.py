"""Sanity of the judge itself, always run: llama.cpp loads every reference GGUF
(fixtures/hf-ref/, written by llama.cpp's own convert_hf_to_gguf.py) and computes finite
logits of the right shape, so a failure in test_ours.py is about our files, not the judge.
Every model here, the families our converter does not write yet (REF_ONLY) included.

And the fixtures agree with their references: llama.cpp's logits on each reference over
fixtures/infer/tokens.txt equal transformers' (fixtures/infer/<model>.npy, float32,
eager attention), so the HF folder, the reference GGUF and the expected logits tell one
story (MoE routing, sliding windows, softcaps and RoPE factors included). llama.cpp runs
as in test_infer.py (float32 KV cache, no flash attention, one thread). Tolerance,
max|llama.cpp - transformers| / max|transformers|: the f32 reference holds the folder's
own values (bf16 or f16 widened) except qwen2's f32, so what is left is float32 order;
the others add llama.cpp's rounding of activations to the weight type and, where the
folder's values do not fit the type (qwen2's f32 -> f16/bf16, every Q8_0), the rounded
weights. Measured maxima over the nine models: f32 1.1e-6 (gemma3 aside, see TOL_MODEL),
f16 2.2e-3 (qwen2), bf16 1.4e-2 (llama-bpe), Q8_0 6.4e-2 (gemma3); allowed 2-10x that.
What these catch: gemma3's window off by one moves its logits by 0.9, phi3's short
factors in place of the long ones by 0.67."""
import json

import gguf
import numpy as np
import pytest

from conftest import HF, OUTTYPES, REF_MODELS, llama, logits, ref_path, tokenize
from test_infer import INFER, TOKENS, llama_cpp_logits, rel_err, tokens_of

ARCH = {"qwen2": "qwen2", "qwen3": "qwen3", "qwen3moe": "qwen3moe", "gemma3": "gemma3",
        "phi3": "phi3", "qwen35": "qwen35",
        "qwen35moe": "qwen35moe", "gemma4": "gemma4",
        "gemma4moe": "gemma4"}     # the rest, mixtral included, are "llama"
TOL = {"f32": 1e-5, "f16": 6e-3, "bf16": 4e-2, "q8_0": 1.5e-1}
# llama.cpp's CPU GELU (gemma3's FFN) rounds its input to f16 and reads the result from an
# f16 table (ggml-cpu/vec.h, GGML_GELU_FP16): 9.4e-4 on the f32 reference; with that
# rounding emulated in transformers the difference falls to 3.3e-5.
TOL_MODEL = {("gemma3", "f32"): 3e-3}
# qwen35 and qwen35moe over their 72 tokens amplify llama.cpp's activation rounding
# (tests/llama/test_infer.py): measured 6.5e-6 / 6.3e-6 (f32), 7.6e-3 / 4.6e-3 (f16),
# 8.7e-2 / 2.3e-2 (bf16), 0.31 / 0.17 (Q8_0).
TOL_MODEL.update({("qwen35", "f16"): 1.5e-2, ("qwen35", "bf16"): 1.5e-1,
                  ("qwen35", "q8_0"): 5e-1, ("qwen35moe", "q8_0"): 3e-1})
# gemma4: GELU as gemma3's, and five layers whose outputs are rescaled by layer_scalar and
# the per-layer inputs, over the 72 tokens of tokens-long.txt (its sliding window is 8):
# measured 2.1e-3 (f32), 7.6e-3 (f16), 0.11 (bf16), 0.34 (Q8_0). gemma4moe (the same and
# 8 experts top-2): 1.8e-3, 6.9e-3, 0.19, 0.29.
for _m in ("gemma4", "gemma4moe"):
    TOL_MODEL.update({(_m, "f32"): 5e-3, (_m, "f16"): 2e-2, (_m, "bf16"): 2.5e-1,
                      (_m, "q8_0"): 5e-1})


@pytest.mark.parametrize("outtype", OUTTYPES)
@pytest.mark.parametrize("model", REF_MODELS)
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
@pytest.mark.parametrize("model", REF_MODELS)
def test_reference_is_what_the_name_says(model, outtype):
    """The fixture names are right: architecture and the weights' type match the file name."""
    r = gguf.GGUFReader(ref_path(model, outtype))
    arch = r.fields["general.architecture"].contents()
    assert arch == ARCH.get(model, "llama")
    want = {"f32": gguf.GGMLQuantizationType.F32, "f16": gguf.GGMLQuantizationType.F16,
            "bf16": gguf.GGMLQuantizationType.BF16,
            "q8_0": gguf.GGMLQuantizationType.Q8_0}[outtype]
    emb = next(t for t in r.tensors if t.name == "token_embd.weight")
    assert emb.tensor_type == want


@pytest.mark.parametrize("outtype", OUTTYPES)
@pytest.mark.parametrize("model", REF_MODELS)
def test_reference_equals_transformers(model, outtype):
    want = np.load(INFER / f"{model}.npy")
    got = llama_cpp_logits(ref_path(model, outtype), tokens_of(model))
    err = rel_err(got, want)
    tol = TOL_MODEL.get((model, outtype), TOL[outtype])
    print(f"{model}-{outtype}: {err:.3g}")
    assert err <= tol, f"{model}-{outtype}: {err:.3g} > {tol:g}"
