#!/usr/bin/env python3
"""Generates fixtures/hf/llama-pth/: the llama-spm folder with its weights saved by
torch.save as pytorch_model.bin (the layout transformers wrote before safetensors), so
that safetensors2gguf's .bin path is tested against a real torch-written checkpoint.

Run with a python that has torch (not part of build/venv; its wheel is gigabytes):
    PYTHON_WITH_TORCH scripts/make_hf_pth_fixture.py [fixtures]
The tensors are those of fixtures/hf/llama-spm/model.safetensors, read with the
safetensors package (bf16 kept), in the same order; config and tokenizer files are
copied unchanged. Prints the MANIFEST rows for the new files."""
import hashlib
import os
import shutil
import sys

import torch
from safetensors.torch import load_file

root = sys.argv[1] if len(sys.argv) > 1 else "fixtures"
src = os.path.join(root, "hf", "llama-spm")
dst = os.path.join(root, "hf", "llama-pth")
os.makedirs(dst, exist_ok=True)
state = load_file(os.path.join(src, "model.safetensors"))
torch.save(dict(state), os.path.join(dst, "pytorch_model.bin"))
for name in sorted(os.listdir(src)):
    if not name.endswith(".safetensors"):
        shutil.copy(os.path.join(src, name), os.path.join(dst, name))
for name in sorted(os.listdir(dst)):
    path = os.path.join(dst, name)
    digest = hashlib.sha256(open(path, "rb").read()).hexdigest()
    producer = "torch.save" if name.endswith(".bin") else "copy of hf/llama-spm"
    print(f"hf/llama-pth/{name}\t{producer}\ttorch={torch.__version__}\t{digest}")
