"""The hybrid families of issue 21 (qwen35: Gated-DeltaNet recurrent layers beside gated
full-attention ones, a multi-token prediction block) through every path, against the
real producers, as test_families.py does for issue 18's:

  - safetensors2gguf writes what llama.cpp's pinned convert_hf_to_gguf.py wrote from the
    same transformers-5 folder, byte for byte (value heads reordered grouped -> tiled,
    A_log -> -exp(A_log), conv1d squeezed, norms + 1 but the gated one, mtp.* as the
    layer after the model's own);
  - the way back (gguf2safetensors --dtype bf16) gives the folder's tensors back byte
    for byte;
  - infer/'s forward pass equals transformers' float32 logits over the 72 tokens of
    fixtures/infer/tokens-long.txt (the recurrent state and transformers' 64-token chunks
    both matter) within 1e-5 of the largest logit;
  - model-verify passes intact conversions and locates the planted defects of the issue;
  - bad input: one line naming the file and key or tensor, exit 1, no OUT."""
import json
import os
from pathlib import Path

import numpy as np
import pytest

from test_families import (BIN, HF, INFER, OUTTYPES, REF, TBIN, Gguf, convert, failing,
                           diffs, folder_copy, refused, rewrite_safetensors, run, safetensors,
                           verify)

MODELS = ["qwen35"]
PRE = {"qwen35": "qwen35"}


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    d = tmp_path_factory.mktemp("hybrid")
    cache = {}

    def get(model, outtype):
        if (model, outtype) not in cache:
            cache[(model, outtype)] = convert(HF / model, outtype, d / f"{model}-{outtype}.gguf")
        return cache[(model, outtype)]
    return get


# ---- the converter's bytes ----

@pytest.mark.parametrize("outtype", OUTTYPES)
@pytest.mark.parametrize("model", MODELS)
def test_byte_identical_to_convert_hf_to_gguf(made, model, outtype):
    assert made(model, outtype).read_bytes() == (REF / f"{model}-{outtype}.gguf").read_bytes()


# ---- the way back ----

@pytest.mark.parametrize("outtype", ["bf16", "f32"])
@pytest.mark.parametrize("model", MODELS)
def test_round_trip_gives_the_folder_back(made, model, outtype, tmp_path):
    back = tmp_path / "back.safetensors"
    r = run(BIN / "gguf2safetensors", "-q", "--dtype", "bf16", made(model, outtype), back)
    assert r.returncode == 0, r.stderr
    src = {}
    for f in sorted((HF / model).glob("*.safetensors")):
        src.update(safetensors(f))
    got = safetensors(back)
    assert set(got) == set(src)
    assert [k for k in src if got[k] != src[k]] == []
