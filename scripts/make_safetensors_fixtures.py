#!/usr/bin/env python3
"""Writes fixtures/safetensors/ with the real producer (safetensors' serialize_file,
the function behind safetensors.numpy.save_file), fixed seeds, and replaces their
rows in fixtures/MANIFEST.tsv (file relative to fixtures/, producer, producer_version,
sha256).

numpy has no bfloat16 or float8, so those tensors are handed to serialize_file as
raw bytes through TensorSpec(dtype="bfloat16" / "float8_e4m3fn" / "float8_e5m2"),
which is exactly what save_file does for the dtypes numpy can name.

The reference writes __metadata__ in Rust HashMap order, which changes from run to
run when there are two or more keys: meta_multi.safetensors is therefore the one
file whose bytes (and sha256) differ between runs of this script.

Run: build/venv/bin/python scripts/make_safetensors_fixtures.py
"""
import hashlib, json, os, sys

import numpy as np
import safetensors
from safetensors import TensorSpec, serialize_file
from safetensors.numpy import save_file

OUT = "fixtures/safetensors"
KEEP = []


def spec(dtype, arr):
    a = np.ascontiguousarray(arr)
    KEEP.append(a)
    return TensorSpec(dtype=dtype, shape=list(a.shape), data_ptr=a.ctypes.data, data_len=a.nbytes)


def raw(dtype, shape, rng, itemsize):
    n = int(np.prod(shape)) * itemsize
    a = np.frombuffer(rng.bytes(n), dtype=np.uint8).copy()
    KEEP.append(a)
    return TensorSpec(dtype=dtype, shape=list(shape), data_ptr=a.ctypes.data, data_len=n)


def all_dtypes(path):
    rng = np.random.default_rng(1)
    d = {
        "f64": spec("float64", rng.standard_normal((2, 3))),
        "f32": spec("float32", rng.standard_normal((4,)).astype(np.float32)),
        "f16": spec("float16", rng.standard_normal((3, 2)).astype(np.float16)),
        "bf16": raw("bfloat16", (2, 2), rng, 2),
        "f8_e4m3": raw("float8_e4m3fn", (5,), rng, 1),
        "f8_e5m2": raw("float8_e5m2", (5,), rng, 1),
        "i64": spec("int64", rng.integers(-2**63, 2**63 - 1, (3,), dtype=np.int64)),
        "u64": spec("uint64", rng.integers(0, 2**64 - 1, (3,), dtype=np.uint64)),
        "i32": spec("int32", rng.integers(-2**31, 2**31 - 1, (2, 2), dtype=np.int32)),
        "u32": spec("uint32", rng.integers(0, 2**32 - 1, (3,), dtype=np.uint32)),
        "i16": spec("int16", rng.integers(-2**15, 2**15 - 1, (3,), dtype=np.int16)),
        "u16": spec("uint16", rng.integers(0, 2**16 - 1, (3,), dtype=np.uint16)),
        "i8": spec("int8", rng.integers(-128, 127, (3,), dtype=np.int8)),
        "u8": spec("uint8", rng.integers(0, 255, (3,), dtype=np.uint8)),
        "bool": spec("bool", rng.integers(0, 2, (2, 3)).astype(bool)),
        "scalar": spec("float32", np.array(3.5, np.float32)),
        "empty": spec("float32", np.zeros((0, 4), np.float32)),
        "empty_i8": spec("int8", np.zeros((3, 0), np.int8)),
        "rank4": spec("float16", rng.standard_normal((1, 2, 3, 2)).astype(np.float16)),
    }
    serialize_file(d, path, metadata={"format": "pt"})


def tiny_llama(path):
    """A model-shaped file for the demo: embeddings, two blocks, norms, a head."""
    rng = np.random.default_rng(2)
    dim, ff, vocab = 16, 32, 64
    t = {"model.embed_tokens.weight": rng.standard_normal((vocab, dim)).astype(np.float16),
         "model.norm.weight": np.ones(dim, np.float32),
         "lm_head.weight": rng.standard_normal((vocab, dim)).astype(np.float16)}
    for i in range(2):
        p = f"model.layers.{i}."
        for n in ("q_proj", "k_proj", "v_proj", "o_proj"):
            t[p + f"self_attn.{n}.weight"] = rng.standard_normal((dim, dim)).astype(np.float16)
        t[p + "mlp.gate_proj.weight"] = rng.standard_normal((ff, dim)).astype(np.float16)
        t[p + "mlp.up_proj.weight"] = rng.standard_normal((ff, dim)).astype(np.float16)
        t[p + "mlp.down_proj.weight"] = rng.standard_normal((dim, ff)).astype(np.float16)
        t[p + "input_layernorm.weight"] = np.ones(dim, np.float32)
        t[p + "post_attention_layernorm.weight"] = np.ones(dim, np.float32)
    save_file(t, path, metadata={"format": "pt"})


def unicode_names(path):
    rng = np.random.default_rng(3)
    names = ["caf\u00e9", "\u6f22\u5b57.weight", "emoji\U0001F600", 'quote"back\\slash',
             "tab\tnew\nline", "ctrl\x01\x1f", "slash/ok", "Zebra", "apple", "a", "b"]
    save_file({n: rng.standard_normal((2,)).astype(np.float32) for n in names}, path,
              metadata={"note": "\u00fcber \"quoted\"\n"})


def meta_multi(path):
    meta = {"format": "pt", "author": "libconvert", "z": "last", "a": "first",
            "empty": "", "unicode": "\u00e9\u6f22"}
    save_file({"w": np.arange(6, dtype=np.float32).reshape(2, 3)}, path, metadata=meta)


def empty(path):
    save_file({}, path)


def sharded(folder):
    os.makedirs(folder, exist_ok=True)
    rng = np.random.default_rng(4)
    s1 = {"model.embed.weight": rng.standard_normal((8, 4)).astype(np.float32),
          "model.layers.0.w": rng.standard_normal((4, 4)).astype(np.float16)}
    s2 = {"model.layers.1.w": rng.standard_normal((4, 4)).astype(np.float16),
          "lm_head.weight": rng.standard_normal((8, 4)).astype(np.float32)}
    names = ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"]
    save_file(s1, os.path.join(folder, names[0]), metadata={"format": "pt"})
    save_file(s2, os.path.join(folder, names[1]), metadata={"format": "pt"})
    total = sum(a.nbytes for a in list(s1.values()) + list(s2.values()))
    wm = {k: names[0] for k in s1}
    wm.update({k: names[1] for k in s2})
    # The layout transformers' save_pretrained writes: indent 2, sorted weight_map.
    with open(os.path.join(folder, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": dict(sorted(wm.items()))},
                  f, indent=2, sort_keys=True)
        f.write("\n")


def main():
    os.makedirs(OUT, exist_ok=True)
    jobs = [("all_dtypes.safetensors", all_dtypes), ("tiny_llama.safetensors", tiny_llama),
            ("unicode_names.safetensors", unicode_names), ("meta_multi.safetensors", meta_multi),
            ("empty.safetensors", empty)]
    made = []
    for name, fn in jobs:
        fn(os.path.join(OUT, name))
        made.append((f"{OUT}/{name}", "safetensors.serialize_file"))
    sharded(f"{OUT}/sharded")
    for name in sorted(os.listdir(f"{OUT}/sharded")):
        prod = "python json (transformers index layout)" if name.endswith(".json") \
            else "safetensors.serialize_file"
        made.append((f"{OUT}/sharded/{name}", prod))
    manifest = "fixtures/MANIFEST.tsv"
    rows = []
    if os.path.exists(manifest):
        with open(manifest) as f:
            rows = [r for r in f.read().splitlines() if r and not r.startswith("safetensors/")]
    if not rows or not rows[0].startswith("file\t"):
        rows.insert(0, "file\tproducer\tproducer_version\tsha256")
    for path, prod in made:
        with open(path, "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()
        version = safetensors.__version__ if prod.startswith("safetensors") else \
            f"python {sys.version.split()[0]}"
        rows.append(f"{os.path.relpath(path, 'fixtures')}\t{prod}\t{version}\t{digest}")
    with open(manifest, "w") as f:
        f.write("\n".join(rows) + "\n")


if __name__ == "__main__":
    main()
