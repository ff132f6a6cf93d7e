"""The hf_* modules against the oracles: sentencepiece, gguf-py's SpecialVocab / BpeVocab /
TensorNameMap, and llama.cpp's converter rules (restated here in numpy/Python).

Our side is tests/tools/lc-hf-dump, which prints the metadata our modules produce for a
fixture folder (fixtures/hf/, made by scripts/make_hf_fixtures.py)."""
import json
import os
import shutil
import struct
import subprocess
from pathlib import Path

import gguf
import numpy as np
import pytest
import sentencepiece as spm
from safetensors import safe_open

ROOT = Path(__file__).resolve().parents[2]
HF = ROOT / "fixtures" / "hf"
DUMP = Path(os.environ.get("LC_TEST_BIN", ROOT / "build" / "test-bin")) / "lc-hf-dump"

# gguf.TokenType values
NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6


def dump(folder, *extra):
    out = subprocess.run([str(DUMP), *extra, str(folder)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def val(d, key):
    return d[key]["value"]


def f32(x):
    return float(np.float32(x))


def looks_special(t):
    """llama.cpp's does_token_look_special."""
    return (t in ("<pad>", "<mask>", "<2mass>", "[@BOS@]")
            or (t.startswith("<|") and t.endswith("|>"))
            or (t.startswith("<\uff5c") and t.endswith("\uff5c>"))
            or (t.startswith("<unused") and t.endswith(">")))


def spm_expected(folder):
    """llama.cpp's _create_vocab_sentencepiece over sentencepiece's own reading."""
    cfg = json.loads((folder / "config.json").read_text())
    sp = spm.SentencePieceProcessor(model_file=str(folder / "tokenizer.model"))
    n = cfg.get("vocab_size", sp.vocab_size())
    tokens = [f"[PAD{i}]" for i in range(n)]
    scores = [-10000.0] * n
    types = [UNUSED] * n
    for i in range(min(sp.vocab_size(), n)):
        t = NORMAL
        if sp.IsUnknown(i):
            t = UNKNOWN
        elif sp.IsControl(i):
            t = CONTROL
        elif sp.IsUnused(i):
            t = UNUSED
        elif sp.IsByte(i):
            t = BYTE
        tokens[i], scores[i], types[i] = sp.IdToPiece(i), sp.GetScore(i), t
    tc = json.loads((folder / "tokenizer_config.json").read_text())
    for k, d in tc.get("added_tokens_decoder", {}).items():
        i = int(k)
        if i >= n:
            continue
        tok = d["content"]
        if d.get("special") or looks_special(tok):
            types[i] = CONTROL
        else:
            tok = tok.replace("\u2581", " ")
            types[i] = USER_DEFINED
        tokens[i], scores[i] = tok, -1000.0
    return tokens, scores, types


def bpe_expected(folder):
    """llama.cpp's get_vocab_base over gguf-py's BpeVocab reading of tokenizer.json."""
    cfg = json.loads((folder / "config.json").read_text())
    tj = json.loads((folder / "tokenizer.json").read_text())
    bv = gguf.vocab.BpeVocab(folder)
    by_id = {i: t for t, i in bv.vocab.items()}
    by_id.update({i: t for t, i in bv.added_tokens_dict.items()})
    added = {a["id"]: a for a in tj["added_tokens"]}
    n = cfg.get("vocab_size", bv.vocab_size)
    tokens, types = [], []
    for i in range(n):
        if i not in by_id:
            tokens.append(f"[PAD{i}]")
            types.append(UNUSED)
        elif i in added:
            tok = by_id[i]
            if added[i]["special"] or looks_special(tok):
                types.append(CONTROL)
            else:
                tok = tok.replace("\u2581", " ")
                types.append(USER_DEFINED)
            tokens.append(tok)
        else:
            tokens.append(by_id[i])
            types.append(NORMAL)
    return tokens, types


SPECIAL_KEYS = {"bos": "tokenizer.ggml.bos_token_id", "eos": "tokenizer.ggml.eos_token_id",
                "unk": "tokenizer.ggml.unknown_token_id",
                "sep": "tokenizer.ggml.seperator_token_id",
                "pad": "tokenizer.ggml.padding_token_id", "mask": "tokenizer.ggml.mask_token_id"}


def check_special(d, sv):
    want = {SPECIAL_KEYS[t]: i for t, i in sv.special_token_ids.items() if t in SPECIAL_KEYS}
    got = {k: v["value"] for k, v in d.items() if k.endswith("_token_id")}
    assert got == want
    for k in got:
        assert d[k]["type"] == "u32"
    want_add = {f"tokenizer.ggml.add_{t}_token": v for t, v in sv.add_special_token.items()
                if t in ("bos", "eos", "sep")}
    got_add = {k: v["value"] for k, v in d.items() if k.startswith("tokenizer.ggml.add_")}
    assert got_add == want_add
    for k in got_add:
        assert d[k]["type"] == "bool"
    if sv.chat_template is None:
        assert "tokenizer.chat_template" not in d
    else:
        assert val(d, "tokenizer.chat_template") == sv.chat_template


def test_spm_vocab_matches_sentencepiece_and_converter_rules():
    folder = HF / "llama-spm"
    d = dump(folder)
    tokens, scores, types = spm_expected(folder)
    assert val(d, "tokenizer.ggml.model") == "llama"
    assert val(d, "tokenizer.ggml.pre") == "default"
    assert d["tokenizer.ggml.tokens"]["type"] == "array[string]"
    assert d["tokenizer.ggml.scores"]["type"] == "array[f32]"
    assert d["tokenizer.ggml.token_type"]["type"] == "array[i32]"
    assert val(d, "tokenizer.ggml.tokens") == tokens
    assert val(d, "tokenizer.ggml.scores") == [f32(s) for s in scores]
    assert val(d, "tokenizer.ggml.token_type") == types
    # The fixture exercises every path: byte pieces, control, unknown, user-defined.
    # (<unk> is listed in added_tokens_decoder as special, so it ends up control.)
    assert {NORMAL, CONTROL, BYTE} <= set(types) and UNKNOWN not in types
    assert "tokenizer.ggml.merges" not in d
    sv = gguf.SpecialVocab(folder, n_vocab=len(tokens))
    check_special(d, sv)
    assert val(d, "tokenizer.ggml.add_bos_token") is True
    assert "messages" in val(d, "tokenizer.chat_template")


@pytest.mark.parametrize("name,pre", [("llama-bpe", "llama-bpe"), ("qwen2", "qwen2")])
def test_bpe_vocab_matches_gguf_py(name, pre):
    folder = HF / name
    d = dump(folder)
    tokens, types = bpe_expected(folder)
    assert val(d, "tokenizer.ggml.model") == "gpt2"
    assert val(d, "tokenizer.ggml.pre") == pre
    assert val(d, "tokenizer.ggml.tokens") == tokens
    assert val(d, "tokenizer.ggml.token_type") == types
    assert "tokenizer.ggml.scores" not in d
    sv = gguf.SpecialVocab(folder, load_merges=True)
    assert val(d, "tokenizer.ggml.merges") == sv.merges
    assert len(sv.merges) > 50
    check_special(d, sv)


def test_bpe_fixture_types_cover_added_and_padding():
    _, types = bpe_expected(HF / "llama-bpe")
    assert types.count(CONTROL) == 3 and types.count(USER_DEFINED) == 1
    qd = dump(HF / "qwen2")
    toks = val(qd, "tokenizer.ggml.tokens")
    assert len(toks) == 384 and toks[-1] == "[PAD383]"
    assert val(qd, "tokenizer.ggml.token_type")[-1] == UNUSED


def test_merge_pairs_with_spaces_are_encoded_like_gguf_py(tmp_path):
    folder = tmp_path / "m"
    shutil.copytree(HF / "llama-bpe", folder)
    tj = json.loads((folder / "tokenizer.json").read_text())
    tj["model"]["merges"][0] = ["a b", "c"]
    (folder / "tokenizer.json").write_text(json.dumps(tj))
    d = dump(folder)
    sv = gguf.SpecialVocab(folder, load_merges=True)
    assert val(d, "tokenizer.ggml.merges")[0] == sv.merges[0] == "a\u0120b c"


def test_unknown_pre_tokenizer_is_refused_and_override_works(tmp_path):
    folder = tmp_path / "p"
    shutil.copytree(HF / "llama-bpe", folder)
    tj = json.loads((folder / "tokenizer.json").read_text())
    tj["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = r"\s+|\S+"
    (folder / "tokenizer.json").write_text(json.dumps(tj))
    out = subprocess.run([str(DUMP), str(folder)], capture_output=True, text=True)
    assert out.returncode == 1
    assert out.stderr.startswith("unsupported:") and "--pre" in out.stderr
    assert val(dump(folder, "--pre", "my-pre"), "tokenizer.ggml.pre") == "my-pre"


def test_config_keys_and_types():
    for name in ("llama-spm", "llama-bpe", "qwen2"):
        cfg = json.loads((HF / name / "config.json").read_text())
        d = dump(HF / name)
        arch = val(d, "general.architecture")
        assert arch == {"LlamaForCausalLM": "llama", "Qwen2ForCausalLM": "qwen2"}[
            cfg["architectures"][0]]
        u32 = {"context_length": cfg["max_position_embeddings"],
               "embedding_length": cfg["hidden_size"], "block_count": cfg["num_hidden_layers"],
               "feed_forward_length": cfg["intermediate_size"],
               "attention.head_count": cfg["num_attention_heads"],
               "attention.head_count_kv": cfg["num_key_value_heads"],
               "vocab_size": cfg["vocab_size"],
               "rope.dimension_count": cfg["hidden_size"] // cfg["num_attention_heads"]}
        if arch == "qwen2":     # convert_hf_to_gguf.py writes these two for llama only
            for k in ("vocab_size", "rope.dimension_count"):
                assert f"{arch}.{k}" not in d
                del u32[k]
        for k, v in u32.items():
            assert d[f"{arch}.{k}"] == {"type": "u32", "value": v}, k
        f32s = {"attention.layer_norm_rms_epsilon": cfg["rms_norm_eps"],
                "rope.freq_base": cfg["rope_theta"]}
        for k, v in f32s.items():
            assert d[f"{arch}.{k}"] == {"type": "f32", "value": f32(v)}, k
        rs = cfg.get("rope_scaling")
        if rs:
            assert val(d, f"{arch}.rope.scaling.type") == rs["type"]
            assert d[f"{arch}.rope.scaling.factor"] == {"type": "f32", "value": rs["factor"]}
        else:
            assert f"{arch}.rope.scaling.type" not in d
    assert val(dump(HF / "qwen2"), "qwen2.rope.scaling.original_context_length") == 128


def test_unsupported_architecture_is_named(tmp_path):
    folder = tmp_path / "a"
    shutil.copytree(HF / "qwen2", folder)
    cfg = json.loads((folder / "config.json").read_text())
    cfg["architectures"] = ["GPTNeoXForCausalLM"]
    (folder / "config.json").write_text(json.dumps(cfg))
    out = subprocess.run([str(DUMP), str(folder)], capture_output=True, text=True)
    assert out.returncode == 1 and "GPTNeoXForCausalLM" in out.stderr
    assert out.stderr.startswith("unsupported:")


def fixture_tensor_names(name):
    names = []
    for f in sorted((HF / name).glob("*.safetensors")):
        with safe_open(str(f), framework="numpy") as st:
            names += list(st.keys())
    return names


@pytest.mark.parametrize("name,arch", [("llama-spm", gguf.MODEL_ARCH.LLAMA),
                                       ("llama-bpe", gguf.MODEL_ARCH.LLAMA),
                                       ("qwen2", gguf.MODEL_ARCH.QWEN2)])
def test_tensor_names_match_gguf_py(name, arch):
    names = fixture_tensor_names(name)
    out = subprocess.run([str(DUMP), "--names", "4"], input="\n".join(names) + "\n",
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    tmap = gguf.get_tensor_name_map(arch, 4)
    rows = [line.split("\t") for line in out.stdout.splitlines()]
    assert [r[0] for r in rows] == names
    for hf, ours, role in rows:
        if hf.endswith("rotary_emb.inv_freq"):
            assert ours == "-" and role == "drop"
            continue
        assert ours == tmap.get_name(hf, try_suffixes=(".weight", ".bias")), hf
        assert role == ("q" if "q_proj" in hf else "k" if "k_proj" in hf else "plain")


def test_unknown_tensor_name_is_refused():
    out = subprocess.run([str(DUMP), "--names", "4"], input="model.layers.0.mlp.experts.w1\n",
                         capture_output=True, text=True)
    assert out.returncode == 1 and "model.layers.0.mlp.experts.w1" in out.stderr


def llama_permute(w, n_head):
    """llama.cpp's LlamaModel.permute (n_head already the kv count for K)."""
    return (w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:])
            .swapaxes(1, 2).reshape(w.shape))


@pytest.mark.parametrize("tensor,heads", [("model.layers.1.self_attn.q_proj.weight", 4),
                                          ("model.layers.1.self_attn.k_proj.weight", 2),
                                          ("model.layers.2.self_attn.q_proj.bias", 4),
                                          ("model.layers.2.self_attn.k_proj.bias", 2)])
def test_permutation_matches_converter(tmp_path, tensor, heads):
    with safe_open(str(HF / "qwen2" / "model.safetensors"), framework="numpy") as st:
        w = st.get_tensor(tensor)
    rows = w.shape[0]
    rb = w.nbytes // rows
    src, fwd, back = tmp_path / "src", tmp_path / "fwd", tmp_path / "back"
    src.write_bytes(w.tobytes())
    args = [str(DUMP), "--permute", str(rows), str(rb), str(heads)]
    subprocess.run(args + [str(src), str(fwd)], check=True)
    want = llama_permute(w, heads)
    assert not np.array_equal(want, w)
    got = np.frombuffer(fwd.read_bytes(), dtype=w.dtype).reshape(w.shape)
    assert np.array_equal(got, want)
    subprocess.run(args + [str(fwd), str(back), "inverse"], check=True)
    assert back.read_bytes() == src.read_bytes()


def test_spm_added_tokens_json_and_bad_decoder_entry(tmp_path):
    folder = tmp_path / "s"
    shutil.copytree(HF / "llama-spm", folder)
    (folder / "added_tokens.json").write_text(json.dumps({"<extra>": 7, "<far>": 100000}))
    d = dump(folder)
    assert val(d, "tokenizer.ggml.tokens")[7] == "<extra>"
    assert val(d, "tokenizer.ggml.token_type")[7] == USER_DEFINED
    assert val(d, "tokenizer.ggml.scores")[7] == -1000.0
    tc = json.loads((folder / "tokenizer_config.json").read_text())
    tc["added_tokens_decoder"]["x"] = {"content": "<x>"}
    (folder / "tokenizer_config.json").write_text(json.dumps(tc))
    out = subprocess.run([str(DUMP), str(folder)], capture_output=True, text=True)
    assert out.returncode == 1
    assert out.stderr.startswith("malformed:") and "tokenizer_config.json" in out.stderr


def test_generation_config_fills_ids_config_json_lacks(tmp_path):
    """Our extension over SpecialVocab: generation_config.json is the last source."""
    folder = tmp_path / "g"
    shutil.copytree(HF / "llama-bpe", folder)
    cfg = json.loads((folder / "config.json").read_text())
    del cfg["bos_token_id"], cfg["eos_token_id"]
    (folder / "config.json").write_text(json.dumps(cfg))
    tc = json.loads((folder / "tokenizer_config.json").read_text())
    del tc["eos_token"]
    (folder / "tokenizer_config.json").write_text(json.dumps(tc))
    (folder / "special_tokens_map.json").write_text("{}")
    gen = json.loads((folder / "generation_config.json").read_text())
    d = dump(folder)
    assert val(d, "tokenizer.ggml.bos_token_id") == 360          # from tokenizer_config
    assert val(d, "tokenizer.ggml.eos_token_id") == gen["eos_token_id"][0] == 361
