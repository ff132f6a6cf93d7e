"""llama.cpp judges our GGUFs against the reference that its own convert_hf_to_gguf.py
writes from the same HF folder (fixtures/hf-ref/, see scripts/make_llama_ref.py).

Each test runs for subject "ref" (the reference against HF or against itself: proves the
check can pass and that llama.cpp is deterministic here) and "ours" (safetensors2gguf's
output; skipped loudly, see conftest.py, while the tool has no folder mode).

What must hold for ours, per model (llama-spm: SentencePiece; llama-bpe, qwen2: BPE) and
outtype (f32, f16, bf16, q8_0):
  - llama.cpp loads it;
  - llama.cpp tokenizes STRINGS on it exactly as the HF tokenizer does (tokenizers /
    sentencepiece) and exactly as on the reference;
  - logits for PROMPTS equal the reference's bit for bit (identical tensor bytes and
    hyperparameters leave no room for any difference);
  - every tensor: same name, order, type, shape and bytes as the reference;
  - every metadata key: same type and value, except METADATA_ALLOWED below.
"""
import json

import gguf
import numpy as np
import pytest
import sentencepiece as spm
import tokenizers

from conftest import HF, MODELS, OUTTYPES, SUBJECTS, llama, logits, ref_path, tokenize

STRINGS = [
    "hello world",
    "The quick brown fox jumps over the lazy dog.",
    " leading space",
    "two  spaces   three",
    "tab\there\nnewline\n\n",
    "digits 1234567 3.14 0x1F",
    "unicode: naïve café 日本語 🦙",
    "ＦＵＬＬ ﬁ",
    "",
    " ",
    "<s>hello</s>",
    "x <|begin_of_text|>y<|eot_id|> z",
    "<|im_start|>user\nhi<|im_end|>",
    "<tool> and <ctl>",
    "<extra_word> ok",
]

# Where llama.cpp's SentencePiece tokenizer disagrees with sentencepiece itself on the
# reference GGUF too, i.e. llama.cpp's behaviour, not our converter's. For these we assert
# that the reference disagrees the same way (so the list cannot go stale silently) and that
# ours equals the reference.
#   - sentencepiece's nmt_nfkc normaliser (the fixture's trainer default) folds runs of
#     spaces, maps tab and newline to a space and applies NFKC; llama.cpp does none of it.
#   - "<tool>" is a user-defined symbol: sentencepiece keeps it whole, llama.cpp (which
#     parses only control tokens as special) spells it out.
SPM_LLAMA_CPP_DIFFERS = {
    " leading space": "whitespace folding",
    "two  spaces   three": "whitespace folding",
    "tab\there\nnewline\n\n": "tab/newline mapped to space",
    "ＦＵＬＬ ﬁ": "NFKC",
    " ": "whitespace folding",
    "<|im_start|>user\nhi<|im_end|>": "newline mapped to space",
    "<tool> and <ctl>": "user-defined symbol kept whole by sentencepiece only",
}

PROMPTS = ["hello world", "The quick brown fox 12345 jumps", "<|im_start|>café 日本語 🦙"]

# Metadata keys whose value may differ from convert_hf_to_gguf.py's, each deliberate:
METADATA_ALLOWED = {
}


def cases(subjects=SUBJECTS):
    return [pytest.param(s, m, t, id=f"{s}-{m}-{t}")
            for s in subjects for m in MODELS for t in OUTTYPES]


def hf_tokens(model, text, add_special):
    """What the HF tokenizer of fixtures/hf/<model> gives for text."""
    folder = HF / model
    if (folder / "tokenizer.json").is_file():
        tok = tokenizers.Tokenizer.from_file(str(folder / "tokenizer.json"))
        return tok.encode(text, add_special_tokens=add_special).ids
    # transformers' LlamaTokenizer (legacy=True, as saved): split around the added special
    # tokens, sentencepiece for each piece in between, then bos/eos as the config says.
    cfg = json.loads((folder / "tokenizer_config.json").read_text())
    specials = {v["content"]: int(k) for k, v in cfg["added_tokens_decoder"].items()
                if v["special"]}
    sp = spm.SentencePieceProcessor(model_file=str(folder / "tokenizer.model"))
    ids, rest = [], text
    while rest:
        hits = [(rest.find(s), -len(s), s) for s in specials if s in rest]
        if not hits:
            ids += sp.encode(rest)
            break
        at, _, s = min(hits)
        if at:
            ids += sp.encode(rest[:at])
        ids.append(specials[s])
        rest = rest[at + len(s):]
    if add_special:
        ids = ([sp.bos_id()] if cfg.get("add_bos_token") else []) + ids + \
              ([sp.eos_id()] if cfg.get("add_eos_token") else [])
    return ids


@pytest.mark.parametrize("subject,model,outtype", cases())
def test_loads(gguf_of, subject, model, outtype):
    cfg = json.loads((HF / model / "config.json").read_text())
    m = llama(gguf_of(subject, model, outtype))
    assert (m.n_vocab(), m.n_embd()) == (cfg["vocab_size"], cfg["hidden_size"])


@pytest.mark.parametrize("text", STRINGS)
@pytest.mark.parametrize("subject,model", [(s, m) for s in SUBJECTS for m in MODELS])
def test_tokenizes_like_hf_and_reference(gguf_of, subject, model, text):
    # The vocabulary does not depend on the outtype: f16 stands for all four.
    path = gguf_of(subject, model, "f16")
    got = tokenize(path, text)
    ref = tokenize(ref_path(model, "f16"), text)
    assert got == ref, "llama.cpp tokenizes differently on %s than on the reference" % subject
    hf = hf_tokens(model, text, add_special=False)
    if model == "llama-spm" and text in SPM_LLAMA_CPP_DIFFERS:
        assert ref != hf, "llama.cpp now agrees with sentencepiece: drop it from the list"
    else:
        assert got == hf


@pytest.mark.parametrize("subject,model", [(s, m) for s in SUBJECTS for m in MODELS])
def test_bos_eos_like_hf(gguf_of, subject, model):
    """add_bos/add_eos metadata: llama.cpp's "add special tokens" equals HF's."""
    path = gguf_of(subject, model, "f16")
    for text in ["hello world", "digits 1234567"]:
        assert tokenize(path, text, add_bos=True) == hf_tokens(model, text, add_special=True)


@pytest.mark.parametrize("subject,model,outtype", cases())
def test_logits_equal_reference(gguf_of, subject, model, outtype):
    path, ref = gguf_of(subject, model, outtype), ref_path(model, outtype)
    for prompt in PROMPTS:
        toks = tokenize(ref, prompt, add_bos=True)
        want = logits(ref, toks)
        got = logits(path, toks)
        assert np.isfinite(got).all()
        diff = float(np.max(np.abs(got - want)))
        assert diff == 0.0, f"{prompt!r}: max |logit - reference| = {diff:g}"


def reader(path):
    return gguf.GGUFReader(str(path))


@pytest.mark.parametrize("subject,model,outtype", cases())
def test_tensors_identical(gguf_of, subject, model, outtype):
    got, want = reader(gguf_of(subject, model, outtype)), reader(ref_path(model, outtype))
    assert [t.name for t in got.tensors] == [t.name for t in want.tensors]
    for a, b in zip(got.tensors, want.tensors):
        assert a.tensor_type == b.tensor_type, a.name
        assert list(a.shape) == list(b.shape), a.name
        assert a.data.tobytes() == b.data.tobytes(), f"{a.name}: bytes differ"


def fields(r):
    """key -> (value types, value) for every metadata key (GGUF.* header fields aside)."""
    return {k: (tuple(int(t) for t in f.types), f.contents())
            for k, f in r.fields.items() if not k.startswith("GGUF.")}


@pytest.mark.parametrize("subject,model,outtype", cases())
def test_metadata_identical_but_allowed(gguf_of, subject, model, outtype):
    got = fields(reader(gguf_of(subject, model, outtype)))
    want = fields(reader(ref_path(model, outtype)))
    assert sorted(set(got) - set(METADATA_ALLOWED)) == sorted(set(want) - set(METADATA_ALLOWED))
    for key in want:
        if key in METADATA_ALLOWED:
            continue
        assert got[key][0] == want[key][0], f"{key}: value types differ"
        assert got[key][1] == want[key][1], f"{key}: values differ"
