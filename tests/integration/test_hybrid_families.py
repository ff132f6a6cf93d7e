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

MODELS = ["qwen35", "qwen35moe"]


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


# ---- the forward pass ----

# transformers' own float32 logits move this far from its float64 ones (of the largest
# logit): 6.0e-6 (qwen35), 4.6e-6 (qwen35moe); ours 7.9e-6 and 3.2e-6 at most, from
# transformers' float32 7.6e-6 and 6.6e-6: both bounds hold with float32's own noise.
@pytest.mark.parametrize("source", ["hf", "f32", "bf16"])
@pytest.mark.parametrize("model", MODELS)
def test_forward_pass_equals_transformers(made, model, source, tmp_path):
    ref = np.load(INFER / f"{model}.npy")
    exact = np.load(INFER / f"{model}-f64.npy")
    assert ref.shape[0] >= 64
    path = HF / model if source == "hf" else made(model, source)
    out = tmp_path / "logits.f32"
    r = run(TBIN / "lc-infer", path, "@" + str(INFER / "tokens-long.txt"), out)
    assert r.returncode == 0, r.stderr
    ours = np.fromfile(out, dtype=np.float32).reshape(ref.shape)
    assert np.abs(ours - exact).max() / np.abs(exact).max() < 1e-5
    assert np.abs(ours - ref).max() / np.abs(ref).max() < 1e-5


# ---- model-verify ----

@pytest.mark.parametrize("outtype", ["bf16", "q8_0"])
@pytest.mark.parametrize("model", MODELS)
def test_model_verify_passes_intact(made, model, outtype):
    rc, j, err = verify(HF / model, made(model, outtype))
    assert rc == 0, (err, j and j["why"])
    assert j["verdict"] == "pass" and j["tensors"]["outside"] == 0


def test_model_verify_passes_the_way_back(made, tmp_path):
    back = tmp_path / "back.safetensors"
    assert run(BIN / "gguf2safetensors", "-q", made("qwen35", "f16"), back).returncode == 0
    rc, j, err = verify(made("qwen35", "f16"), back)
    assert rc == 0, (err, j and j["why"])


# The recurrent layer 3's tensors whose value heads move (2 key heads, 4 value heads).
VHEADS = ["blk.3.attn_qkv.weight", "blk.3.attn_gate.weight", "blk.3.ssm_beta.weight",
          "blk.3.ssm_alpha.weight", "blk.3.ssm_a", "blk.3.ssm_dt.bias",
          "blk.3.ssm_conv1d.weight", "blk.3.ssm_out.weight"]


def untile(name, d):
    """d (GGUF's tiled value heads of tensor `name`) back in transformers' grouped order:
    what a converter that skipped the reorder writes."""
    nk, r, dk, dv = 2, 2, 8, 8
    if name.endswith(("attn_qkv.weight", "ssm_conv1d.weight")):
        qk, v = d[:2 * nk * dk], d[2 * nk * dk:]
        v = v.reshape(r, nk, dv, -1).transpose(1, 0, 2, 3).reshape(v.shape)
        return np.concatenate([qk, v])
    if name.endswith("ssm_out.weight"):
        return d.reshape(-1, r, nk, dv).transpose(0, 2, 1, 3).reshape(d.shape)
    unit = dv if name.endswith("attn_gate.weight") else 1
    return d.reshape(r, nk, unit, -1).transpose(1, 0, 2, 3).reshape(d.shape)


def plant_vheads(g):
    for name in VHEADS:
        t = g.tensor(name)
        t[1] = untile(name, t[1].copy())


def plant_a_log(g):
    t = g.tensor("blk.3.ssm_a")
    t[1] = np.log(-t[1]).astype(t[1].dtype)       # A_log as transformers stores it


def plant_kind(arch):
    def plant(g):
        f = g.field(f"{arch}.attention.recurrent_layers")
        v = list(f[1])
        v[3] = False
        f[1] = v
    return plant


# Both hybrid fixtures have the same recurrent layer 3 (2 key heads, 4 value heads of 8):
# each defect is planted in the dense model and in the MoE one.
HYBRID_DEFECTS = {}
for _m in MODELS:
    HYBRID_DEFECTS.update({
        f"{_m}-v_heads_not_reordered": (_m, "f32", plant_vheads, lambda j: (
            set(failing(j)) == set(VHEADS)),
            "blk.3."),
        f"{_m}-a_log_without_neg_exp": (_m, "bf16", plant_a_log, lambda j: (
            set(failing(j)) == {"blk.3.ssm_a"}), "blk.3.ssm_a"),
        f"{_m}-recurrent_layer_marked_full": (_m, "bf16", plant_kind(_m), lambda j, m=_m: (
            diffs(j) == [f"{m}.attention.recurrent_layers[3]"]),
            f"{_m}.attention.recurrent_layers[3]"),
    })


@pytest.mark.parametrize("defect", list(HYBRID_DEFECTS))
def test_hybrid_defect_is_caught_and_located(made, tmp_path, defect):
    model, outtype, plant, check, named = HYBRID_DEFECTS[defect]
    g = Gguf(made(model, outtype))
    plant(g)
    bad = g.write(tmp_path / f"{defect}.gguf")
    rc, j, err = verify(HF / model, bad)
    assert rc == 1, err
    assert j["verdict"] == "fail" and named in j["why"], j["why"]
    assert check(j), json.dumps({k: j[k] for k in ("why", "metadata")}, indent=1)


# ---- bad input ----

def edit_config(d, **kw):
    cfg = json.loads((d / "config.json").read_text())
    cfg.update(kw)
    (d / "config.json").write_text(json.dumps(cfg))
    return cfg


@pytest.mark.parametrize("model", MODELS)
def test_layer_list_of_the_wrong_length(tmp_path, model):
    d = folder_copy(model, tmp_path)
    cfg = json.loads((d / "config.json").read_text())
    n = cfg["num_hidden_layers"]
    edit_config(d, layer_types=cfg["layer_types"][:n - 1])
    line = refused(d, f"layer_types has {n - 1} entries but num_hidden_layers is {n}",
                   tmp_path, model)
    assert "config.json" in line


@pytest.mark.parametrize("model", MODELS)
def test_recurrent_layer_without_its_state_tensors(tmp_path, model):
    d = folder_copy(model, tmp_path)
    f = d / "model.safetensors"
    gone = ("model.layers.3.linear_attn.A_log", "model.layers.3.linear_attn.conv1d.weight")
    rewrite_safetensors(f, f, lambda t: {k: v for k, v in t.items() if k not in gone})
    line = refused(d, " has no model.layers.3.linear_attn.A_log (GGUF blk.3.ssm_a), "
                   "which a recurrent layer needs", tmp_path, model)
    assert line.startswith(f"safetensors2gguf: {d}: layer 3 of "), line


@pytest.mark.parametrize("model", MODELS)
def test_state_sizes_that_do_not_divide(tmp_path, model):
    d = folder_copy(model, tmp_path)
    edit_config(d, linear_num_value_heads=3)
    line = refused(d, "are not a multiple of the key heads", tmp_path, model)
    assert "linear_num_value_heads 3" in line and "config.json" in line


def test_attention_layer_marked_recurrent(tmp_path):
    """The list and the tensors disagree the other way: a full-attention layer named
    linear_attention lacks the recurrent tensors."""
    d = folder_copy("qwen35", tmp_path)
    cfg = json.loads((d / "config.json").read_text())
    kinds = cfg["layer_types"]
    kinds[2] = "linear_attention"
    edit_config(d, layer_types=kinds)
    refused(d, "layer 2 of 7 has no model.layers.2.linear_attn.", tmp_path, "qwen35")


# ---- the Hub's layout: the multimodal class, its text model converted ----

def multimodal_folder(tmp_path):
    """fixtures/hf/qwen35 as the Hub ships Qwen3.5: Qwen3_5ForConditionalGeneration, the
    text model's config under text_config and its tensors under model.language_model.,
    beside two vision tensors (model.visual.*). The pinned converter writes
    fixtures/hf-ref/qwen35-*.gguf from it byte for byte (checked by hand: the text model
    is what it converts)."""
    d = tmp_path / "qwen35"             # general.name comes from the folder's name
    d.mkdir()
    for f in (HF / "qwen35").iterdir():
        if f.name not in ("model.safetensors", "config.json"):
            (d / f.name).write_bytes(f.read_bytes())
    cfg = json.loads((HF / "qwen35" / "config.json").read_text())
    text = {k: v for k, v in cfg.items() if k not in ("architectures", "transformers_version")}
    text["model_type"] = "qwen3_5_text"
    (d / "config.json").write_text(json.dumps({
        "architectures": ["Qwen3_5ForConditionalGeneration"], "model_type": "qwen3_5",
        "tie_word_embeddings": cfg["tie_word_embeddings"], "text_config": text,
        "vision_config": {"depth": 1, "hidden_size": 16, "model_type": "qwen3_5_vision"}}))

    def change(t):
        out = {(k.replace("model.", "model.language_model.", 1) if k.startswith("model.")
                else k): v for k, v in t.items()}
        out["model.visual.patch_embed.proj.weight"] = ("BF16", [16, 3, 2, 4, 4], bytes(2 * 1536))
        out["model.visual.merger.linear_fc2.weight"] = ("BF16", [32, 64], bytes(2 * 2048))
        return out
    rewrite_safetensors(HF / "qwen35" / "model.safetensors", d / "model.safetensors", change)
    return d


@pytest.mark.parametrize("outtype", ["bf16", "q8_0"])
def test_multimodal_checkpoint_converts_its_text_model(tmp_path, outtype):
    d = multimodal_folder(tmp_path)
    out = convert(d, outtype, tmp_path / "out.gguf", "qwen35")
    assert out.read_bytes() == (REF / f"qwen35-{outtype}.gguf").read_bytes()
    rc, j, err = verify(d, out)
    assert rc == 0 and j["verdict"] == "pass", (err, j and j["why"])


def test_multimodal_checkpoint_runs_its_text_model(tmp_path):
    d = multimodal_folder(tmp_path)
    ref = np.load(INFER / "qwen35.npy")
    out = tmp_path / "logits.f32"
    r = run(TBIN / "lc-infer", d, "@" + str(INFER / "tokens-long.txt"), out)
    assert r.returncode == 0, r.stderr
    ours = np.fromfile(out, dtype=np.float32).reshape(ref.shape)
    assert np.abs(ours - ref).max() / np.abs(ref).max() < 1e-5


def test_fused_experts_give_the_same_file(tmp_path):
    """qwen35moe's experts in transformers 5's fused layout (experts.gate_up_proj
    [expert, 2 ff, embd], experts.down_proj), the MTP block's too: the same file (the
    pinned converter writes fixtures/hf-ref/qwen35moe-bf16.gguf from it byte for byte,
    checked by hand)."""
    d = tmp_path / "qwen35moe"
    d.mkdir()
    for f in (HF / "qwen35moe").iterdir():
        if f.name != "model.safetensors":
            (d / f.name).write_bytes(f.read_bytes())
    E = json.loads((HF / "qwen35moe" / "config.json").read_text())["num_experts"]

    def change(t):
        out = {k: v for k, v in t.items() if ".mlp.experts." not in k}
        for p in sorted({k.split("mlp.experts.")[0] for k in t if ".mlp.experts." in k}):
            one = {n: [t[f"{p}mlp.experts.{e}.{n}.weight"] for e in range(E)]
                   for n in ("gate_proj", "up_proj", "down_proj")}
            dt, (rows, cols) = one["gate_proj"][0][0], one["gate_proj"][0][1]
            out[p + "mlp.experts.gate_up_proj"] = (dt, [E, 2 * rows, cols], b"".join(
                g[2] + u[2] for g, u in zip(one["gate_proj"], one["up_proj"])))
            down = one["down_proj"][0][1]
            out[p + "mlp.experts.down_proj"] = (dt, [E] + down, b"".join(
                x[2] for x in one["down_proj"]))
        return out
    rewrite_safetensors(HF / "qwen35moe" / "model.safetensors", d / "model.safetensors", change)
    out = convert(d, "bf16", tmp_path / "out.gguf", "qwen35moe")
    assert out.read_bytes() == (REF / "qwen35moe-bf16.gguf").read_bytes()


def test_gguf_layer_list_of_the_wrong_length(made, tmp_path):
    """The same check on a GGUF: the way back names the key, exit 1, no OUT."""
    g = Gguf(made("qwen35", "bf16"))
    f = g.field("qwen35.attention.recurrent_layers")
    f[1] = list(f[1])[:6]
    bad = g.write(tmp_path / "bad.gguf")
    out = tmp_path / "back.safetensors"
    r = run(BIN / "gguf2safetensors", "-q", bad, out)
    assert r.returncode == 1, r.stderr
    line = r.stderr.strip()
    assert "\n" not in line and "qwen35.attention.recurrent_layers has 6 entries for 7 layers" \
        in line, line
    assert not out.exists()


@pytest.mark.parametrize("model", MODELS)
def test_our_gguf_vs_llama_cpp_gguf_is_exact(made, model):
    """Two GGUFs of one model, stacks of experts on both sides (their pieces told apart)."""
    for outtype in ("bf16", "q8_0"):
        rc, j, err = verify(REF / f"{model}-{outtype}.gguf", made(model, outtype))
        assert rc == 0, (err, j and j["why"])
        assert j["class"] == "exact" and j["tensors"]["outside"] == 0
