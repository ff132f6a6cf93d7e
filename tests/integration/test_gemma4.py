"""gemma4 and gemma4moe from transformers' folders (issue 21), against the pinned
convert_hf_to_gguf.py:

  - safetensors2gguf writes its file byte for byte for every outtype: the per-layer keys
    (KV heads, sliding layers, the sliding layers' head and RoPE sizes, shared KV
    layers, per-layer input width), rope_freqs for the full layers' proportional RoPE,
    the "gemma4" vocabulary from tokenizer.json, the per-layer embeddings, the router's
    scales;
  - bad input: a per-layer list of the wrong length, a missing required key: one line
    naming config.json and the key, exit 1, no OUT."""
import json

import pytest

from test_families import HF, OUTTYPES, REF, convert, folder_copy, refused

MODELS = ["gemma4", "gemma4moe"]


@pytest.mark.parametrize("outtype", OUTTYPES)
@pytest.mark.parametrize("model", MODELS)
def test_byte_identical_to_convert_hf_to_gguf(tmp_path, model, outtype):
    out = convert(HF / model, outtype, tmp_path / f"{model}-{outtype}.gguf")
    assert out.read_bytes() == (REF / f"{model}-{outtype}.gguf").read_bytes()


def edit_config(d, drop=(), **kw):
    cfg = json.loads((d / "config.json").read_text())
    cfg.update(kw)
    for k in drop:
        del cfg[k]
    (d / "config.json").write_text(json.dumps(cfg))
    return cfg


def test_layer_types_of_the_wrong_length(tmp_path):
    d = folder_copy("gemma4", tmp_path)
    cfg = json.loads((d / "config.json").read_text())
    edit_config(d, layer_types=cfg["layer_types"][:4])
    line = refused(d, "layer_types has 4 entries but num_hidden_layers is 5", tmp_path, "gemma4")
    assert "config.json" in line


def test_missing_required_key(tmp_path):
    d = folder_copy("gemma4", tmp_path)
    edit_config(d, drop=["num_kv_shared_layers"])
    line = refused(d, "config.json has no num_kv_shared_layers", tmp_path, "gemma4")
    assert "gemma4/config.json" in line


def test_extra_special_tokens_read_as_additional(tmp_path):
    """transformers 5 names the list extra_special_tokens: the same control tokens."""
    d = folder_copy("gemma4", tmp_path)
    tc = json.loads((d / "tokenizer_config.json").read_text())
    tc["extra_special_tokens"] = tc.pop("additional_special_tokens")
    (d / "tokenizer_config.json").write_text(json.dumps(tc))
    out = convert(d, "f16", tmp_path / "out.gguf", model="gemma4")
    assert out.read_bytes() == (REF / "gemma4-f16.gguf").read_bytes()


def test_global_keys_stand_for_per_layer_config(tmp_path):
    """global_head_dim and num_global_key_value_heads say what per_layer_config's full
    layers say (the converter reads them first): the same file."""
    d = folder_copy("gemma4", tmp_path)
    edit_config(d, drop=["per_layer_config"], global_head_dim=32, num_global_key_value_heads=1)
    out = convert(d, "bf16", tmp_path / "out.gguf", model="gemma4")
    assert out.read_bytes() == (REF / "gemma4-bf16.gguf").read_bytes()
