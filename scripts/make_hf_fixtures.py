#!/usr/bin/env python3
"""Generates the tiny Hugging Face model folders under fixtures/hf/.

Run with the separate venv that has transformers, tokenizers and sentencepiece:
    python3 -m venv build/hf-venv
    build/hf-venv/bin/pip install -r scripts/hf/requirements.txt
    build/hf-venv/bin/python scripts/make_hf_fixtures.py [fixtures/hf [NAME...]]

With NAMEs, only those folders are made (and only their MANIFEST rows printed):
sentencepiece's trainer does not give the same tokenizer.model on every machine, so
remaking everything would churn llama-spm for nothing.

What is made by which producer:
  - config.json, generation_config.json: transformers' own config classes (save_pretrained).
  - tokenizer.model: sentencepiece's trainer on scripts/hf/corpus.txt.
  - tokenizer.json: tokenizers' BPE trainer on the same corpus.
  - tokenizer_config.json, special_tokens_map.json: transformers' tokenizer classes
    (save_pretrained) wrapping the trained tokenizers.
  - *.safetensors: safetensors' own serializer (safetensors.serialize_file), fed raw
    little-endian bytes from numpy with fixed seeds. torch is not installed (its
    wheel is gigabytes); transformers only needs it to save a model object, and the
    file format written by the serializer is the same. fixtures/hf/llama-tf, made by
    scripts/make_hf_tf_fixture.py in the torch venv, is the folder whose weights
    transformers' save_pretrained wrote itself.
Deliberate edits, each named here:
  - llama-spm gets a rotary_emb.inv_freq tensor like older transformers checkpoints
    carried, so the converter's "drop it" rule is exercised.
  - qwen2's tokenizer.json merges are rewritten to the older "a b" string form
    (tokenizers >= 0.20 writes ["a", "b"] pairs), so both forms are covered.
"""
import hashlib
import json
import os
import shutil
import sys
import tempfile

import numpy as np
import safetensors
import sentencepiece as spm
import tokenizers
import transformers
from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, processors, trainers
from transformers import (GenerationConfig, LlamaConfig, LlamaTokenizer, PreTrainedTokenizerFast,
                          Qwen2Config)

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "hf", "corpus.txt")

LLAMA3_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
                r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|"
               r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")

CHAT_TEMPLATE = ("{% for m in messages %}{{ '<' + m['role'] + '>' + m['content'] }}{% endfor %}"
                 "{% if add_generation_prompt %}{{ '<assistant>' }}{% endif %}")


def producer_of(fn):
    """Which library wrote a file (the rest are transformers' save_pretrained)."""
    if fn.endswith(".safetensors"):
        return "safetensors"
    if fn.endswith(".model"):
        return "sentencepiece"
    return {"tokenizer.model": "sentencepiece", "tokenizer.json": "tokenizers",
             "model.safetensors.index.json": "make_hf_fixtures.py"}.get(
        fn, "transformers")


def to_bf16_bytes(x):
    """float32 -> bfloat16 bits, round to nearest even (what torch's .to(bfloat16) does)."""
    u = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    return u.astype("<u2").tobytes()


def tensor_entry(x, dtype, keep):
    """A safetensors.TensorSpec over little-endian bytes that `keep` holds alive."""
    if dtype == "bfloat16":
        buf = np.frombuffer(to_bf16_bytes(x), dtype=np.uint8).copy()
    elif dtype == "float16":
        buf = np.ascontiguousarray(x.astype("<f2")).view(np.uint8).reshape(-1)
    else:
        buf = np.ascontiguousarray(x.astype("<f4")).view(np.uint8).reshape(-1)
    keep.append(buf)
    return safetensors.TensorSpec(dtype=dtype, shape=list(x.shape), data_ptr=buf.ctypes.data,
                                  data_len=buf.nbytes)


def llama_weights(rng, cfg, biases, tied):
    """HF tensor names and float32 values for a llama-family decoder."""
    h, inter, v = cfg.hidden_size, cfg.intermediate_size, cfg.vocab_size
    hd = getattr(cfg, "head_dim", None) or h // cfg.num_attention_heads
    q = cfg.num_attention_heads * hd
    kv = cfg.num_key_value_heads * hd
    w = {"model.embed_tokens.weight": rng.standard_normal((v, h)) * 0.02,
         "model.norm.weight": 1.0 + rng.standard_normal(h) * 0.1}
    if not tied:
        w["lm_head.weight"] = rng.standard_normal((v, h)) * 0.02
    for i in range(cfg.num_hidden_layers):
        p = f"model.layers.{i}."
        w[p + "input_layernorm.weight"] = 1.0 + rng.standard_normal(h) * 0.1
        w[p + "post_attention_layernorm.weight"] = 1.0 + rng.standard_normal(h) * 0.1
        w[p + "self_attn.q_proj.weight"] = rng.standard_normal((q, h)) * 0.1
        w[p + "self_attn.k_proj.weight"] = rng.standard_normal((kv, h)) * 0.1
        w[p + "self_attn.v_proj.weight"] = rng.standard_normal((kv, h)) * 0.1
        w[p + "self_attn.o_proj.weight"] = rng.standard_normal((h, q)) * 0.1
        if biases:
            w[p + "self_attn.q_proj.bias"] = rng.standard_normal(q) * 0.1
            w[p + "self_attn.k_proj.bias"] = rng.standard_normal(kv) * 0.1
            w[p + "self_attn.v_proj.bias"] = rng.standard_normal(kv) * 0.1
        w[p + "mlp.gate_proj.weight"] = rng.standard_normal((inter, h)) * 0.1
        w[p + "mlp.up_proj.weight"] = rng.standard_normal((inter, h)) * 0.1
        w[p + "mlp.down_proj.weight"] = rng.standard_normal((h, inter)) * 0.1
    return {k: np.asarray(x, dtype=np.float32) for k, x in w.items()}


def save_shards(out, weights, dtype, shards):
    """shards: list of name lists; one entry -> model.safetensors, else an index too."""
    meta, keep = {"format": "pt"}, []
    if len(shards) == 1:
        safetensors.serialize_file({k: tensor_entry(weights[k], dtype, keep) for k in shards[0]},
                                   os.path.join(out, "model.safetensors"), meta)
        return
    weight_map, total = {}, 0
    for i, names in enumerate(shards):
        fn = f"model-{i + 1:05d}-of-{len(shards):05d}.safetensors"
        entries = {k: tensor_entry(weights[k], dtype, keep) for k in names}
        safetensors.serialize_file(entries, os.path.join(out, fn), meta)
        for k in names:
            weight_map[k] = fn
            total += entries[k].data_len
    index = {"metadata": {"total_size": total}, "weight_map": dict(sorted(weight_map.items()))}
    with open(os.path.join(out, "model.safetensors.index.json"), "w") as f:
        json.dump(index, f, indent=2)
        f.write("\n")


def make_llama_spm(out):
    """(a) llama, SentencePiece tokenizer, bf16, one file, rope_theta 500000, untied."""
    # The trainer records model_prefix in the file, so train under a relative name
    # in a temporary directory to keep the bytes reproducible.
    tmp, cwd = tempfile.mkdtemp(), os.getcwd()
    os.chdir(tmp)
    spm.SentencePieceTrainer.train(
        input=CORPUS, model_prefix="tok", vocab_size=400, model_type="bpe",
        byte_fallback=True, user_defined_symbols=["<tool>"], control_symbols=["<ctl>"],
        character_coverage=1.0, num_threads=1, seed_sentencepiece_size=100000,
        minloglevel=2)
    os.chdir(cwd)
    tok = LlamaTokenizer(vocab_file=os.path.join(tmp, "tok.model"), legacy=True)
    tok.chat_template = CHAT_TEMPLATE
    tok.save_pretrained(out)
    shutil.rmtree(tmp)
    cfg = LlamaConfig(vocab_size=400, hidden_size=64, intermediate_size=128, num_hidden_layers=4,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
                      rope_theta=500000.0, rms_norm_eps=1e-5, bos_token_id=1, eos_token_id=2,
                      tie_word_embeddings=False, torch_dtype="bfloat16",
                      architectures=["LlamaForCausalLM"])
    cfg.save_pretrained(out)
    GenerationConfig(bos_token_id=1, eos_token_id=2, do_sample=True, temperature=0.6,
                     top_p=0.9).save_pretrained(out)
    rng = np.random.default_rng(1001)
    w = llama_weights(rng, cfg, biases=False, tied=False)
    hd = cfg.hidden_size // cfg.num_attention_heads
    inv = 1.0 / (cfg.rope_theta ** (np.arange(0, hd, 2, dtype=np.float32) / hd))
    w["model.layers.0.self_attn.rotary_emb.inv_freq"] = inv.astype(np.float32)
    save_shards(out, w, "bfloat16", [sorted(w)])


def make_spm_seed(out):
    """fixtures/spm/tiny.model: a small real tokenizer.model (identity normaliser, so no
    charsmap) to seed the protobuf fuzzer."""
    tmp, cwd = tempfile.mkdtemp(), os.getcwd()
    os.chdir(tmp)
    spm.SentencePieceTrainer.train(
        input=CORPUS, model_prefix="tiny", vocab_size=120, model_type="unigram",
        normalization_rule_name="identity", user_defined_symbols=["<u>"],
        control_symbols=["<c>"], character_coverage=1.0, num_threads=1, minloglevel=2)
    os.chdir(cwd)
    shutil.copy(os.path.join(tmp, "tiny.model"), os.path.join(out, "tiny.model"))
    shutil.rmtree(tmp)


def train_bpe(pattern, specials, added, vocab_size, bos_template):
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(pattern), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=1, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train([CORPUS], trainer)
    tok.add_special_tokens(specials)
    tok.add_tokens(added)
    if bos_template:
        bos = specials[0]
        tok.post_processor = processors.Sequence([
            processors.ByteLevel(trim_offsets=False),
            processors.TemplateProcessing(single=f"{bos} $A", pair=f"{bos} $A {bos} $B:1",
                                          special_tokens=[(bos, tok.token_to_id(bos))])])
    else:
        tok.post_processor = processors.ByteLevel(trim_offsets=False)
    return tok


def make_llama_bpe(out):
    """(b) llama, llama3-style byte-level BPE, f16, two shards, tied embeddings."""
    specials = ["<|begin_of_text|>", "<|end_of_text|>", "<|eot_id|>"]
    tok = train_bpe(LLAMA3_REGEX, specials, ["<extra_word>"], 360, bos_template=True)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token=specials[0],
                                   eos_token=specials[1], model_max_length=256)
    fast.save_pretrained(out)
    n = tok.get_vocab_size(with_added_tokens=True)
    cfg = LlamaConfig(vocab_size=n, hidden_size=64, intermediate_size=128, num_hidden_layers=4,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
                      rope_theta=500000.0, rms_norm_eps=1e-5,
                      bos_token_id=tok.token_to_id(specials[0]),
                      eos_token_id=tok.token_to_id(specials[1]), tie_word_embeddings=True,
                      torch_dtype="float16", architectures=["LlamaForCausalLM"],
                      rope_scaling={"type": "linear", "factor": 2.0})
    cfg.save_pretrained(out)
    GenerationConfig(bos_token_id=cfg.bos_token_id,
                     eos_token_id=[cfg.eos_token_id, tok.token_to_id("<|eot_id|>")]
                     ).save_pretrained(out)
    w = llama_weights(np.random.default_rng(2002), cfg, biases=False, tied=True)
    first = [k for k in w if k.startswith(("model.embed_tokens", "model.layers.0.",
                                           "model.layers.1."))]
    save_shards(out, w, "float16", [sorted(first), sorted(set(w) - set(first))])


def make_qwen2(out):
    """(c) qwen2, q/k/v biases, f32, config vocab padded past the tokenizer's."""
    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    tok = train_bpe(QWEN2_REGEX, specials, [], 340, bos_template=False)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>",
                                   pad_token="<|endoftext|>", model_max_length=256)
    fast.save_pretrained(out)
    path = os.path.join(out, "tokenizer.json")
    with open(path, encoding="utf-8") as f:
        tj = json.load(f)
    tj["model"]["merges"] = [" ".join(p) for p in tj["model"]["merges"]]
    with open(path, "w", encoding="utf-8") as f:
        json.dump(tj, f, indent=2, ensure_ascii=False)
    n = tok.get_vocab_size(with_added_tokens=True)
    cfg = Qwen2Config(vocab_size=(n + 63) // 64 * 64, hidden_size=64, intermediate_size=128,
                      num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2,
                      max_position_embeddings=512, rope_theta=1000000.0, rms_norm_eps=1e-6,
                      bos_token_id=tok.token_to_id("<|endoftext|>"),
                      eos_token_id=tok.token_to_id("<|im_end|>"), tie_word_embeddings=False,
                      torch_dtype="float32", architectures=["Qwen2ForCausalLM"],
                      rope_scaling={"type": "yarn", "factor": 4.0,
                                    "original_max_position_embeddings": 128})
    cfg.save_pretrained(out)
    w = llama_weights(np.random.default_rng(3003), cfg, biases=True, tied=False)
    save_shards(out, w, "float32", [sorted(w)])


def make_llama_q9(out):
    """(d) for gguf-quantize's mixes: llama, 10 layers (use_more_bits reaches its i < n/8
    case and two-digit layers sort by number), tied embeddings (token_embd.weight takes
    output.weight's rules), 6 heads over 1 KV head (GQA 6 >= 4), hidden 256 (whole K
    blocks), head_dim 8 (attn_output rows of 48 values: not even whole 32-blocks, so
    every type falls back to F16), intermediate 32 (ffn_down rows of 32: the K types fall
    back to 32-blocks), bf16, llama3-style BPE."""
    specials = ["<|begin_of_text|>", "<|end_of_text|>", "<|eot_id|>"]
    tok = train_bpe(LLAMA3_REGEX, specials, [], 360, bos_template=True)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token=specials[0],
                                   eos_token=specials[1], model_max_length=256)
    fast.save_pretrained(out)
    n = tok.get_vocab_size(with_added_tokens=True)
    cfg = LlamaConfig(vocab_size=n, hidden_size=256, intermediate_size=32, num_hidden_layers=10,
                      num_attention_heads=6, num_key_value_heads=1, head_dim=8,
                      max_position_embeddings=256, rope_theta=500000.0, rms_norm_eps=1e-5,
                      bos_token_id=tok.token_to_id(specials[0]),
                      eos_token_id=tok.token_to_id(specials[1]), tie_word_embeddings=True,
                      torch_dtype="bfloat16", architectures=["LlamaForCausalLM"])
    cfg.save_pretrained(out)
    w = llama_weights(np.random.default_rng(4004), cfg, biases=False, tied=True)
    save_shards(out, w, "bfloat16", [sorted(w)])


def make_qwen2_k(out):
    """(e) for gguf-quantize: qwen2, hidden and intermediate 256 (every weight row whole
    K blocks: real Q4_K/Q6_K everywhere, ffn_down's use_more_bits visible), 4 heads over
    1 KV head (GQA 4), 2 layers, untied output, q/k/v biases, f16."""
    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    tok = train_bpe(QWEN2_REGEX, specials, [], 340, bos_template=False)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>",
                                   pad_token="<|endoftext|>", model_max_length=256)
    fast.save_pretrained(out)
    n = tok.get_vocab_size(with_added_tokens=True)
    cfg = Qwen2Config(vocab_size=(n + 63) // 64 * 64, hidden_size=256, intermediate_size=256,
                      num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=1,
                      max_position_embeddings=512, rope_theta=1000000.0, rms_norm_eps=1e-6,
                      bos_token_id=tok.token_to_id("<|endoftext|>"),
                      eos_token_id=tok.token_to_id("<|im_end|>"), tie_word_embeddings=False,
                      torch_dtype="float16", architectures=["Qwen2ForCausalLM"])
    cfg.save_pretrained(out)
    w = llama_weights(np.random.default_rng(5005), cfg, biases=True, tied=False)
    save_shards(out, w, "float16", [sorted(w)])


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "fixtures/hf"
    makers = {"llama-spm": make_llama_spm, "llama-bpe": make_llama_bpe, "qwen2": make_qwen2,
              "llama-q9": make_llama_q9, "qwen2-k": make_qwen2_k}
    only = sys.argv[2:]
    versions = (f"transformers={transformers.__version__};tokenizers={tokenizers.__version__};"
                f"sentencepiece={spm.__version__};safetensors={safetensors.__version__}")
    walked = []
    for name, make in makers.items():
        if only and name not in only:
            continue
        out = os.path.join(root, name)
        shutil.rmtree(out, ignore_errors=True)
        os.makedirs(out)
        make(out)
        walked += list(os.walk(out))
    seed = os.path.join(os.path.dirname(root.rstrip("/")), "spm")
    if not only:
        shutil.rmtree(seed, ignore_errors=True)
        os.makedirs(seed)
        make_spm_seed(seed)
        walked += list(os.walk(seed))
    # MANIFEST.tsv rows (file, producer, producer_version, sha256) for fixtures/MANIFEST.tsv.
    for dirpath, _, files in sorted(walked):
        for fn in sorted(files):
            path = os.path.join(dirpath, fn)
            with open(path, "rb") as f:
                digest = hashlib.sha256(f.read()).hexdigest()
            print(f"{os.path.relpath(path, os.path.dirname(root.rstrip('/')))}\t"
                  f"{producer_of(fn)}\t{versions}\t{digest}")


if __name__ == "__main__":
    main()
