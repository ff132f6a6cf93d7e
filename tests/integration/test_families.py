"""The families of issue 18 (qwen3, qwen3moe, gemma3, mixtral, phi3) through every path,
against the real producers:

  - safetensors2gguf writes what llama.cpp's pinned convert_hf_to_gguf.py wrote from the
    same transformers-5 folder (fixtures/hf-ref/<model>-<outtype>.gguf), byte for byte;
    qwen3moe-fused (transformers 5's fused expert layout of the same tensors) gives
    qwen3moe's file but for general.name (the folder's name);
  - the way back (gguf2safetensors --dtype bf16) gives the folder's own tensors byte for
    byte: experts unstacked, gemma's + 1 taken off, phi3's fused tensors kept;
  - infer/'s forward pass equals transformers' float32 logits (fixtures/infer/<model>.npy)
    within 1e-5 of the largest logit, from the folder and from our GGUF;
  - model-verify passes every intact conversion, and catches and locates the defects
    this issue names: two experts swapped, gemma's shift skipped, q_norm and k_norm
    swapped, expert_used_count changed;
  - bad input: an expert count that disagrees with the tensors, a missing expert, an
    expert of the wrong shape, a fused tensor that does not split, an unknown
    architecture: one line naming the file and tensor or key, exit 1, no OUT."""
import json
import os
import shutil
import struct
import subprocess
from pathlib import Path

import numpy as np
import pytest

from test_verify import Gguf, failing, diffs, verify

ROOT = Path(__file__).resolve().parents[2]
FIX = ROOT / "fixtures"
HF, REF, INFER = FIX / "hf", FIX / "hf-ref", FIX / "infer"
BIN = Path(os.environ.get("LC_BIN", ROOT / "build" / "bin"))
TBIN = Path(os.environ.get("LC_TEST_BIN", ROOT / "build" / "test-bin"))

MODELS = ["qwen3", "qwen3moe", "gemma3", "mixtral", "phi3"]
OUTTYPES = ["f32", "f16", "bf16", "q8_0"]
# The BPE pre-tokenizer the fixture's regex is (scripts/make_llama_ref.py's PRE).
PRE = {"qwen3": "qwen2", "qwen3moe": "qwen2", "qwen3moe-fused": "qwen2", "qwen35": "qwen35",
       "qwen35moe": "qwen35"}


def run(*args):
    return subprocess.run([str(a) for a in args], capture_output=True, text=True)


def convert(folder, outtype, out, model=None):
    pre = PRE.get(model or Path(folder).name)
    r = run(BIN / "safetensors2gguf", "-q", "--no-fsync", *(["--pre", pre] if pre else []),
            "--outtype", outtype, folder, out)
    assert r.returncode == 0, r.stderr
    return out


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    d = tmp_path_factory.mktemp("families")
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


@pytest.mark.parametrize("outtype", OUTTYPES)
def test_fused_experts_give_the_same_file(made, outtype):
    """transformers 5's fused gate_up/down stacks convert to the per-expert folder's file;
    only general.name (the folder name) differs."""
    ours = Gguf(made("qwen3moe-fused", outtype))
    ref = Gguf(REF / f"qwen3moe-{outtype}.gguf")
    assert [f[0] for f in ours.fields] == [f[0] for f in ref.fields]
    for a, b in zip(ours.fields, ref.fields):
        if a[0] != "general.name":
            assert a[1] == b[1], a[0]
    assert ours.field("general.name")[1] == "Qwen3Moe Fused"
    for a, b in zip(ours.tensors, ref.tensors):
        assert a[0] == b[0] and a[2] == b[2] and np.array_equal(a[1], b[1]), a[0]


# ---- the way back ----

def safetensors(path):
    """name -> (dtype, shape, bytes) of one file, read by hand (numpy has no bf16)."""
    b = path.read_bytes()
    n = struct.unpack("<Q", b[:8])[0]
    h = json.loads(b[8:8 + n])
    return {k: (v["dtype"], v["shape"], b[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]])
            for k, v in h.items() if k != "__metadata__"}


@pytest.mark.parametrize("model", MODELS)
def test_round_trip_gives_the_folder_back(made, model, tmp_path):
    back = tmp_path / "back.safetensors"
    r = run(BIN / "gguf2safetensors", "-q", "--dtype", "bf16", made(model, "bf16"), back)
    assert r.returncode == 0, r.stderr
    src = {}
    for f in sorted((HF / model).glob("*.safetensors")):
        src.update(safetensors(f))
    got = safetensors(back)
    assert set(got) == set(src)
    assert [k for k in src if got[k] != src[k]] == []


# ---- the forward pass ----

@pytest.mark.parametrize("source", ["hf", "f32", "bf16"])
@pytest.mark.parametrize("model", MODELS)
def test_forward_pass_equals_transformers(made, model, source, tmp_path):
    ref = np.load(INFER / f"{model}.npy")
    path = HF / model if source == "hf" else made(model, source)
    out = tmp_path / "logits.f32"
    r = run(TBIN / "lc-infer", path, "@" + str(INFER / "tokens.txt"), out)
    assert r.returncode == 0, r.stderr
    ours = np.fromfile(out, dtype=np.float32).reshape(ref.shape)
    # the folders are bf16: the f32 and bf16 GGUFs hold the same values
    assert np.abs(ours - ref).max() / np.abs(ref).max() < 1e-5


# ---- model-verify ----

@pytest.mark.parametrize("outtype", ["bf16", "q8_0"])
@pytest.mark.parametrize("model", MODELS + ["qwen3moe-fused"])
def test_model_verify_passes_intact(made, model, outtype):
    rc, j, err = verify(HF / model, made(model, outtype))
    assert rc == 0, (err, j and j["why"])
    assert j["verdict"] == "pass" and j["tensors"]["outside"] == 0


def test_model_verify_passes_the_way_back(made, tmp_path):
    back = tmp_path / "back.safetensors"
    assert run(BIN / "gguf2safetensors", "-q", made("mixtral", "f16"), back).returncode == 0
    rc, j, err = verify(made("mixtral", "f16"), back)
    assert rc == 0, (err, j and j["why"])


def plant_experts(g):
    t = g.tensor("blk.1.ffn_up_exps.weight")
    d = t[1].copy()
    d[[2, 5]] = d[[5, 2]]
    t[1] = d


def plant_shift(g):
    for t in g.tensors:
        if t[0].endswith("norm.weight"):
            t[1] = t[1] - 1


def plant_qk_norm(g):
    a, b = g.tensor("blk.1.attn_q_norm.weight"), g.tensor("blk.1.attn_k_norm.weight")
    a[1], b[1] = b[1], a[1]


def plant_used(g):
    g.field("qwen3moe.expert_used_count")[1] = 3


FAMILY_DEFECTS = {
    "experts_swapped": ("qwen3moe", "q8_0", plant_experts, lambda j: (
        {t["name"] for t in failing(j).values()} ==
        {"blk.1.ffn_up_exps.weight[2]", "blk.1.ffn_up_exps.weight[5]"}
        and "experts 2 and 5 of layer 1" in failing(j)["blk.1.ffn_up_exps.weight[2]"]["diagnosis"]
        and "experts 5 and 2 of layer 1" in failing(j)["blk.1.ffn_up_exps.weight[5]"]["diagnosis"]),
        "blk.1.ffn_up_exps.weight["),
    "gemma_shift_skipped": ("gemma3", "bf16", plant_shift, lambda j: (
        "output_norm.weight" in failing(j) and "blk.0.attn_norm.weight" in failing(j)
        and all(n.endswith("norm.weight") for n in failing(j))), "norm.weight"),
    "q_k_norm_swapped": ("qwen3", "q8_0", plant_qk_norm, lambda j: (
        set(failing(j)) == {"blk.1.attn_q_norm.weight", "blk.1.attn_k_norm.weight"}),
        "blk.1.attn_"),
    "expert_used_count": ("qwen3moe", "q8_0", plant_used, lambda j: (
        diffs(j) == ["qwen3moe.expert_used_count"] and not failing(j)),
        "qwen3moe.expert_used_count"),
}


@pytest.mark.parametrize("defect", list(FAMILY_DEFECTS))
def test_family_defect_is_caught_and_located(made, tmp_path, defect):
    model, outtype, plant, check, named = FAMILY_DEFECTS[defect]
    g = Gguf(made(model, outtype))
    plant(g)
    bad = g.write(tmp_path / f"{defect}.gguf")
    rc, j, err = verify(HF / model, bad)
    assert rc == 1, err
    assert j["verdict"] == "fail" and named in j["why"], j["why"]
    assert check(j), json.dumps({k: j[k] for k in ("why", "metadata")}, indent=1)


# ---- bad input ----

def rewrite_safetensors(src, dst, change):
    """Copies safetensors file src to dst with change(name -> (dtype, shape, bytes)) applied
    to its table (returning the new one), written by the safetensors package."""
    from safetensors import TensorSpec, serialize_file
    t = change(safetensors(src))
    keep = {k: np.frombuffer(v[2], np.uint8).copy() for k, v in t.items()}
    specs = {k: TensorSpec(dtype={"BF16": "bfloat16", "F32": "float32", "F16": "float16"}[v[0]],
                           shape=v[1], data_ptr=keep[k].ctypes.data, data_len=len(v[2]))
             for k, v in t.items()}
    serialize_file(specs, str(dst), metadata={"format": "pt"})


def folder_copy(model, tmp_path):
    d = tmp_path / model
    shutil.copytree(HF / model, d)
    return d


def refused(folder, says, tmp_path, model):
    out = tmp_path / "out.gguf"
    pre = PRE.get(model)
    r = run(BIN / "safetensors2gguf", "-q", *(["--pre", pre] if pre else []), folder, out)
    assert r.returncode == 1, r.stderr
    line = r.stderr.strip()
    assert "\n" not in line and says in line, line
    assert not out.exists() and not list(tmp_path.glob(".out.gguf.*"))
    return line


def test_expert_count_disagreeing_with_tensors(tmp_path):
    d = folder_copy("qwen3moe", tmp_path)
    cfg = json.loads((d / "config.json").read_text())
    cfg["num_local_experts"] = 16
    (d / "config.json").write_text(json.dumps(cfg))
    # the router is the first tensor that disagrees
    line = refused(d, "model.layers.0.mlp.gate.weight has shape [8, 32] but config.json implies "
                   "[16, 32]", tmp_path, "qwen3moe")
    cfg["num_local_experts"] = 4
    (d / "config.json").write_text(json.dumps(cfg))
    refused(d, "is expert 4 but config.json declares 4 experts", tmp_path, "qwen3moe")


def test_missing_expert(tmp_path):
    d = folder_copy("qwen3moe", tmp_path)
    f = d / "model.safetensors"
    name = "model.layers.1.mlp.experts.6.gate_proj.weight"
    rewrite_safetensors(f, f, lambda t: {k: v for k, v in t.items() if k != name})
    refused(d, f"layer 1 has no {name}", tmp_path, "qwen3moe")


def test_expert_of_the_wrong_shape(tmp_path):
    d = folder_copy("mixtral", tmp_path)
    name = "model.layers.0.block_sparse_moe.experts.3.w2.weight"
    shard = next(p for p in sorted(d.glob("model-*.safetensors")) if name in safetensors(p))

    def change(t):
        dt, shape, data = t[name]
        t[name] = (dt, [shape[0], shape[1] // 2], data[:len(data) // 2])   # half its columns
        return t
    rewrite_safetensors(shard, shard, change)
    line = refused(d, name, tmp_path, "mixtral")
    assert "has shape" in line and "implies" in line


def test_fused_tensor_that_does_not_split(tmp_path):
    d = folder_copy("qwen3moe-fused", tmp_path)
    f = d / "model.safetensors"
    name = "model.layers.0.mlp.experts.gate_up_proj"

    def change(t):
        dt, shape, data = t[name]
        e, rows, cols = shape
        size = {"BF16": 2, "F16": 2, "F32": 4}[dt]
        t[name] = (dt, [e, rows - 1, cols], data[:e * (rows - 1) * cols * size])
        return t
    rewrite_safetensors(f, f, change)
    line = refused(d, name, tmp_path, "qwen3moe-fused")
    assert "has shape" in line


def test_unknown_architecture_lists_the_supported(tmp_path):
    d = folder_copy("qwen3", tmp_path)
    cfg = json.loads((d / "config.json").read_text())
    cfg["architectures"] = ["DeepseekV3ForCausalLM"]
    (d / "config.json").write_text(json.dumps(cfg))
    line = refused(d, "DeepseekV3ForCausalLM is not supported", tmp_path, "qwen3")
    for cls in ("LlamaForCausalLM", "MixtralForCausalLM", "Qwen3ForCausalLM",
                "Qwen3MoeForCausalLM", "Gemma3ForCausalLM", "Phi3ForCausalLM"):
        assert cls in line
    assert "config.json" in line


# ---- model-inspect ----

@pytest.mark.parametrize("model,stacks", [("qwen3moe", 6), ("mixtral", 6), ("qwen3", None)])
def test_model_inspect_shows_the_experts(made, model, stacks):
    path = made(model, "bf16")
    text = run(BIN / "model-inspect", path).stdout
    j = json.loads(run(BIN / "model-inspect", "--json", path).stdout)
    if stacks is None:
        assert "experts:" not in text and "experts" not in j
    else:
        assert f"experts:  8 per layer, 2 used per token ({stacks} stacked tensors)" in text
        assert j["experts"] == {"count": 8, "used": 2, "stacked_tensors": stacks}


def st_tensors(path):
    """name -> (dtype, shape, data bytes) of a safetensors file, read by hand (numpy has no
    bfloat16)."""
    raw = Path(path).read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    head = json.loads(raw[8:8 + n])
    head.pop("__metadata__", None)
    base = 8 + n
    return {k: (v["dtype"], v["shape"], raw[base + v["data_offsets"][0]:base + v["data_offsets"][1]])
            for k, v in head.items()}


@pytest.mark.parametrize("model", ["gemma4", "gemma4moe"])
def test_gemma4_gguf_back_to_hf_tensors(tmp_path, model):
    """The way back for gemma4 (read from the pinned converter's GGUF): every transformers
    tensor, the experts' fused stacks and the layer scalars included, comes back under its
    own name with its bfloat16 bytes; rope_freqs (computed) is dropped."""
    out = tmp_path / "back.safetensors"
    r = run(BIN / "gguf2safetensors", "--dtype", "bf16", FIX / "hf-ref" / f"{model}-bf16.gguf",
            out)
    assert r.returncode == 0, r.stderr
    assert st_tensors(out) == st_tensors(FIX / "hf" / model / "model.safetensors")
