"""gemma4's forward pass (issue 21) on fixtures/hf/gemma4 (5 layers: sliding and full of
different head sizes and KV heads, full layers whose keys are their values, the last 2
reading earlier layers' keys and values, per-layer inputs, proportional RoPE) and
fixtures/hf/gemma4moe (experts beside the dense FFN, router and per-expert scales), as
the folder and as the pinned converter's GGUFs (safetensors2gguf writes the same bytes,
tests/integration/test_gemma4.py):

  - infer/'s logits equal transformers 5.24's float32 ones over the 72 tokens of
    fixtures/infer/tokens-long.txt (the sliding window is 8) within 1e-5 of the largest
    logit;
  - model-verify runs gemma4: f16 / bf16 / q8_0 and gguf-quantize's Q4_K_M pass against
    the folder; a per-layer tensor swapped between layers, a norm stored with gemma3's
    + 1, a layer's kind flipped in the sliding pattern fail, named;
  - bad input (a layer without its keys, a pattern of the wrong length, a shared layer
    with no earlier layer of its kind, a per-layer width the tensors do not have): one
    line naming the key or tensor, no output."""
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

from test_verify import Gguf, diffs, failing, verify

ROOT = Path(__file__).resolve().parents[2]
HF = ROOT / "fixtures" / "hf"
REF = ROOT / "fixtures" / "hf-ref"
INFER = ROOT / "fixtures" / "infer"
BIN = Path(os.environ.get("LC_BIN", ROOT / "build" / "bin"))
TBIN = Path(os.environ.get("LC_TEST_BIN", ROOT / "build" / "test-bin"))
TOKENS = INFER / "tokens-long.txt"
MODELS = ["gemma4", "gemma4moe"]


def run(*args):
    return subprocess.run([str(a) for a in args], capture_output=True, text=True)


# ---- the forward pass ----

# transformers' own float32 logits are 8.0e-6 (gemma4) and 5.2e-6 (gemma4moe) of the
# largest logit from its float64 ones; ours 1.3e-5 and 6.6e-6 from float64, 9.4e-6 and
# 8.6e-6 from transformers' float32 (the portable tile: 9.6e-6, 6.1e-6). The fixture's
# weights are bf16: folder, f32 and bf16 GGUF are the same model.
@pytest.mark.parametrize("source", ["hf", "f32", "bf16"])
@pytest.mark.parametrize("model", MODELS)
def test_forward_pass_equals_transformers(model, source, tmp_path):
    ref = np.load(INFER / f"{model}.npy")
    assert ref.shape[0] >= 64
    path = HF / model if source == "hf" else REF / f"{model}-{source}.gguf"
    out = tmp_path / "logits.f32"
    r = run(TBIN / "lc-infer", path, "@" + str(TOKENS), out)
    assert r.returncode == 0, r.stderr
    ours = np.fromfile(out, dtype="<f4").reshape(ref.shape)
    rel = np.abs(ours - ref).max() / np.abs(ref).max()
    assert rel < 1e-5, rel


def test_same_bits_for_any_thread_count(tmp_path):
    outs = []
    for t in ("1", "3"):
        out = tmp_path / f"logits-{t}.f32"
        r = run(TBIN / "lc-infer", "-t", t, REF / "gemma4moe-f32.gguf", "@" + str(TOKENS), out)
        assert r.returncode == 0, r.stderr
        outs.append(out.read_bytes())
    assert outs[0] == outs[1]


# ---- model-verify ----

@pytest.mark.parametrize("outtype", ["f16", "bf16", "q8_0"])
@pytest.mark.parametrize("model", MODELS)
def test_model_verify_passes_intact(model, outtype):
    """The folder against the converter's file, over the bundled text (gemma4's tokenizer)."""
    rc, j, err = verify(HF / model, REF / f"{model}-{outtype}.gguf")
    assert rc == 0, (err, j and j["why"])
    assert j["verdict"] == "pass" and j["tensors"]["outside"] == 0


@pytest.mark.parametrize("model", MODELS)
def test_model_verify_passes_a_k_quant(model, tmp_path):
    q = tmp_path / "q4_k_m.gguf"
    r = run(BIN / "gguf-quantize", "-q", REF / f"{model}-f32.gguf", q, "Q4_K_M")
    assert r.returncode == 0, r.stderr
    rc, j, err = verify(REF / f"{model}-f32.gguf", q)
    assert rc == 0, (err, j and j["why"])
    assert j["verdict"] == "pass" and j["tensors"]["outside"] == 0


def plant_swap(g):
    """The per-layer input projections of layers 0 and 1 swapped."""
    a, b = g.tensor("blk.0.proj.weight"), g.tensor("blk.1.proj.weight")
    a[1], b[1] = b[1], a[1]


def plant_shift(g):
    """A norm written with gemma3's + 1 (gemma4's RMSNorm multiplies by w itself)."""
    t = g.tensor("blk.2.post_attention_norm.weight")
    t[1] = (t[1] + 1).astype(t[1].dtype)


def plant_kind(g):
    """Layer 2 (full) marked sliding."""
    f = g.field("gemma4.attention.sliding_window_pattern")
    v = list(f[1])
    v[2] = True
    f[1] = v


G4_DEFECTS = {
    "per_layer_tensor_swapped": (plant_swap, lambda j: (
        set(failing(j)) == {"blk.0.proj.weight", "blk.1.proj.weight"}
        and "layer 0's tensor" in failing(j)["blk.1.proj.weight"]["diagnosis"]),
        "blk.1.proj.weight"),
    "norm_with_a_shift": (plant_shift, lambda j: (
        set(failing(j)) == {"blk.2.post_attention_norm.weight"}),
        "blk.2.post_attention_norm.weight"),
    "full_layer_marked_sliding": (plant_kind, lambda j: (
        diffs(j) == ["gemma4.attention.sliding_window_pattern[2]"]),
        "gemma4.attention.sliding_window_pattern[2]"),
}


@pytest.mark.parametrize("defect", list(G4_DEFECTS))
def test_gemma4_defect_is_caught_and_located(defect, tmp_path):
    plant, check, named = G4_DEFECTS[defect]
    g = Gguf(REF / "gemma4-bf16.gguf")
    plant(g)
    rc, j, err = verify(HF / "gemma4", g.write(tmp_path / f"{defect}.gguf"), "--tokens",
                        TOKENS.read_text().strip())
    assert rc == 1, err
    assert j["verdict"] == "fail" and named in j["why"], j["why"]
    assert check(j), j["why"]


# ---- bad input: one line naming the key or the tensor ----

def drop_k(g):
    """Layer 1 (before the shared layers) without its keys."""
    g.tensors = [t for t in g.tensors if t[0] != "blk.1.attn_k.weight"]


def short_pattern(g):
    f = g.field("gemma4.attention.sliding_window_pattern")
    f[1] = list(f[1])[:4]


def all_shared(g):
    """Every layer past the first reads shared keys: layer 2, full, has no earlier full
    layer to read them from."""
    g.field("gemma4.attention.shared_kv_layers")[1] = 4


def wrong_ple(g):
    g.field("gemma4.embedding_length_per_layer_input")[1] = 8


BAD = {
    "layer_without_its_keys": (drop_k, "no blk.1.attn_k.weight"),
    "pattern_of_the_wrong_length": (short_pattern, "gemma4.attention.sliding_window_pattern"),
    "shared_without_a_keeper": (all_shared, "layer 2 shares the keys of an earlier full"),
    "per_layer_width_not_the_tensors": (wrong_ple, "per_layer_token_embd.weight"),
}


@pytest.mark.parametrize("bad", list(BAD))
def test_bad_gemma4_is_refused_in_one_line(bad, tmp_path):
    plant, named = BAD[bad]
    g = Gguf(REF / "gemma4-f32.gguf")
    plant(g)
    path = g.write(tmp_path / f"{bad}.gguf")
    r = run(TBIN / "lc-infer", path, "1,2,3", tmp_path / "out.f32")
    lines = r.stderr.strip().splitlines()
    assert r.returncode != 0 and len(lines) == 1 and named in lines[0], r.stderr
    assert not (tmp_path / "out.f32").exists()
