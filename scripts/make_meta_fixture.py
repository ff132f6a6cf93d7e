#!/usr/bin/env python3
"""Generates fixtures/meta/tiny/: the llama-spm model in Meta's original release layout
(params.json + consolidated.00.pth + tokenizer.model), so that safetensors2gguf's Meta
path is tested against a real torch-written checkpoint and against the HF path.

Run with a python that has torch (not part of build/venv; its wheel is gigabytes):
    PYTHON_WITH_TORCH scripts/make_meta_fixture.py [fixtures]
The tensors are fixtures/hf/llama-spm/model.safetensors' (bf16 kept) under Meta's
names, in the order Meta's Transformer.state_dict() lists them (tok_embeddings, the
layers, norm, output, rope.freqs). q/k rows go back from HF's rotate-half order to
Meta's interleaved pairs (the inverse of transformers' conversion script's permute),
so our Meta -> GGUF output must equal our HF -> GGUF output of llama-spm. rope.freqs is
Meta's precomputed buffer (bf16 here, as in the Llama 2 checkpoints); converters drop it.
params.json carries llama-spm's config.json values under Meta's names, vocab_size -1
(taken from the embedding, as in Meta's files), and max_seq_len so the context length
matches. Prints the MANIFEST rows for the new files."""
import hashlib
import json
import os
import shutil
import sys

import torch
from safetensors.torch import load_file

root = sys.argv[1] if len(sys.argv) > 1 else "fixtures"
src = os.path.join(root, "hf", "llama-spm")
dst = os.path.join(root, "meta", "tiny")
os.makedirs(dst, exist_ok=True)
cfg = json.load(open(os.path.join(src, "config.json")))
hf = load_file(os.path.join(src, "model.safetensors"))
dim, heads, kv = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"]
head_dim = dim // heads


def unpermute(w, n_heads):
    """HF rows [h, 2, R/2] -> Meta rows [h, R/2, 2] (pairs interleaved)."""
    rows, cols = w.shape
    return w.view(n_heads, 2, rows // n_heads // 2, cols).transpose(1, 2).reshape(rows, cols)


state = {"tok_embeddings.weight": hf["model.embed_tokens.weight"]}
for n in range(cfg["num_hidden_layers"]):
    p = f"model.layers.{n}."
    state[f"layers.{n}.attention.wq.weight"] = unpermute(hf[p + "self_attn.q_proj.weight"], heads)
    state[f"layers.{n}.attention.wk.weight"] = unpermute(hf[p + "self_attn.k_proj.weight"], kv)
    state[f"layers.{n}.attention.wv.weight"] = hf[p + "self_attn.v_proj.weight"]
    state[f"layers.{n}.attention.wo.weight"] = hf[p + "self_attn.o_proj.weight"]
    state[f"layers.{n}.feed_forward.w1.weight"] = hf[p + "mlp.gate_proj.weight"]
    state[f"layers.{n}.feed_forward.w2.weight"] = hf[p + "mlp.down_proj.weight"]
    state[f"layers.{n}.feed_forward.w3.weight"] = hf[p + "mlp.up_proj.weight"]
    state[f"layers.{n}.attention_norm.weight"] = hf[p + "input_layernorm.weight"]
    state[f"layers.{n}.ffn_norm.weight"] = hf[p + "post_attention_layernorm.weight"]
state["norm.weight"] = hf["model.norm.weight"]
state["output.weight"] = hf["lm_head.weight"]
theta = cfg["rope_theta"]
state["rope.freqs"] = (1.0 / (theta ** (torch.arange(0, head_dim, 2).float() / head_dim))
                       ).to(torch.bfloat16)
torch.save({k: v.contiguous().clone() for k, v in state.items()},
           os.path.join(dst, "consolidated.00.pth"))

# Meta's FeedForward: int(2 * 4 * dim / 3) = 170, * 0.5 = 85, up to a multiple of 64 = 128
params = {"dim": dim, "multiple_of": 64, "ffn_dim_multiplier": 0.5, "n_heads": heads,
          "n_kv_heads": kv, "n_layers": cfg["num_hidden_layers"],
          "norm_eps": cfg["rms_norm_eps"], "rope_theta": theta, "vocab_size": -1,
          "max_seq_len": cfg["max_position_embeddings"]}
with open(os.path.join(dst, "params.json"), "w") as f:
    json.dump(params, f)
shutil.copy(os.path.join(src, "tokenizer.model"), os.path.join(dst, "tokenizer.model"))
for name in sorted(os.listdir(dst)):
    path = os.path.join(dst, name)
    digest = hashlib.sha256(open(path, "rb").read()).hexdigest()
    producer = {"consolidated.00.pth": "torch.save",
                "params.json": "scripts/make_meta_fixture.py json.dump"}.get(
                    name, "copy of hf/llama-spm")
    print(f"meta/tiny/{name}\t{producer}\ttorch={torch.__version__}\t{digest}")
