"""infer/'s forward pass against transformers: the logits of every position of a fixed
token sequence equal those of transformers' <Model>ForCausalLM in float32, for every HF
fixture (llama with SentencePiece and BPE, llama with linear rope scaling, qwen2 with
q/k/v biases and yarn, a llama made by transformers itself, llama3 rope scaling), read
from the HF folder (transformers' names, half-split Q/K rows: NEOX RoPE) and from the
GGUF safetensors2gguf writes (GGUF names; llama's Q/K rows interleaved: NORM RoPE).

The references are fixtures/infer/<model>.npy, made by scripts/make_infer_ref.py with
torch + transformers (producer versions in fixtures/MANIFEST.tsv). Tolerance:
max|ours - ref| / max|ref| (the error relative to the largest logit).
  - same weight values as the reference (the HF folder; a GGUF in f32 or in the folder's
    own dtype): 1e-5. Measured: <= 1.3e-6 (float32 sums in another order).
  - weights rounded by the conversion, measured on these fixtures and allowed 3x:
    f16 1.7e-3 -> 5e-3, bf16 1.1e-2 -> 3e-2 (qwen2's f32, llama-bpe's f16 weights),
    q8_0 4.4e-2 -> 1.2e-1. These only show that every dtype runs through the right
    kernels; tests/llama/test_infer.py holds the quantized files to 1e-5 against llama.cpp
    on the same weights."""
import json
import os
import shutil
import struct
import subprocess
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
FIX = ROOT / "fixtures"
HF = FIX / "hf"
REF = FIX / "infer"
BIN = Path(os.environ.get("LC_BIN", ROOT / "build" / "bin"))
TBIN = Path(os.environ.get("LC_TEST_BIN", ROOT / "build" / "test-bin"))
TOKENS = "@" + str(REF / "tokens.txt")

MODELS = ["llama-spm", "llama-bpe", "qwen2", "llama-tf", "llama3-rope"]
OUTTYPES = ["f32", "f16", "bf16", "q8_0"]
# The dtype each folder's weights are stored in (checked below against the files).
SOURCE = {"llama-spm": "bf16", "llama-bpe": "f16", "qwen2": "f32", "llama-tf": "bf16",
          "llama3-rope": "bf16"}
EXACT = 1e-5
ROUNDED = {"f16": 5e-3, "bf16": 3e-2, "q8_0": 1.2e-1}


def run(*args, env=None):
    r = subprocess.run([str(a) for a in args], capture_output=True, text=True,
                       env=dict(os.environ, **(env or {})))
    assert r.returncode == 0, r.stderr
    return r


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    """model -> its HF folder; llama3-rope is llama-spm's files under its own config."""
    out = {m: HF / m for m in MODELS if m != "llama3-rope"}
    d = tmp_path_factory.mktemp("llama3-rope")
    for f in (HF / "llama-spm").iterdir():
        shutil.copy(f, d)
    shutil.copy(REF / "llama3-rope" / "config.json", d / "config.json")
    out["llama3-rope"] = d
    return out


@pytest.fixture(scope="module")
def ggufs(folders, tmp_path_factory):
    d = tmp_path_factory.mktemp("gguf")
    made = {}

    def get(model, outtype):
        if (model, outtype) not in made:
            out = d / f"{model}-{outtype}.gguf"
            run(BIN / "safetensors2gguf", "-q", "--outtype", outtype, folders[model], out)
            made[(model, outtype)] = out
        return made[(model, outtype)]
    return get


def logits(model_path, tmp_path, *opts, env=None):
    out = tmp_path / "logits.f32"
    r = run(TBIN / "lc-infer", *opts, model_path, TOKENS, out, env=env)
    n, vocab = map(int, r.stdout.split()[:2])
    return np.fromfile(out, dtype="<f4").reshape(n, vocab)


def rel_err(ours, ref):
    assert ours.shape == ref.shape
    assert np.isfinite(ours).all()
    return float(np.abs(ours - ref).max() / np.abs(ref).max())


def stored_dtype(folder):
    """The one dtype of every 2-D tensor in the folder's safetensors files."""
    seen = set()
    for f in Path(folder).glob("*.safetensors"):
        with open(f, "rb") as fh:
            n = struct.unpack("<Q", fh.read(8))[0]
            header = json.loads(fh.read(n))
        seen |= {v["dtype"].lower() for k, v in header.items()
                 if k != "__metadata__" and len(v["shape"]) == 2}
    assert len(seen) == 1, seen
    return seen.pop()


@pytest.mark.parametrize("model", MODELS)
def test_hf_folder_equals_transformers(model, folders, tmp_path):
    ref = np.load(REF / f"{model}.npy")
    assert rel_err(logits(folders[model], tmp_path), ref) <= EXACT


def lossless(model, outtype):
    return outtype in ("f32", SOURCE[model])


@pytest.mark.parametrize("outtype", OUTTYPES)
@pytest.mark.parametrize("model", MODELS)
def test_our_gguf_equals_transformers(model, outtype, ggufs, tmp_path):
    ref = np.load(REF / f"{model}.npy")
    err = rel_err(logits(ggufs(model, outtype), tmp_path), ref)
    tol = EXACT if lossless(model, outtype) else ROUNDED[outtype]
    assert err <= tol, f"{model} {outtype}: {err:.3g} > {tol:g}"


def test_sources_are_the_dtypes_the_tolerances_assume(folders):
    for model, folder in folders.items():
        assert stored_dtype(folder) == SOURCE[model], model


def test_same_bits_for_any_thread_count(ggufs, tmp_path):
    path = ggufs("qwen2", "q8_0")
    one = logits(path, tmp_path, "-t", "1")
    three = logits(path, tmp_path, "-t", "3")
    assert one.tobytes() == three.tobytes()


def test_scalar_tile_equals_transformers_too(folders, tmp_path):
    """LC_CPU_DISABLE=avx2: the portable matmul tile (no AVX2/FMA) meets the same
    tolerance."""
    for model in ("qwen2", "llama-bpe"):
        ref = np.load(REF / f"{model}.npy")
        assert rel_err(logits(folders[model], tmp_path, env={"LC_CPU_DISABLE": "avx2"}), ref) <= EXACT


def test_layers_hook_writes_every_layer(folders, tmp_path):
    layers = tmp_path / "layers.f32"
    out = logits(folders["llama-tf"], tmp_path, "--layers", layers)
    cfg = json.loads((HF / "llama-tf" / "config.json").read_text())
    h = np.fromfile(layers, dtype="<f4").reshape(cfg["num_hidden_layers"], out.shape[0],
                                                 cfg["hidden_size"])
    assert np.isfinite(h).all() and not np.array_equal(h[0], h[1])


def test_meta_layout_equals_transformers(tmp_path):
    """fixtures/meta/tiny is llama-spm in Meta's layout (names, interleaved Q/K rows: NORM
    RoPE, and Meta's own rope.freqs buffer, which must not be taken for llama3 factors)."""
    ref = np.load(REF / "llama-spm.npy")
    assert rel_err(logits(FIX / "meta" / "tiny", tmp_path), ref) <= EXACT


def test_hf_and_gguf_spellings_agree(folders, ggufs, tmp_path):
    """The same weights under both spellings (HF: NEOX on half-split rows; GGUF llama:
    NORM on rows the converter interleaved) give the same logits to float rounding."""
    for model in ("llama-tf", "qwen2"):
        a = logits(folders[model], tmp_path)
        b = logits(ggufs(model, "f32"), tmp_path)
        assert rel_err(a, b) <= 1e-6, model
