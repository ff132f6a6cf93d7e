#!/usr/bin/env python3
"""Generates the fixture folders of the families transformers 5 made: fixtures/hf/qwen3,
qwen3moe, qwen3moe-fused, gemma3, mixtral, phi3, qwen35, qwen35moe, gemma4 and
gemma4moe.

Unlike make_hf_fixtures.py (numpy through safetensors' serializer, transformers 4.46),
every file here except tokenizer.model is written by transformers 5 itself: the model is
<Family>ForCausalLM(config) built by torch under a fixed seed, its weights spread so
that norms, projections and routers are not their near-trivial initial values, cast to
bfloat16 (what the Hub's checkpoints of all five families use) and written by
save_pretrained; the tokenizer is trained on scripts/hf/corpus.txt and written by the
family's transformers tokenizer class.

Run with the transformers-5 venv (scripts/hf/make-tf5-venv.sh; torch from
$LC_TORCH_SITE):
    build/tf5-venv/bin/python scripts/make_hf_tf5_fixtures.py [NAME...]
It replaces the fixtures/MANIFEST.tsv rows of the folders it makes.

Sizes: each folder plus its four reference GGUFs stays under 1.5 MiB, so the MoE
families use hidden 32 and expert width 32 (eight experts of two layers dominate).

What transformers 5 writes, and the deliberate edits, each named here:
  - config.json is transformers 5's: "dtype" (not "torch_dtype"), RoPE under
    "rope_parameters" (no top-level "rope_theta"; gemma3's holds "full_attention" and
    "sliding_attention" entries), qwen3moe's expert count as "num_local_experts" (the
    Hub's Qwen3-MoE configs say "num_experts"), gemma3's "_sliding_window_pattern".
  - MoE experts: transformers 5 holds them fused in memory (experts.gate_up_proj
    [n_expert, 2 * n_ff, n_embd], experts.down_proj [n_expert, n_embd, n_ff]) but its
    save_pretrained reverses its loading conversion and writes the Hub's per-expert
    layout: mixtral block_sparse_moe.experts.N.w1/w2/w3.weight, qwen3moe
    mlp.experts.N.gate_proj/up_proj/down_proj.weight. So both MoE folders are
    per-expert, and qwen3moe-fused is the one edit: qwen3moe's very tensors
    re-serialized (safetensors.torch) in the fused layout, which the pinned converter
    also reads for Qwen2/3-MoE (never for Mixtral), and its config.json spells the
    expert count "num_experts" as the Hub's Qwen3-MoE configs do. Otherwise its config,
    tokenizer and logits are qwen3moe's (checked here: transformers loads both to the
    same logits; make_llama_ref.py checks that the converter writes the same bytes).
  - tokenizer_config.json: transformers 5's "extra_special_tokens" list renamed
    "additional_special_tokens" (see save_tokenizer: the pinned converter's
    transformers 4.57.6 fails on the list).
  - tokenizer.model: transformers 5's tokenizers are all tokenizers-backed and no
    longer write it, but the Hub's gemma3, mixtral and phi3 folders ship it and the
    converter reads it; the sentencepiece file the tokenizer was made from is copied in.
  - mixtral is sharded (small max_shard_size): layer 0's w1/w2 of every expert lie in
    the first file, its w3 in the second, so stacking an expert tensor reads both.
  - MoE routers: the seed is the first from the base one whose router logits, over
    fixtures/infer/tokens.txt, keep the k-th and (k+1)-th choices of every token and
    layer at least ROUTER_GAP apart, so llama.cpp's rounded activations (f16, bf16,
    Q8_0 references) pick the same experts as transformers' float32.
Per family, what is exercised (and why the value):
  qwen3     head_dim 32 != hidden 64 / 4 heads, q_norm/k_norm, tied embeddings, GQA 2,
            byte-level BPE with Qwen2's regex and NFC normalizer (Qwen2Tokenizer), a
            chat template (transformers 5 writes chat_template.jinja), non-special added
            tokens <think> </think>, config vocabulary padded past the tokenizer's.
  qwen3moe  8 experts (llama.cpp's quantize rules for n_expert == 8 fire), top-2,
            norm_topk_prob true (llama.cpp always renormalises for qwen3moe),
            moe_intermediate_size 32 != intermediate_size 64, head_dim 16 != 32 / 4.
  gemma3    6 layers: llama.cpp has no per-layer pattern key for gemma3 and uses every
            6th layer global, as transformers' default layer_types (5 sliding, 1 full);
            sliding_window 8 (< the 24 test tokens), RoPE base 1e5 global / 1e3 local,
            query_pre_attn_scalar = head_dim 32 (llama.cpp ignores the key and scales by
            1/sqrt(head_dim) except for its 62-layer 27B), final_logit_softcapping 3
            (it bends these logits: the largest is 1.8 after it), attn_logit_softcapping null (the converter
            asserts it), head_dim 32 != 32 / 2, tied embeddings, SentencePiece with
            Gemma's layout (pad 0, eos 1, bos 2, unk 3, no dummy prefix, identity
            normaliser, split digits, byte fallback), vocabulary padded (tokens become
            [PAD..]), norms stored zero-centred (the converter adds 1).
  mixtral   8 experts top-2, GQA 2, untied, llama-style SentencePiece, sharded.
  phi3      fused qkv_proj (GQA: 64 + 2 * 32 rows) and gate_up_proj, longrope with
            original_max_position_embeddings 16 < max 64 (attention factor
            sqrt(1 + ln 4 / ln 16)); the 24 test tokens and llama.cpp's context (>= 256
            after padding) both exceed 16, so both use long_factor; sliding_window 2047
            as Phi-3-mini's (llama.cpp disables Phi SWA; it never bites on 24 tokens);
            SentencePiece plus 4 added special tokens and a padded vocabulary.
"""
import copy
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
import torch
import transformers
from safetensors.torch import load_file, save_file
from tokenizers import Regex, Tokenizer, models, normalizers, pre_tokenizers, trainers
from transformers import (AutoModelForCausalLM, Gemma3ForCausalLM, Gemma3TextConfig,
                          Gemma4ForCausalLM, Gemma4TextConfig,
                          GemmaTokenizer, LlamaTokenizer, MixtralConfig, MixtralForCausalLM,
                          Phi3Config, Phi3ForCausalLM, Qwen2Tokenizer, Qwen3Config,
                          Qwen3ForCausalLM, Qwen3MoeConfig, Qwen3MoeForCausalLM,
                          Qwen3_5ForCausalLM, Qwen3_5TextConfig, Qwen3_5MoeForCausalLM,
                          Qwen3_5MoeTextConfig)
from transformers.models.qwen2.tokenization_qwen2 import PRETOKENIZE_REGEX
from transformers.models.qwen3_5.tokenization_qwen3_5 import (
    PRETOKENIZE_REGEX as QWEN35_REGEX, Qwen3_5Tokenizer)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIX = os.path.join(ROOT, "fixtures")
CORPUS = os.path.join(ROOT, "scripts", "hf", "corpus.txt")
TOKENS = [int(x) for x in open(os.path.join(FIX, "infer", "tokens.txt")).read().split(",")]
# The hybrid families' longer sequence (make_infer_ref.py writes it): the recurrent state
# and transformers' 64-token chunks of the delta rule both matter past 64 tokens.
TOKENS_LONG = [int(x) for x in
               open(os.path.join(FIX, "infer", "tokens-long.txt")).read().split(",")]
ROUTER_GAP = 0.1
FLOAT32_ERROR = 1e-5
CHAT_TEMPLATE = ("{% for m in messages %}{{ '<|im_start|>' + m['role'] + '\\n' + m['content'] + "
                 "'<|im_end|>\\n' }}{% endfor %}"
                 "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}")


def spread(model, seed, zero_norms=False, router=None):
    """Every weight drawn again under `seed`: norms 1 + N(0, 0.1) (gemma's zero-centred
    N(0, 0.1): it multiplies by 1 + w), routers N(0, 1) so their choices are clear, the
    rest N(0, 0.1)."""
    torch.manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.copy_(torch.randn_like(p) * 0.1 + (0.0 if zero_norms else 1.0))
            elif router and name.endswith(router):
                p.copy_(torch.randn_like(p))
            else:
                p.copy_(torch.randn_like(p) * 0.1)


def router_gap(model, tokens=None):
    """The smallest logit gap between the k-th and (k+1)-th expert of any token and layer,
    with the model's weights as bfloat16 widened to float32 (what the references hold)."""
    m = model.to(torch.bfloat16).to(torch.float32).eval()
    k = m.config.num_experts_per_tok
    with torch.no_grad():
        out = m(torch.tensor([tokens or TOKENS]), output_router_logits=True, use_cache=False)
    gaps = []
    for r in out.router_logits:
        top = torch.topk(r.reshape(-1, r.shape[-1]).float(), k + 1, dim=-1).values
        gaps.append(float((top[:, k - 1] - top[:, k]).min()))
    return min(gaps)


def float32_error(model, tokens):
    """max |float32 logits - float64 logits| / max |float64 logits| of the model (its
    bfloat16 weights), eager experts: how far float32 arithmetic alone moves them."""
    m = copy.deepcopy(model).to(torch.bfloat16).to(torch.float64).eval()
    m.set_experts_implementation("eager")
    with torch.no_grad():
        exact = m(torch.tensor([tokens]), use_cache=False).logits[0]
        m = m.to(torch.float32)
        f32 = m(torch.tensor([tokens]), use_cache=False).logits[0].double()
    return float((f32 - exact).abs().max() / exact.abs().max())


def build_moe(cls, cfg, seed, router, spread_fn=None, tokens=None, conditioned=False):
    """cls(cfg) spread under the first seed from `seed` whose routing is clear (and, when
    `conditioned`, whose float32 logits are within FLOAT32_ERROR of float64's: a model
    float32 itself moves further cannot be held to 1e-5 of transformers' float32)."""
    for s in range(seed, seed + 100):
        torch.manual_seed(s)
        model = cls(cfg)
        if spread_fn:
            spread_fn(model, s, router=router)
        else:
            spread(model, s, router=router)
        gap = router_gap(model, tokens)
        if gap >= ROUTER_GAP and conditioned and float32_error(model, tokens) > FLOAT32_ERROR:
            continue
        if gap >= ROUTER_GAP:
            print(f"make_hf_tf5_fixtures: {cfg.model_type} seed {s}, router gap {gap:.3f}")
            return model
    raise SystemExit(f"make_hf_tf5_fixtures: no seed from {seed} gives router gap {ROUTER_GAP}")


def save_model(model, out, **kw):
    model = model.to(torch.bfloat16)
    model.config.dtype = "bfloat16"
    model.save_pretrained(out, **kw)


def train_spm(tmp, vocab_size, **opts):
    """A sentencepiece BPE model trained in tmp under a relative name (the trainer records
    model_prefix in the file), returned as tmp/spm/tokenizer.model. The identity
    normaliser and kept whitespace are Llama's, Mistral's and Gemma's (and keep the file
    small: nmt_nfkc would carry a 240 KB character map)."""
    cwd = os.getcwd()
    os.chdir(tmp)
    try:
        os.makedirs("spm")
        spm.SentencePieceTrainer.train(
            input=CORPUS, model_prefix="spm/tokenizer", vocab_size=vocab_size,
            model_type="bpe", byte_fallback=True, character_coverage=1.0, num_threads=1,
            minloglevel=2, normalization_rule_name="identity", remove_extra_whitespaces=False,
            **opts)
    finally:
        os.chdir(cwd)
    return os.path.join(tmp, "spm", "tokenizer.model")


def spm_tokenizer(cls, tmp, out, **kw):
    """cls loaded from tmp/spm (relative path: transformers records it), saved to out,
    with the sentencepiece file itself copied beside it."""
    cwd = os.getcwd()
    os.chdir(tmp)
    try:
        tok = cls.from_pretrained("spm", **kw)
    finally:
        os.chdir(cwd)
    shutil.copy(os.path.join(tmp, "spm", "tokenizer.model"), out)
    return tok


def qwen_tokenizer(out, vocab_size, cls=Qwen2Tokenizer, regex=PRETOKENIZE_REGEX):
    """Byte-level BPE trained with Qwen2Tokenizer's own pre-tokenizer and normalizer,
    then made a Qwen2Tokenizer from its vocab and merges (as Qwen3's tokenizer_config
    names it), with Qwen's specials and two non-special added tokens. Qwen3.5's: its own
    class and split regex (letters with their combining marks, \\p{M})."""
    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(regex), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False)])
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=1, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train([CORPUS], trainer)
    tj = json.loads(tok.to_str())
    merges = [tuple(m) if isinstance(m, list) else tuple(m.split(" "))
              for m in tj["model"]["merges"]]
    # <|endoftext|> first (the constructor adds it), then the chat markers: Qwen's order.
    q = cls(vocab=tj["model"]["vocab"], merges=merges, unk_token=None,
                       bos_token=None, eos_token="<|endoftext|>", pad_token="<|endoftext|>",
                       model_max_length=512)
    q.add_special_tokens({"additional_special_tokens": ["<|im_start|>", "<|im_end|>"]})
    q.eos_token = "<|im_end|>"
    q.add_tokens(["<think>", "</think>"])
    q.chat_template = CHAT_TEMPLATE
    save_tokenizer(q, out)
    return q


def save_tokenizer(tok, out):
    """tok.save_pretrained(out), then the one edit the pinned converter needs:
    transformers 5 writes "extra_special_tokens" as a list, which transformers 4.57.6
    (the converter's, through AutoTokenizer) takes for a dict and fails on
    ("'list' object has no attribute 'keys'"). The list is renamed to
    "additional_special_tokens", the key the Hub's 4.x-era files carry and both read.
    Qwen3.5's class, Qwen3_5Tokenizer, is unknown to 4.57.6: it is named Qwen2Tokenizer
    (4.57.6's fast class reads tokenizer.json, Qwen3.5's regex included, as written)."""
    tok.save_pretrained(out)
    path = os.path.join(out, "tokenizer_config.json")
    with open(path, encoding="utf-8") as f:
        tc = json.load(f)
    if isinstance(tc.get("extra_special_tokens"), list):
        tc["additional_special_tokens"] = tc.pop("extra_special_tokens")
    if tc.get("tokenizer_class") == "Qwen3_5Tokenizer":
        tc["tokenizer_class"] = "Qwen2Tokenizer"
    if tc != json.load(open(path, encoding="utf-8")):
        with open(path, "w", encoding="utf-8") as f:
            json.dump(tc, f, indent=2, sort_keys=True, ensure_ascii=False)
            f.write("\n")


def pad64(n):
    return (n + 63) // 64 * 64


def make_qwen3(out):
    tok = qwen_tokenizer(out, 340)
    cfg = Qwen3Config(vocab_size=pad64(len(tok)), hidden_size=64, intermediate_size=96,
                      num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                      head_dim=32, max_position_embeddings=512, rms_norm_eps=1e-6,
                      rope_parameters={"rope_type": "default", "rope_theta": 1000000.0},
                      tie_word_embeddings=True, bos_token_id=None,
                      eos_token_id=tok.convert_tokens_to_ids("<|im_end|>"),
                      pad_token_id=tok.convert_tokens_to_ids("<|endoftext|>"),
                      architectures=["Qwen3ForCausalLM"])
    torch.manual_seed(6006)
    model = Qwen3ForCausalLM(cfg)
    spread(model, 6006)
    save_model(model, out)


def make_qwen3moe(out):
    tok = qwen_tokenizer(out, 340)
    cfg = Qwen3MoeConfig(vocab_size=pad64(len(tok)), hidden_size=32, intermediate_size=64,
                         moe_intermediate_size=32, num_hidden_layers=2, num_attention_heads=4,
                         num_key_value_heads=2, head_dim=16, num_experts=8,
                         num_experts_per_tok=2, norm_topk_prob=True, decoder_sparse_step=1,
                         mlp_only_layers=[], max_position_embeddings=512, rms_norm_eps=1e-6,
                         rope_parameters={"rope_type": "default", "rope_theta": 1000000.0},
                         tie_word_embeddings=False, bos_token_id=None,
                         eos_token_id=tok.convert_tokens_to_ids("<|im_end|>"),
                         pad_token_id=tok.convert_tokens_to_ids("<|endoftext|>"),
                         architectures=["Qwen3MoeForCausalLM"])
    save_model(build_moe(Qwen3MoeForCausalLM, cfg, 7007, "mlp.gate.weight"), out)


def make_qwen3moe_fused(out):
    """qwen3moe's files, its per-expert tensors stacked into transformers 5's fused ones."""
    src = os.path.join(os.path.dirname(out), "qwen3moe")
    for fn in os.listdir(src):
        if not fn.endswith(".safetensors") and fn != "config.json":
            shutil.copy(os.path.join(src, fn), out)
    w = load_file(os.path.join(src, "model.safetensors"))
    with open(os.path.join(src, "config.json")) as f:
        cfg = json.load(f)
    # The Hub's spelling of the expert count (transformers 5 writes num_local_experts).
    hub = {("num_experts" if k == "num_local_experts" else k): v for k, v in cfg.items()}
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(hub, f, indent=2, sort_keys=True)
        f.write("\n")
    fused = {k: v for k, v in w.items() if ".mlp.experts." not in k}
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}.mlp.experts."
        per = {n: torch.stack([w.pop(f"{p}{e}.{n}.weight")
                               for e in range(hub["num_experts"])])
               for n in ("gate_proj", "up_proj", "down_proj")}
        fused[p + "gate_up_proj"] = torch.cat([per["gate_proj"], per["up_proj"]], dim=1)
        fused[p + "down_proj"] = per["down_proj"]
    assert not [k for k in w if ".mlp.experts." in k]
    save_file(fused, os.path.join(out, "model.safetensors"), metadata={"format": "pt"})
    a = logits_of(src)
    b = logits_of(out)
    assert torch.equal(a, b), "qwen3moe-fused: transformers' logits differ from qwen3moe's"


def logits_of(folder, tokens=None):
    m = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32,
                                             attn_implementation="eager").eval()
    with torch.no_grad():
        return m(torch.tensor([tokens or TOKENS]), use_cache=False).logits


def make_gemma3(out):
    with tempfile.TemporaryDirectory() as tmp:
        train_spm(tmp, 370, pad_id=0, eos_id=1, bos_id=2, unk_id=3, pad_piece="<pad>",
                  eos_piece="<eos>", bos_piece="<bos>", unk_piece="<unk>",
                  control_symbols=["<mask>"],
                  user_defined_symbols=["<start_of_turn>", "<end_of_turn>"],
                  add_dummy_prefix=False, split_digits=True)
        tok = spm_tokenizer(GemmaTokenizer, tmp, out, add_bos_token=True)
    assert len(tok) == 370, len(tok)      # no specials added past the sentencepiece model
    save_tokenizer(tok, out)
    cfg = Gemma3TextConfig(vocab_size=pad64(len(tok)), hidden_size=32, intermediate_size=64,
                           num_hidden_layers=6, num_attention_heads=2, num_key_value_heads=1,
                           head_dim=32, query_pre_attn_scalar=32, sliding_window=8,
                           max_position_embeddings=512, rms_norm_eps=1e-6,
                           rope_parameters={
                               "full_attention": {"rope_type": "default", "rope_theta": 100000.0},
                               "sliding_attention": {"rope_type": "default", "rope_theta": 1000.0}},
                           final_logit_softcapping=3.0, attn_logit_softcapping=None,
                           hidden_activation="gelu_pytorch_tanh", tie_word_embeddings=True,
                           pad_token_id=0, eos_token_id=1, bos_token_id=2,
                           architectures=["Gemma3ForCausalLM"])
    assert cfg.layer_types == ["sliding_attention"] * 5 + ["full_attention"], cfg.layer_types
    torch.manual_seed(8008)
    model = Gemma3ForCausalLM(cfg)
    spread(model, 8008, zero_norms=True)
    save_model(model, out)


def make_gemma4(out):
    """Gemma 4's text model: gemma3's tokenizer files (the converter reads tokenizer.json
    as a Llama BPE with byte fallback and names it "gemma4"), 5 layers of both kinds,
    the sliding ones with head_dim 16 and 2 KV heads, the full ones with global_head_dim
    32, one KV head whose keys are also its values (attention_k_eq_v: no v_proj) and
    proportional RoPE over half the head; the last 2 layers reuse earlier layers' KV
    (num_kv_shared_layers: no k/v tensors of their own; llama.cpp takes the last
    layer before them as the full layers' KV and the one before that as the sliding
    ones', so those two are full and sliding); per-layer input embeddings of 16. Norms multiply by w (gemma4 has no 1 + w), so spread's 1 + N(0, 0.1); each
    layer_scalar is drawn from [0.5, 1.5)."""
    with tempfile.TemporaryDirectory() as tmp:
        train_spm(tmp, 370, pad_id=0, eos_id=1, bos_id=2, unk_id=3, pad_piece="<pad>",
                  eos_piece="<eos>", bos_piece="<bos>", unk_piece="<unk>",
                  control_symbols=["<mask>"],
                  user_defined_symbols=["<start_of_turn>", "<end_of_turn>"],
                  add_dummy_prefix=False, split_digits=True)
        tok = spm_tokenizer(GemmaTokenizer, tmp, out, add_bos_token=True)
    assert len(tok) == 370, len(tok)
    save_tokenizer(tok, out)
    # Not padded: the converter keeps every embedding row and llama.cpp then wants exactly
    # the tokenizer's count (the Hub's configs say 262144, the tokenizer's size).
    vocab = len(tok)
    cfg = Gemma4TextConfig(vocab_size=vocab, hidden_size=64, intermediate_size=96,
                           num_hidden_layers=5, num_attention_heads=2, num_key_value_heads=2,
                           head_dim=16, global_head_dim=32, num_global_key_value_heads=1,
                           attention_k_eq_v=True, num_kv_shared_layers=2,
                           hidden_size_per_layer_input=16, vocab_size_per_layer_input=vocab,
                           layer_types=["sliding_attention", "sliding_attention",
                                        "full_attention", "sliding_attention",
                                        "full_attention"],
                           sliding_window=8, max_position_embeddings=512, rms_norm_eps=1e-6,
                           rope_parameters={
                               "sliding_attention": {"rope_type": "default", "rope_theta": 1000.0},
                               "full_attention": {"rope_type": "proportional",
                                                  "partial_rotary_factor": 0.5,
                                                  "rope_theta": 100000.0}},
                           final_logit_softcapping=3.0, hidden_activation="gelu_pytorch_tanh",
                           tie_word_embeddings=True, pad_token_id=0, eos_token_id=1,
                           bos_token_id=2, architectures=["Gemma4ForCausalLM"])
    torch.manual_seed(4004)
    model = Gemma4ForCausalLM(cfg)
    spread(model, 4004)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("layer_scalar"):
                p.copy_(torch.rand_like(p) + 0.5)
    save_model(model, out)


def make_gemma4moe(out):
    """Gemma 4's mixture-of-experts text model (as 26B-A4B): every layer's dense MLP plus,
    beside it, 8 experts (top-2, moe_intermediate_size 32) behind a router with its own
    scale and per-expert scales, and their extra norms; gemma4's tokenizer files, 3 layers
    (sliding, sliding, full), no shared-KV layers and no per-layer inputs (26B has none).
    Routers N(0, 16) so their choices are clear (the router
    normalises its input and scales it by hidden^-1/2); the router's scales 1 + N(0, 0.1); the
    seed the first whose router scores keep ROUTER_GAP between the k-th and (k+1)-th
    expert (as the other MoE fixtures)."""
    for fn in os.listdir(os.path.join(FIX, "hf", "gemma4")):
        if fn.startswith("tokenizer"):
            shutil.copy(os.path.join(FIX, "hf", "gemma4", fn), out)
    cfg = Gemma4TextConfig(vocab_size=370, hidden_size=64, intermediate_size=96,
                           num_hidden_layers=3, num_attention_heads=2, num_key_value_heads=2,
                           head_dim=16, global_head_dim=32, num_global_key_value_heads=1,
                           attention_k_eq_v=True, num_kv_shared_layers=0,
                           hidden_size_per_layer_input=0, vocab_size_per_layer_input=370,
                           layer_types=["sliding_attention", "sliding_attention",
                                        "full_attention"],
                           enable_moe_block=True, num_experts=8, top_k_experts=2,
                           moe_intermediate_size=32,
                           sliding_window=8, max_position_embeddings=512, rms_norm_eps=1e-6,
                           rope_parameters={
                               "sliding_attention": {"rope_type": "default", "rope_theta": 1000.0},
                               "full_attention": {"rope_type": "proportional",
                                                  "partial_rotary_factor": 0.5,
                                                  "rope_theta": 100000.0}},
                           final_logit_softcapping=3.0, hidden_activation="gelu_pytorch_tanh",
                           tie_word_embeddings=True, pad_token_id=0, eos_token_id=1,
                           bos_token_id=2, architectures=["Gemma4ForCausalLM"])
    for s in range(4040, 4040 + 200):
        torch.manual_seed(s)
        model = Gemma4ForCausalLM(cfg)
        spread(model, s, router="router.proj.weight")
        with torch.no_grad():
            for name, p in model.named_parameters():
                if name.endswith("layer_scalar"):
                    p.copy_(torch.rand_like(p) + 0.5)
                elif name.endswith(("router.scale", "router.per_expert_scale")):
                    p.copy_(torch.randn_like(p) * 0.1 + 1.0)
                elif name.endswith("router.proj.weight"):
                    p.mul_(4.0)     # its input is normed and scaled by hidden^-1/2
        gap = gemma4_router_gap(model, cfg.top_k_experts)
        if gap >= ROUTER_GAP:
            print(f"make_hf_tf5_fixtures: gemma4moe seed {s}, router gap {gap:.3f}")
            save_model(model, out)
            return
    raise SystemExit(f"make_hf_tf5_fixtures: no gemma4moe seed gives router gap {ROUTER_GAP}")


def gemma4_router_gap(model, k):
    """router_gap() for Gemma 4, whose router's scores are not among the model's outputs:
    read from each router.proj's output."""
    m = copy.deepcopy(model).to(torch.bfloat16).to(torch.float32).eval()
    scores = []
    hooks = [mod.register_forward_hook(lambda _m, _i, o: scores.append(o.detach()))
             for name, mod in m.named_modules() if name.endswith("router.proj")]
    with torch.no_grad():
        m(torch.tensor([TOKENS]), use_cache=False)
    for h in hooks:
        h.remove()
    top = [torch.topk(r.reshape(-1, r.shape[-1]).float(), k + 1, dim=-1).values for r in scores]
    return min(float((t[:, k - 1] - t[:, k]).min()) for t in top)


def spread_qwen35(model, seed, router=None):
    """spread() for Qwen3.5: its RMSNorms are zero-centred (1 + w) but the gated norm of
    the linear-attention layers multiplies by w itself (1 + N(0, 0.1)); A = exp(A_log) is
    drawn from [0.02, 1) so the state decays by exp(-A softplus(a + dt_bias)), between
    about 0.5 and 0.99 a token: over 72 tokens the state carries far. Each A_log (as
    bfloat16) is drawn again until torch's float32 exp of it is the correctly rounded
    one: the converter computes -exp(A_log) with torch, whose exp (MKL's) is 1 ulp off
    for about 1% of inputs, and libconvert with the correctly rounded expf; the README
    lists that difference, and the fixture keeps to the values where both agree."""
    spread(model, seed, zero_norms=True, router=router)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("linear_attn.norm.weight"):
                p.add_(1.0)
            elif name.endswith(".A_log"):
                for i in range(p.numel()):
                    while True:
                        x = torch.log(torch.rand(1) * 0.98 + 0.02).to(torch.bfloat16).float()
                        exact = np.float32(np.exp(np.float64(x.item())))
                        if torch.exp(x).item() == exact:
                            break
                    p.view(-1)[i] = x


def add_mtp(out, cfg, seed, moe=None):
    """The Hub's Qwen3.5 checkpoints carry one multi-token-prediction block (mtp.*: a
    full-attention layer, fc over [embedding; hidden] and three norms), which
    transformers skips on load and never writes; the converter writes it as layer
    num_hidden_layers with its nextn tensors. It is added here as the Hub has it, with
    mtp_num_hidden_layers 1 in config.json; transformers' logits are unchanged."""
    torch.manual_seed(seed)
    h, hd, nh, nkv = cfg.hidden_size, cfg.head_dim, cfg.num_attention_heads, \
        cfg.num_key_value_heads
    r = lambda *s: (torch.randn(*s) * 0.1).to(torch.bfloat16)
    p = "mtp.layers.0."
    t = {"mtp.fc.weight": r(h, 2 * h), "mtp.norm.weight": r(h),
         "mtp.pre_fc_norm_embedding.weight": r(h), "mtp.pre_fc_norm_hidden.weight": r(h),
         p + "input_layernorm.weight": r(h), p + "post_attention_layernorm.weight": r(h),
         p + "self_attn.q_proj.weight": r(2 * nh * hd, h),
         p + "self_attn.k_proj.weight": r(nkv * hd, h),
         p + "self_attn.v_proj.weight": r(nkv * hd, h),
         p + "self_attn.o_proj.weight": r(h, nh * hd),
         p + "self_attn.q_norm.weight": r(hd), p + "self_attn.k_norm.weight": r(hd)}
    if moe is None:
        ff = cfg.intermediate_size
        t.update({p + "mlp.gate_proj.weight": r(ff, h), p + "mlp.up_proj.weight": r(ff, h),
                  p + "mlp.down_proj.weight": r(h, ff)})
    else:
        t.update(moe(p, r))
    path = os.path.join(out, "model.safetensors")
    w = load_file(path)
    w.update(t)
    save_file(w, path, metadata={"format": "pt"})
    cpath = os.path.join(out, "config.json")
    with open(cpath) as f:
        c = json.load(f)
    c["mtp_num_hidden_layers"] = 1
    with open(cpath, "w") as f:
        json.dump(c, f, indent=2, sort_keys=True)
        f.write("\n")


def make_qwen35(out):
    tok = qwen_tokenizer(out, 340, Qwen3_5Tokenizer, QWEN35_REGEX)
    kinds = ["linear_attention", "linear_attention", "full_attention", "linear_attention",
             "full_attention", "linear_attention"]
    cfg = Qwen3_5TextConfig(
        vocab_size=pad64(len(tok)), hidden_size=32, intermediate_size=64,
        num_hidden_layers=len(kinds), layer_types=kinds, num_attention_heads=2,
        num_key_value_heads=1, head_dim=32, linear_conv_kernel_dim=4,
        linear_key_head_dim=8, linear_value_head_dim=8, linear_num_key_heads=2,
        linear_num_value_heads=4, max_position_embeddings=512, rms_norm_eps=1e-6,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0,
                         "partial_rotary_factor": 0.25, "mrope_section": [2, 1, 1],
                         "mrope_interleaved": True},
        tie_word_embeddings=True, bos_token_id=None,
        eos_token_id=tok.convert_tokens_to_ids("<|im_end|>"),
        pad_token_id=tok.convert_tokens_to_ids("<|endoftext|>"),
        architectures=["Qwen3_5ForCausalLM"])
    torch.manual_seed(3535)
    model = Qwen3_5ForCausalLM(cfg)
    spread_qwen35(model, 3535)
    save_model(model, out)
    before = logits_of(out, TOKENS_LONG)
    add_mtp(out, cfg, 3536)
    assert torch.equal(before, logits_of(out, TOKENS_LONG)), "qwen35: the MTP block changed logits"


def make_qwen35moe(out):
    """qwen35's layers with a mixture of experts in every FFN: 8 experts (llama.cpp's
    n_expert == 8 rules), top-2, a shared expert behind a sigmoid gate, experts of width
    8 (their down rows fall back to F16 in the Q8_0 reference). Four layers (linear,
    linear, full, linear) and the MTP block (its FFN a mixture too) keep the folder and
    its four references under 1 MiB. The seed is also one whose float32 logits
    stay within 1e-5 of float64's (build_moe's `conditioned`): the first with a clear
    routing moved 2.4e-5 under float32 alone."""
    tok = qwen_tokenizer(out, 340, Qwen3_5Tokenizer, QWEN35_REGEX)
    kinds = ["linear_attention", "linear_attention", "full_attention", "linear_attention"]
    cfg = Qwen3_5MoeTextConfig(
        vocab_size=pad64(len(tok)), hidden_size=32, num_hidden_layers=len(kinds),
        layer_types=kinds, num_attention_heads=2, num_key_value_heads=1, head_dim=32,
        linear_conv_kernel_dim=4, linear_key_head_dim=8, linear_value_head_dim=8,
        linear_num_key_heads=2, linear_num_value_heads=4, moe_intermediate_size=8,
        shared_expert_intermediate_size=8, num_experts=8, num_experts_per_tok=2,
        max_position_embeddings=512, rms_norm_eps=1e-6,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0,
                         "partial_rotary_factor": 0.25, "mrope_section": [2, 1, 1],
                         "mrope_interleaved": True},
        tie_word_embeddings=False, bos_token_id=None,
        eos_token_id=tok.convert_tokens_to_ids("<|im_end|>"),
        pad_token_id=tok.convert_tokens_to_ids("<|endoftext|>"),
        architectures=["Qwen3_5MoeForCausalLM"])
    def spread_sharp(model, seed, router):
        """spread_qwen35, the routers 4x sharper: over 72 tokens and 5 layers, N(0, 1)
        routers leave no seed with the gap ROUTER_GAP asks."""
        spread_qwen35(model, seed, router=router)
        with torch.no_grad():
            for name, p in model.named_parameters():
                if name.endswith(router):
                    p.mul_(4.0)
    model = build_moe(Qwen3_5MoeForCausalLM, cfg, 3636, "mlp.gate.weight",
                      spread_fn=spread_sharp, tokens=TOKENS_LONG, conditioned=True)
    save_model(model, out)
    before = logits_of(out, TOKENS_LONG)

    def moe(p, r):
        e, h, ff = cfg.num_experts, cfg.hidden_size, cfg.moe_intermediate_size
        sf = cfg.shared_expert_intermediate_size
        t = {p + "mlp.gate.weight": (torch.randn(e, h)).to(torch.bfloat16),
             p + "mlp.shared_expert.gate_proj.weight": r(sf, h),
             p + "mlp.shared_expert.up_proj.weight": r(sf, h),
             p + "mlp.shared_expert.down_proj.weight": r(h, sf),
             p + "mlp.shared_expert_gate.weight": r(1, h)}
        for x in range(e):
            t[f"{p}mlp.experts.{x}.gate_proj.weight"] = r(ff, h)
            t[f"{p}mlp.experts.{x}.up_proj.weight"] = r(ff, h)
            t[f"{p}mlp.experts.{x}.down_proj.weight"] = r(h, ff)
        return t
    add_mtp(out, cfg, 3637, moe=moe)
    assert torch.equal(before, logits_of(out, TOKENS_LONG)), \
        "qwen35moe: the MTP block changed logits"


def make_mixtral(out):
    with tempfile.TemporaryDirectory() as tmp:
        train_spm(tmp, 400)
        tok = spm_tokenizer(LlamaTokenizer, tmp, out, add_bos_token=True)
    save_tokenizer(tok, out)
    cfg = MixtralConfig(vocab_size=len(tok), hidden_size=32, intermediate_size=32,
                        num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                        num_local_experts=8, num_experts_per_tok=2, max_position_embeddings=512,
                        rms_norm_eps=1e-5, sliding_window=None,
                        rope_parameters={"rope_type": "default", "rope_theta": 1000000.0},
                        tie_word_embeddings=False, bos_token_id=1, eos_token_id=2,
                        architectures=["MixtralForCausalLM"])
    save_model(build_moe(MixtralForCausalLM, cfg, 9009, "mlp.gate.weight"), out,
               max_shard_size="100KB")


def make_phi3(out):
    specials = ["<|endoftext|>", "<|assistant|>", "<|user|>", "<|end|>"]
    with tempfile.TemporaryDirectory() as tmp:
        train_spm(tmp, 360)
        tok = spm_tokenizer(LlamaTokenizer, tmp, out, add_bos_token=False)
    tok.add_special_tokens({"additional_special_tokens": specials})
    tok.eos_token = "<|endoftext|>"
    tok.pad_token = "<|endoftext|>"
    save_tokenizer(tok, out)
    rng = np.random.default_rng(1010)
    n_rot = 64 // 4
    long_f = [round(float(x), 4) for x in np.sort(rng.uniform(1.0, 8.0, n_rot // 2))]
    short_f = [round(float(x), 4) for x in np.sort(rng.uniform(1.0, 1.5, n_rot // 2))]
    cfg = Phi3Config(vocab_size=pad64(len(tok)), hidden_size=64, intermediate_size=96,
                     num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                     max_position_embeddings=64, original_max_position_embeddings=16,
                     rope_parameters={"rope_type": "longrope", "rope_theta": 10000.0,
                                      "partial_rotary_factor": 1.0,
                                      "short_factor": short_f, "long_factor": long_f,
                                      "original_max_position_embeddings": 16},
                     sliding_window=2047, rms_norm_eps=1e-5, tie_word_embeddings=False,
                     bos_token_id=1, eos_token_id=tok.convert_tokens_to_ids("<|endoftext|>"),
                     pad_token_id=tok.convert_tokens_to_ids("<|endoftext|>"),
                     architectures=["Phi3ForCausalLM"])
    torch.manual_seed(1010)
    model = Phi3ForCausalLM(cfg)
    spread(model, 1010)
    save_model(model, out)


MAKERS = {"qwen3": make_qwen3, "qwen3moe": make_qwen3moe, "qwen3moe-fused": make_qwen3moe_fused,
          "gemma3": make_gemma3, "mixtral": make_mixtral, "phi3": make_phi3,
          "qwen35": make_qwen35, "qwen35moe": make_qwen35moe, "gemma4": make_gemma4,
          "gemma4moe": make_gemma4moe}


def producer_of(name, fn):
    if name == "gemma4moe" and fn.startswith("tokenizer"):
        return "copy of hf/gemma4"
    if fn == "tokenizer.model":
        return "sentencepiece"
    if name == "qwen3moe-fused":
        return ("make_hf_tf5_fixtures.py (qwen3moe's tensors fused, safetensors.torch)"
                if fn.endswith(".safetensors") else
                "make_hf_tf5_fixtures.py (qwen3moe's, num_experts spelled as on the Hub)"
                if fn == "config.json" else "copy of hf/qwen3moe")
    if fn.startswith(("tokenizer", "special_tokens", "chat_template")):
        return "transformers save_pretrained (tokenizer)"
    return "transformers save_pretrained"


def update_manifest(rows, folders):
    path = os.path.join(FIX, "MANIFEST.tsv")
    with open(path) as f:
        lines = f.read().splitlines()
    kept = [ln for ln in lines if not ln.startswith(tuple(f"hf/{n}/" for n in folders))]
    with open(path, "w") as f:
        f.write("\n".join(kept + rows) + "\n")


def main():
    names = sys.argv[1:] or list(MAKERS)
    bad = [n for n in names if n not in MAKERS]
    if bad:
        sys.exit(f"make_hf_tf5_fixtures: unknown {bad}; known: {list(MAKERS)}")
    torch.set_num_threads(1)
    ver = (f"torch={torch.__version__.split('+')[0]};transformers={transformers.__version__};"
           f"tokenizers={tokenizers.__version__};sentencepiece={spm.__version__};"
           f"safetensors={safetensors.__version__}")
    rows = []
    for name in [n for n in MAKERS if n in names]:      # qwen3moe before qwen3moe-fused
        out = os.path.join(FIX, "hf", name)
        shutil.rmtree(out, ignore_errors=True)
        os.makedirs(out)
        MAKERS[name](out)
        for fn in sorted(os.listdir(out)):
            with open(os.path.join(out, fn), "rb") as f:
                digest = hashlib.sha256(f.read()).hexdigest()
            rows.append("\t".join([f"hf/{name}/{fn}", producer_of(name, fn), ver, digest]))
        size = sum(os.path.getsize(os.path.join(out, fn)) for fn in os.listdir(out))
        print(f"make_hf_tf5_fixtures: fixtures/hf/{name} {size} bytes")
    update_manifest(rows, names)


if __name__ == "__main__":
    main()
