"""Issue 9 item 7: model-inspect shows each tensor's type and the file's bits per weight.

The figures are checked against gguf-py reading the same files: every tensor's type,
the element count and bytes x 8 / elements (llama.cpp's BPW), for a plain and a
quantized mix file made by our tools."""
import json
import os
import subprocess
from collections import Counter
from pathlib import Path

import gguf
import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(os.environ.get("LC_BIN", ROOT / "build" / "bin"))


def run(*args):
    r = subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout


@pytest.mark.parametrize("outtype", ["f16", "q8_0", "q4_k_m", "q3_k_s"])
def test_bits_per_weight_and_types_match_gguf_py(tmp_path, outtype):
    out = tmp_path / "m.gguf"
    run(BIN / "safetensors2gguf", "-q", "--outtype", outtype, ROOT / "fixtures/hf/llama-q9", out)
    r = gguf.GGUFReader(out)
    elems = sum(int(t.n_elements) for t in r.tensors)
    nbytes = sum(int(t.n_bytes) for t in r.tensors)
    types = Counter(t.tensor_type.name for t in r.tensors)
    d = json.loads(run(BIN / "model-inspect", "--json", out))
    assert d["weights"] == elems
    assert abs(d["bits_per_weight"] - nbytes * 8 / elems) < 1e-4
    assert d["tensor_types"] == dict(types)
    assert {t["name"]: t["dtype"] for t in d["tensors"]} == \
        {t.name: t.tensor_type.name for t in r.tensors}
    text = run(BIN / "model-inspect", out)
    line = next(l for l in text.splitlines() if l.startswith("weights:"))
    assert f"{elems} ({nbytes * 8 / elems:.2f} bits per weight;" in line
    if outtype == "q4_k_m":
        assert set(types) >= {"Q4_K", "Q6_K"}      # a mix: more than one block type


@pytest.mark.parametrize("model", ["qwen2", "gemma3"])
def test_a_folder_of_one_unsharded_file_is_that_file(model):
    """An HF folder with model.safetensors and no index (the Hub's small models) inspects
    as its one file: the same tensor table, not "index.json: cannot open"."""
    folder = ROOT / "fixtures" / "hf" / model
    assert not (folder / "model.safetensors.index.json").exists()
    inspect = lambda p: subprocess.run([str(BIN / "model-inspect"), "--json", str(p)],
                                   capture_output=True, text=True)
    a, b = inspect(folder), inspect(folder / "model.safetensors")
    assert a.returncode == 0, a.stderr
    got, want = json.loads(a.stdout), json.loads(b.stdout)
    assert got["format"] == "safetensors"
    assert got["tensors"] == want["tensors"] and len(got["tensors"]) > 5


def test_a_folder_without_weights_names_what_it_looked_for(tmp_path):
    (tmp_path / "config.json").write_text("{}")
    r = subprocess.run([str(BIN / "model-inspect"), str(tmp_path)], capture_output=True,
                       text=True)
    assert r.returncode != 0 and "model.safetensors.index.json" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
