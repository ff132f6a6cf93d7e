#!/usr/bin/env python3
"""Generates fixtures/hf/llama-tf: a tiny llama whose weights transformers itself made.

The other fixtures/hf folders get their weights from numpy through safetensors'
serializer (see make_hf_fixtures.py: that venv has no torch). This one is the whole
real path: transformers builds LlamaForCausalLM with torch (fixed seed), the weights
are spread so that norms and projections are not their near-trivial initial values,
the model is cast to bfloat16 and written by save_pretrained, which shards it (a small
max_shard_size) and writes its own model.safetensors.index.json, config.json (with
transformers 4.56+'s "dtype" key) and generation_config.json. The tokenizer files are
copies of fixtures/hf/llama-spm's (SentencePiece, made by make_hf_fixtures.py).

Run with the venv that runs llama.cpp's converter (torch + transformers, pinned in
scripts/llama/ref-requirements.txt; made by scripts/llama/make-ref-venv.sh):
    build/ref-venv/bin/python scripts/make_hf_tf_fixture.py [fixtures]
It prints the fixtures/MANIFEST.tsv rows of the folder."""
import hashlib
import os
import shutil
import sys

import safetensors
import torch
import transformers
from transformers import LlamaConfig, LlamaForCausalLM

TOKENIZER_FILES = ("tokenizer.model", "tokenizer_config.json", "special_tokens_map.json")


def make(out, spm_dir):
    cfg = LlamaConfig(vocab_size=400, hidden_size=64, intermediate_size=160, num_hidden_layers=3,
                      num_attention_heads=8, num_key_value_heads=2, max_position_embeddings=256,
                      rope_theta=10000.0, rms_norm_eps=1e-6, bos_token_id=1, eos_token_id=2,
                      tie_word_embeddings=False)
    torch.manual_seed(4242)
    model = LlamaForCausalLM(cfg)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.add_(torch.randn_like(p) * 0.1)          # 1 + noise
            else:
                p.copy_(torch.randn_like(p) * 0.1)
    model = model.to(torch.bfloat16)
    model.save_pretrained(out, safe_serialization=True, max_shard_size="120KB")
    for name in TOKENIZER_FILES:
        shutil.copy(os.path.join(spm_dir, name), out)


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "fixtures"
    out = os.path.join(root, "hf", "llama-tf")
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    make(out, os.path.join(root, "hf", "llama-spm"))
    made = (f"torch={torch.__version__.split('+')[0]};transformers={transformers.__version__};"
            f"safetensors={safetensors.__version__}")
    for fn in sorted(os.listdir(out)):
        with open(os.path.join(out, fn), "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()
        producer, version = ("copy of hf/llama-spm", made) if fn in TOKENIZER_FILES else \
                            ("transformers save_pretrained", made)
        print(f"hf/llama-tf/{fn}\t{producer}\t{version}\t{digest}")


if __name__ == "__main__":
    main()
