#!/usr/bin/env python3
"""Generates fixtures/infer/: transformers' logits for the HF fixture models, the
reference infer/'s forward pass is checked against (tests/integration/test_infer.py).

Run with the torch + transformers venv of scripts/llama/make-ref-venv.sh (torch 2.15.0
from PyPI, transformers 4.57.6 as scripts/llama/ref-requirements.txt pins):
    scripts/llama/make-ref-venv.sh
    build/ref-venv/bin/python scripts/make_infer_ref.py
and, for the families transformers 5 made (TF5_MODELS), with its venv
(scripts/hf/make-tf5-venv.sh):
    build/tf5-venv/bin/python scripts/make_infer_ref.py [NAME...]
Each run replaces the fixtures/MANIFEST.tsv rows of the files it wrote.

What it writes:
  infer/tokens.txt          the one token sequence every model runs (comma-separated ids,
                            all below the smallest fixture vocabulary, with repeats)
  infer/<model>.npy         float32 [n_tokens, vocab]: logits of every position, from
                            <Model>ForCausalLM loaded from fixtures/hf/<model> in float32
                            (bf16/f16 weights widened exactly), eager attention, one
                            forward over the whole sequence, positions 0..n-1
  infer/llama3-rope/config.json   llama-spm's config with rope_scaling llama3 (factor 8,
                            low/high freq factors 1/4, original context 64: with head_dim 16
                            and theta 5e5 the pairs 1..7 are smoothed or divided by 8,
                            pair 0 is kept); its weights are llama-spm's. The test copies
                            llama-spm's files beside this config.
  infer/llama3-rope.npy     the logits of that model.
  infer/tokens-long.txt     72 ids below 340 (the hybrid families' vocabularies are the
                            qwen tokenizer's 344, padded): tokens.txt's with 363 -> 323,
                            then 40 drawn (random.Random(72)) and tokens.txt's first 8
  infer/<hybrid>.npy        the same over tokens-long.txt for qwen35, qwen35moe: past
                            64 tokens transformers' delta rule runs two chunks and the
                            recurrent state carries across them; and for gemma4,
                            gemma4moe, whose sliding window (8) and shared-KV layers
                            then see many positions
  infer/<hybrid>-f64.npy    ... and the same models in float64 (stored as float32): these
                            recurrent models move under float32 arithmetic alone by 6.0e-6
                            (qwen35) and 7.5e-6 (qwen35moe) of the largest logit, so the
                            forward pass is also held to the float64 result
  infer/<family>.npy        the same for qwen3, mixtral, qwen3moe, gemma3, phi3, from
                            transformers 5 (eager attention: gemma3's sliding window and
                            softcap as written, MoE routing per token). gemma3's and
                            phi3's vocabularies are padded: the columns past the
                            tokenizer's are those of the padding rows, as llama.cpp's.

RoPE scaling of the fixtures: llama-spm, llama-tf none; llama-bpe linear (factor 2);
qwen2 yarn (factor 4, original context 128: the ramp, the 0.1 ln(4) + 1 attention
factor on cos and sin), which transformers 4.57.6 and llama.cpp compute with the same
formula (corrections floored/ceiled, linear ramp, interpolation 1/factor); the test
against llama.cpp (tests/llama/test_infer.py) shows it."""
import hashlib
import json
import os
import shutil
import sys
import tempfile

import numpy as np
import torch
import transformers
from transformers import AutoModelForCausalLM

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIX = os.path.join(ROOT, "fixtures")
OUT = os.path.join(FIX, "infer")
MODELS = ["llama-spm", "llama-bpe", "qwen2", "llama-tf"]
# The families transformers 5 made (scripts/make_hf_tf5_fixtures.py): their logits come
# from transformers 5 (build/tf5-venv), the others' from 4.57.6 as before.
TF5_MODELS = ["qwen3", "mixtral", "qwen3moe", "gemma3", "phi3", "qwen35", "qwen35moe",
              "gemma4", "gemma4moe"]
# ... of which these run the longer sequence (tokens-long.txt): the recurrent state, and
# gemma4's sliding window (8) well inside it,
LONG_MODELS = ["qwen35", "qwen35moe", "gemma4", "gemma4moe"]
# ... and these also in float64.
F64_MODELS = ["qwen35", "qwen35moe"]
# 24 ids below 364 (llama-bpe's vocabulary, the smallest), with repeats (1, 7, 300).
TOKENS = [1, 7, 300, 42, 15, 363, 0, 7, 128, 256, 99, 300, 11, 2, 77, 150,
          7, 333, 64, 5, 210, 1, 180, 45]
_r = __import__("random").Random(72)
TOKENS_LONG = ([t if t < 340 else t - 40 for t in TOKENS] +
               [_r.randrange(0, 340) for _ in range(40)] +
               [t if t < 340 else t - 40 for t in TOKENS[:8]])
LLAMA3 = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
          "high_freq_factor": 4.0, "original_max_position_embeddings": 64}


def logits(folder, tokens=None, dtype=torch.float32):
    torch.manual_seed(0)
    kw = {"experts_implementation": "eager"} if dtype == torch.float64 else {}
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=dtype,
                                                 attn_implementation="eager", **kw)
    model.eval()
    with torch.no_grad():
        out = model(torch.tensor([tokens or TOKENS]), use_cache=False)
    return out.logits[0].to(torch.float32).numpy()


def save(name, arr):
    np.save(os.path.join(OUT, name), np.ascontiguousarray(arr, dtype="<f4"))


def update_manifest(rows):
    """Replaces the rows of the files in `rows`, keeps every other."""
    path = os.path.join(FIX, "MANIFEST.tsv")
    with open(path) as f:
        lines = f.read().splitlines()
    made = {r.split("\t", 1)[0] for r in rows}
    kept = [ln for ln in lines if ln.split("\t", 1)[0] not in made]
    with open(path, "w") as f:
        f.write("\n".join(kept + rows) + "\n")


def rows_of(made, ver):
    rows = []
    for name, producer in made:
        with open(os.path.join(OUT, name), "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()
        rows.append("\t".join(["infer/" + name, producer, ver, digest]))
        print("make_infer_ref: fixtures/infer/%s" % name)
    return rows


def main_tf5(ver):
    """transformers 5: the TF5_MODELS over the same tokens.txt (written by the 4.x run;
    24 tokens are enough: gemma3's window is 8, phi3's original context 16)."""
    with open(os.path.join(OUT, "tokens.txt")) as f:
        assert [int(x) for x in f.read().split(",")] == TOKENS, "tokens.txt changed"
    names = sys.argv[1:] or TF5_MODELS
    bad = [n for n in names if n not in TF5_MODELS]
    if bad:
        sys.exit("make_infer_ref: %s need transformers 4.57.6 (build/ref-venv)" % bad)
    made = []
    with open(os.path.join(OUT, "tokens-long.txt"), "w") as f:
        f.write(",".join(map(str, TOKENS_LONG)) + "\n")
    made.append(("tokens-long.txt", "scripts/make_infer_ref.py (by hand)"))
    for m in names:
        save(m + ".npy", logits(os.path.join(FIX, "hf", m),
                                TOKENS_LONG if m in LONG_MODELS else None))
        made.append((m + ".npy", "transformers AutoModelForCausalLM float32 eager"))
        if m in F64_MODELS:
            save(m + "-f64.npy", logits(os.path.join(FIX, "hf", m), TOKENS_LONG, torch.float64))
            made.append((m + "-f64.npy", "transformers AutoModelForCausalLM float64 eager"))
    update_manifest(rows_of(made, ver))


def main():
    os.makedirs(OUT, exist_ok=True)
    torch.set_num_threads(1)        # one reduction order: the file does not depend on cores
    ver = "torch=%s;transformers=%s;numpy=%s" % (torch.__version__.split("+")[0],
                                                transformers.__version__, np.__version__)
    if int(transformers.__version__.split(".")[0]) >= 5:
        return main_tf5(ver)
    if sys.argv[1:]:
        sys.exit("make_infer_ref: names only for the transformers-5 families %s" % TF5_MODELS)
    made = []
    with open(os.path.join(OUT, "tokens.txt"), "w") as f:
        f.write(",".join(map(str, TOKENS)) + "\n")
    made.append(("tokens.txt", "scripts/make_infer_ref.py (by hand)"))
    for m in MODELS:
        save(m + ".npy", logits(os.path.join(FIX, "hf", m)))
        made.append((m + ".npy", "transformers AutoModelForCausalLM float32"))
    # llama3 rope scaling: llama-spm's weights under a config that asks for it.
    with open(os.path.join(FIX, "hf", "llama-spm", "config.json")) as f:
        cfg = json.load(f)
    cfg["rope_scaling"] = LLAMA3
    os.makedirs(os.path.join(OUT, "llama3-rope"), exist_ok=True)
    with open(os.path.join(OUT, "llama3-rope", "config.json"), "w") as f:
        json.dump(cfg, f, indent=2, sort_keys=True)
        f.write("\n")
    made.append(("llama3-rope/config.json", "scripts/make_infer_ref.py (llama-spm's, edited)"))
    with tempfile.TemporaryDirectory() as tmp:
        spm = os.path.join(FIX, "hf", "llama-spm")
        for n in os.listdir(spm):
            if n != "config.json":
                shutil.copy(os.path.join(spm, n), tmp)
        shutil.copy(os.path.join(OUT, "llama3-rope", "config.json"), tmp)
        save("llama3-rope.npy", logits(tmp))
    made.append(("llama3-rope.npy", "transformers AutoModelForCausalLM float32"))

    update_manifest(rows_of(made, ver))


if __name__ == "__main__":
    sys.exit(main())
