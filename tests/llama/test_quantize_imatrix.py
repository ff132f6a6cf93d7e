"""llama.cpp's own quantizer judges gguf-quantize's i-quant and ternary file types and its
importance matrices (issue 20).

The oracle is llama_model_quantize of the pinned llama.cpp (tests/llama/test_quantize.py
drives it), one thread, on the same inputs:
  - every IQ/TQ TYPE gguf-quantize offers without an importance matrix (IQ4_NL, IQ4_XS,
    TQ1_0, TQ2_0) gives llama.cpp's bytes, and llama.cpp runs the file;
  - every IQ/TQ TYPE's plan (gguf-quantize --dry-run --json) is llama.cpp's dry run's.
"""
import json

import numpy as np
import pytest

from conftest import llama
from test_quantize import (FTYPES, INPUTS, OFFERED, inputs, llama_plan, ours,  # noqa: F401
                           same_bytes)

IQ_FTYPES = {"IQ2_XXS": 19, "IQ2_XS": 20, "Q2_K_S": 21, "IQ3_XS": 22, "IQ3_XXS": 23,
             "IQ1_S": 24, "IQ4_NL": 25, "IQ3_S": 26, "IQ3_M": 27, "IQ2_S": 28, "IQ2_M": 29,
             "IQ4_XS": 30, "IQ1_M": 31, "TQ1_0": 36, "TQ2_0": 37}
FTYPES.update(IQ_FTYPES)
# Written without an importance matrix by llama-quantize (it needs none for them).
PLAIN = ["IQ4_NL", "IQ4_XS", "TQ1_0", "TQ2_0", "IQ3_S", "IQ3_M", "IQ3_XS"]


def runs(path):
    m = llama(path)
    m.reset()
    m.eval([1, 2, 3, 4, 5])
    scores = np.array(m.scores[:m.n_tokens], dtype=np.float32)
    assert scores.shape[0] == 5 and np.isfinite(scores).all()


@pytest.mark.parametrize("model", INPUTS)
@pytest.mark.parametrize("ftype", PLAIN)
def test_iq_file_is_llama_quantize_s(inputs, tmp_path, model, ftype):
    if ftype not in OFFERED:
        pytest.skip(f"{ftype}: its kernels are not in this branch yet")
    runs(same_bytes(tmp_path, inputs[model], ftype))


@pytest.mark.parametrize("model", INPUTS)
@pytest.mark.parametrize("ftype", list(IQ_FTYPES))
def test_iq_plan_is_llama_quantize_s(inputs, model, ftype):
    want = llama_plan(inputs[model], ftype)
    r = ours(["--dry-run", "--json", inputs[model], ftype])
    got = {t["name"]: t["to"] for t in json.loads(r.stdout)["tensors"]}
    assert list(got) == list(want), "tensor order"
    assert got == want
