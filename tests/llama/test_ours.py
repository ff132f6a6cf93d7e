"""llama.cpp judges our GGUFs against the reference that its own convert_hf_to_gguf.py
writes from the same HF folder (fixtures/hf-ref/, see scripts/make_llama_ref.py).

Subjects (see conftest.py): the tokenizer tests run for "ref" too (the reference against
HF: shows the check can pass and pins llama.cpp's own deviations); the other checks run for
"ours" only (the reference against itself could not fail), and the test_judge_catches_*
tests show that they do catch a changed weight or key. "ours" skips loudly while
safetensors2gguf has no folder mode.

What must hold for ours, per model (llama-spm, llama-tf: SentencePiece; llama-bpe, qwen2: BPE) and
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

# The folders with llama-spm's tokenizer.model (llama-tf holds a copy of it).
SPM_MODELS = {"llama-spm", "llama-tf"}

# Where llama.cpp on the reference GGUF disagrees with sentencepiece itself, i.e. llama.cpp's
# (or its converter's) behaviour, not ours. For these we assert that the reference disagrees
# (so the list cannot go stale silently) and that ours equals the reference.
#   - sentencepiece's nmt_nfkc normaliser (the fixture's trainer default) folds runs of
#     spaces, maps tab and newline to a space and applies NFKC; llama.cpp does none of it.
#   - "<tool>" is a user-defined symbol: sentencepiece matches it whole, but
#     convert_hf_to_gguf.py types it NORMAL (its SentencePiece path has no user-defined
#     case), and llama.cpp's merges cannot build it from characters, so it is spelled out.
SPM_LLAMA_CPP_DIFFERS = {
    " leading space": "whitespace folding",
    "two  spaces   three": "whitespace folding",
    "tab\there\nnewline\n\n": "tab/newline mapped to space",
    "ＦＵＬＬ ﬁ": "NFKC",
    " ": "whitespace folding",
    "<|im_start|>user\nhi<|im_end|>": "newline mapped to space",
    "<tool> and <ctl>": "user-defined symbol kept whole by sentencepiece only",
}

# The transformers-5 SentencePiece folders (mixtral, phi3) save a tokenizer.json whose
# Metaspace pre-tokenizer prepends "▁" to the first piece only (prepend_scheme "first")
# and leaves whitespace alone; llama.cpp (on the reference GGUF as on ours) prepends it
# to every text piece, after special tokens too, as sentencepiece's own model does.
# phi3's tokenizer.json adds no BOS (its post-processor is "$A" alone), while llama.cpp
# adds one to a SentencePiece vocabulary unless a key says otherwise (the converter
# writes none). Same rule as SPM_LLAMA_CPP_DIFFERS: the reference must disagree too.
TF5_SPM_MODELS = {"mixtral", "phi3"}
TF5_SPM_LLAMA_CPP_DIFFERS = {
    " leading space": "prefix space after the first piece",
    " ": "prefix space after the first piece",
    "<s>hello</s>": "prefix space after a special token",
}
NO_BOS_IN_HF = {"phi3"}

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


@pytest.mark.parametrize("subject,model,outtype", cases(["ours"]))
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
    if (model in SPM_MODELS and text in SPM_LLAMA_CPP_DIFFERS) or \
       (model in TF5_SPM_MODELS and text in TF5_SPM_LLAMA_CPP_DIFFERS):
        assert ref != hf, "llama.cpp now agrees with the HF tokenizer: drop it from the list"
    else:
        assert got == hf


@pytest.mark.parametrize("subject,model", [(s, m) for s in SUBJECTS for m in MODELS])
def test_bos_eos_like_hf(gguf_of, subject, model):
    """add_bos/add_eos metadata: llama.cpp's "add special tokens" equals HF's."""
    path = gguf_of(subject, model, "f16")
    for text in ["hello world", "digits 1234567"]:
        want = hf_tokens(model, text, add_special=True)
        if model in NO_BOS_IN_HF:           # see TF5_SPM_MODELS: llama.cpp adds a BOS
            assert tokenize(ref_path(model, "f16"), text, add_bos=True)[0] == 1
            want = [1] + want
        assert tokenize(path, text, add_bos=True) == want


def max_logit_diff(path, ref):
    """Largest |logit(path) - logit(ref)| over PROMPTS (tokenized on ref, fed to both)."""
    worst = 0.0
    for prompt in PROMPTS:
        toks = tokenize(ref, prompt, add_bos=True)
        got, want = logits(path, toks), logits(ref, toks)
        assert np.isfinite(got).all(), f"{prompt!r}: non-finite logits"
        worst = max(worst, float(np.max(np.abs(got - want))))
    return worst


def tensor_diffs(path, ref):
    """Every way the tensors of path differ from ref's: names/order, type, shape, bytes."""
    got, want = gguf.GGUFReader(str(path)), gguf.GGUFReader(str(ref))
    names = [t.name for t in got.tensors]
    if names != [t.name for t in want.tensors]:
        return [f"tensor names or order differ: {names}"]
    out = []
    for a, b in zip(got.tensors, want.tensors):
        if a.tensor_type != b.tensor_type:
            out.append(f"{a.name}: type {a.tensor_type.name} != {b.tensor_type.name}")
        elif list(a.shape) != list(b.shape):
            out.append(f"{a.name}: shape {list(a.shape)} != {list(b.shape)}")
        elif a.data.tobytes() != b.data.tobytes():
            out.append(f"{a.name}: bytes differ")
    return out


def fields(path):
    """key -> (value types, value) for every metadata key (GGUF.* header fields aside)."""
    r = gguf.GGUFReader(str(path))
    return {k: (tuple(int(t) for t in f.types), f.contents())
            for k, f in r.fields.items() if not k.startswith("GGUF.")}


def metadata_diffs(path, ref):
    """Every key missing, extra, or of another type or value, outside METADATA_ALLOWED."""
    got, want = fields(path), fields(ref)
    out = []
    for k in sorted(set(got) | set(want)):
        if k in METADATA_ALLOWED:
            continue
        if k not in got:
            out.append(f"only in the reference: {k}")
        elif k not in want:
            out.append(f"only in ours: {k}")
        elif got[k] != want[k]:
            what = "value types" if got[k][0] != want[k][0] else "values"
            out.append(f"{k}: {what} differ: {str(got[k])[:80]} != {str(want[k])[:80]}")
    return out


# Ours against the reference. (The reference against itself could not fail: the checks
# are shown to catch a difference by the test_judge_catches_* tests below.)
@pytest.mark.parametrize("subject,model,outtype", cases(["ours"]))
def test_logits_equal_reference(gguf_of, subject, model, outtype):
    diff = max_logit_diff(gguf_of(subject, model, outtype), ref_path(model, outtype))
    assert diff == 0.0, f"max |logit - reference logit| = {diff:g}"


@pytest.mark.parametrize("subject,model,outtype", cases(["ours"]))
def test_tensors_identical(gguf_of, subject, model, outtype):
    assert tensor_diffs(gguf_of(subject, model, outtype), ref_path(model, outtype)) == []


@pytest.mark.parametrize("subject,model,outtype", cases(["ours"]))
def test_metadata_identical_but_allowed(gguf_of, subject, model, outtype):
    assert metadata_diffs(gguf_of(subject, model, outtype), ref_path(model, outtype)) == []


def edited_copy(tmp_path, model, outtype, edit):
    """A copy of a reference GGUF with edit(reader) applied in place (numpy memmap r+)."""
    dst = tmp_path / f"{model}-{outtype}-edited.gguf"
    dst.write_bytes(ref_path(model, outtype).read_bytes())
    r = gguf.GGUFReader(str(dst), "r+")
    edit(r)
    r.data.flush()
    del r
    return dst


def test_judge_catches_a_changed_weight(tmp_path):
    def bump(r):
        t = next(t for t in r.tensors if t.name == "blk.0.attn_q.weight")
        t.data.reshape(-1)[0] += np.float32(0.25)
    path = edited_copy(tmp_path, "llama-bpe", "f32", bump)
    assert tensor_diffs(path, ref_path("llama-bpe", "f32")) == \
        ["blk.0.attn_q.weight: bytes differ"]
    assert max_logit_diff(path, ref_path("llama-bpe", "f32")) > 0.0


def test_judge_catches_a_changed_key(tmp_path):
    key = "llama.attention.layer_norm_rms_epsilon"

    def change(r):
        f = r.fields[key]
        f.parts[f.data[0]][0] = np.float32(1e-3)
    path = edited_copy(tmp_path, "llama-spm", "f16", change)
    diffs = metadata_diffs(path, ref_path("llama-spm", "f16"))
    assert len(diffs) == 1 and diffs[0].startswith(key + ": values differ"), diffs
    assert tensor_diffs(path, ref_path("llama-spm", "f16")) == []
    assert max_logit_diff(path, ref_path("llama-spm", "f16")) > 0.0
