"""safetensors2gguf on Meta's original llama layout (params.json + consolidated.00.pth +
tokenizer.model), against two oracles: gguf-py's GGUFReader reads what we write, and
fixtures/meta/tiny holds llama-spm's weights in Meta's naming with q/k rows in Meta's
interleaved order (scripts/make_meta_fixture.py, torch.save), so the GGUF must equal the
HF path's GGUF of fixtures/hf/llama-spm tensor for tensor and key for key. The only
keys allowed to differ are documented: llama.attention.{key,value}_length (the HF path
writes them because llama-spm's config.json has head_dim; params.json has none) and,
for the bare fixture, what the HF folder's tokenizer_config.json /
special_tokens_map.json / generation_config.json add (Meta ships none of them)."""
import json
import os
import shutil
import subprocess
from pathlib import Path

import gguf
import pytest

ROOT = Path(__file__).resolve().parents[2]
META = ROOT / "fixtures" / "meta" / "tiny"
SPM = ROOT / "fixtures" / "hf" / "llama-spm"
BIN = Path(os.environ.get("LC_BIN", ROOT / "build" / "bin"))
HF_ONLY = ["llama.attention.key_length", "llama.attention.value_length"]
HF_FILES = ["tokenizer_config.json", "special_tokens_map.json", "generation_config.json"]


def run(*args, ok=True):
    r = subprocess.run([str(a) for a in args], capture_output=True, text=True)
    if ok:
        assert r.returncode == 0, r.stderr
    return r


@pytest.fixture(scope="module")
def tmp(tmp_path_factory):
    return tmp_path_factory.mktemp("meta")


def fields(path):
    """key -> (types, raw bytes of every part), in file order."""
    rd = gguf.GGUFReader(path)
    return {k: (f.types, [bytes(p) for p in f.parts[f.data[0]:]] if f.data else [])
            for k, f in rd.fields.items() if not k.startswith("GGUF.")}


def tensors(path):
    return {t.name: (t.tensor_type, list(t.shape), t.data.tobytes())
            for t in gguf.GGUFReader(path).tensors}


def hf_out(tmp, outtype):
    out = tmp / f"hf-{outtype}.gguf"
    if not out.exists():
        run(BIN / "safetensors2gguf", "-q", "--outtype", outtype, SPM, out)
    return out


@pytest.mark.parametrize("outtype", ["auto", "f32", "q8_0"])
def test_equals_hf_path(outtype, tmp):
    # the Meta folder under llama-spm's name (general.name) with the HF-only tokenizer
    # side files beside it: everything but head_dim's two keys must then be equal
    d = tmp / outtype / "llama-spm"
    shutil.copytree(META, d)
    for f in HF_FILES:
        shutil.copy(SPM / f, d / f)
    out = tmp / f"meta-{outtype}.gguf"
    run(BIN / "safetensors2gguf", "-q", "--outtype", outtype, d, out)
    ref = hf_out(tmp, outtype)
    a, b = fields(out), fields(ref)
    assert list(a) == [k for k in b if k not in HF_ONLY]
    for k in a:
        assert a[k] == b[k], k
    ta, tb = tensors(out), tensors(ref)
    assert len(ta) == 4 * 9 + 3 and set(ta) == set(tb)
    for n in tb:
        assert ta[n] == tb[n], n


def test_bare_fixture(tmp):
    out = tmp / "bare.gguf"
    run(BIN / "safetensors2gguf", "-q", META, out)
    rd = gguf.GGUFReader(out)
    f = rd.fields
    assert f["general.architecture"].contents() == "llama"
    assert f["general.name"].contents() == "Tiny"
    assert f["general.file_type"].contents() == 32          # bf16 source -> auto BF16
    expect = {"context_length": 256, "embedding_length": 64, "block_count": 4,
              "feed_forward_length": 128, "attention.head_count": 4,
              "attention.head_count_kv": 2, "vocab_size": 400, "rope.dimension_count": 16}
    for k, v in expect.items():
        assert f["llama." + k].contents() == v, k
        assert f["llama." + k].types == [gguf.GGUFValueType.UINT32], k
    assert f["llama.rope.freq_base"].contents() == 500000.0
    assert abs(f["llama.attention.layer_norm_rms_epsilon"].contents() - 1e-5) < 1e-12
    assert f["tokenizer.ggml.model"].contents() == "llama"
    assert len(f["tokenizer.ggml.tokens"].data) == 400
    names = [t.name for t in rd.tensors]
    assert "rope_freqs.weight" not in names and len(names) == 39
    # Meta's state_dict order is kept: embeddings, layer 0 ..., norm, output
    assert names[0] == "token_embd.weight" and names[1] == "blk.0.attn_q.weight"
    assert names[-2:] == ["output_norm.weight", "output.weight"]
    # against the HF path: missing exactly the keys the HF-only files and head_dim give
    ref = fields(hf_out(tmp, "auto"))
    missing = [k for k in ref if k not in fields(out)]
    assert missing == ["general.sampling.top_p", "general.sampling.temp", *HF_ONLY,
                       "tokenizer.ggml.add_space_prefix", "tokenizer.ggml.bos_token_id",
                       "tokenizer.ggml.eos_token_id", "tokenizer.ggml.add_bos_token",
                       "tokenizer.ggml.add_eos_token", "tokenizer.chat_template"]
    assert tensors(out) == tensors(hf_out(tmp, "auto"))


def meta_folder(tmp, name, params=None, edit=None):
    d = tmp / name / "m"
    shutil.copytree(META, d)
    if params is not None:
        p = json.loads((d / "params.json").read_text())
        p.update(params)
        (d / "params.json").write_text(json.dumps({k: v for k, v in p.items()
                                                   if v is not DROP}))
    if edit:
        edit(d)
    return d


DROP = object()


@pytest.mark.parametrize("params,ctx", [
    ({"max_seq_len": DROP}, 4096),                          # norm_eps 1e-5: Llama 2
    ({"max_seq_len": DROP, "norm_eps": 1e-6}, 2048),        # Llama 1
    ({"max_seq_len": DROP, "rope_theta": 1000000}, 16384),  # CodeLlama
    ({"max_seq_len": 1000}, 1000),
])
def test_context_length(params, ctx, tmp):
    d = meta_folder(tmp, f"ctx{ctx}", params)
    out = tmp / f"ctx{ctx}.gguf"
    run(BIN / "safetensors2gguf", "-q", "--vocab-only", d, out)
    assert gguf.GGUFReader(out).fields["llama.context_length"].contents() == ctx


@pytest.mark.parametrize("name,params,edit,needle", [
    ("no-dim", {"dim": DROP}, None, "params.json has no dim"),
    ("dim-str", {"dim": "64"}, None, "dim must be an integer"),
    ("heads-float", {"n_heads": 4.5}, None, "n_heads must be an integer"),
    ("eps-str", {"norm_eps": "1e-5"}, None, "norm_eps must be a positive number"),
    ("not-json", None, lambda d: (d / "params.json").write_text("{\"dim\": 64,"),
     "invalid JSON"),
    ("ffn", {"multiple_of": 256}, None, "imply 256"),
    ("vocab", {"vocab_size": 401}, None, "implies [401, 64]"),
    ("layers", {"n_layers": 3}, None, "n_layers 3"),
    ("scaled-rope", {"use_scaled_rope": True}, None, "use_scaled_rope"),
    ("shards", None, lambda d: shutil.copy(d / "consolidated.00.pth",
                                           d / "consolidated.01.pth"), "model-parallel"),
    ("no-tokenizer", None, lambda d: (d / "tokenizer.model").unlink(), "tokenizer"),
])
def test_bad_folders(name, params, edit, needle, tmp):
    d = meta_folder(tmp, name, params, edit)
    out = tmp / f"{name}.gguf"
    r = run(BIN / "safetensors2gguf", "-q", d, out, ok=False)
    assert r.returncode == 1, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert needle in r.stderr, r.stderr
    assert not out.exists() and not list(tmp.glob(f"{name}.gguf*"))
