"""infer/tokenize against the HF tokenizers of the fixtures (sentencepiece for
tokenizer.model, tokenizers for tokenizer.json), through the test driver
$LC_TEST_BIN/lc-tokenize on the vocab-only GGUFs our converter writes.

llama.cpp is the judge of our ids (tests/llama/test_tokenize.py demands equality with it
on every string); here the HF tokenizer is compared, and where it and llama.cpp part ways
the string is listed in HF_DIFFERS with the reason: the test asserts that ours and HF do
differ there, so the list cannot go stale silently. Every other string must give HF's ids.
"""
import json
import os
import subprocess
from pathlib import Path

import pytest
import sentencepiece as spm
import tokenizers

ROOT = Path(__file__).resolve().parents[2]
HF = ROOT / "fixtures" / "hf"
BIN = Path(os.environ.get("LC_BIN", ROOT / "build" / "bin"))
TEST_BIN = Path(os.environ.get("LC_TEST_BIN", ROOT / "build" / "test-bin"))
DRIVER = TEST_BIN / "lc-tokenize"

MODELS = ["llama-spm", "llama-bpe", "qwen2", "gemma4"]
SPM_MODELS = {"llama-spm"}


def default_text():
    return subprocess.run([str(DRIVER), "--default-text"], capture_output=True, text=True,
                          check=True).stdout


DEFAULT = default_text()
STRINGS = json.loads((ROOT / "tests" / "tokenize_strings.json").read_text()) + [DEFAULT]

# Where sentencepiece (the fixture's nmt_nfkc normalizer, and its user-defined symbols)
# and llama.cpp disagree; llama.cpp runs no normalizer, so neither do we.
_WS = "sentencepiece folds runs of whitespace and drops leading/trailing ones"
SPM_HF_DIFFERS = {
    " leading space": _WS,
    "two  spaces   three": _WS,
    " ": _WS,
    "   ": _WS,
    "  trailing  ": _WS,
    "tab\there\nnewline\n\n": "sentencepiece maps tab and newline to a space",
    "\n": "sentencepiece maps newline to a space",
    "\n\n\n  \n": "sentencepiece maps newline to a space",
    "a\r\nb\r\n": "sentencepiece maps CR/LF to a space",
    "<|im_start|>user\nhi<|im_end|>": "sentencepiece maps newline to a space",
    "tabs\t\tand\u00a0nbsp\u3000ideographic": "sentencepiece maps tab, NBSP and U+3000 to a space",
    "a\u2028b\u2029c\u0085d": "sentencepiece maps U+2028/U+2029 to a space",
    "\uff26\uff35\uff2c\uff2c \ufb01": "NFKC (fullwidth letters, the fi ligature)",
    "\u0663\u0664\u0665 \u00bd \u00b2 \u216b": "NFKC (1/2, superscript two, roman twelve)",
    "combining e\u0301 and a\u0308": "NFKC composes e + U+0301",
    "zero\u200bwidth": "sentencepiece drops U+200B",
    "\u0001\u0002 ctrl": "sentencepiece drops control characters",
    DEFAULT: "its paragraphs end in newlines, which sentencepiece maps to one space",
    "<tool> and <ctl>": "<tool> is user-defined in sentencepiece (kept whole) but "
                        "convert_hf_to_gguf.py types it normal",
}


@pytest.fixture(scope="module")
def gguf_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("tok")
    for m in MODELS:
        subprocess.run([str(BIN / "safetensors2gguf"), "-q", "--vocab-only", str(HF / m),
                        str(d / f"{m}.gguf")], check=True)
    return d


def ours(model_path, texts, flags=("-s",)):
    """Our ids for each text (special tokens parsed, like HF's added tokens)."""
    inp = "".join(t.encode("utf-8").hex() + "\n" for t in texts)
    r = subprocess.run([str(DRIVER), *flags, str(model_path)], input=inp,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) == len(texts)
    assert not any(l.startswith("ERR") for l in lines), lines
    return [[int(x) for x in l.split(",")] if l else [] for l in lines]


def hf_tokens(model, text, add_special=False):
    """What the HF tokenizer of fixtures/hf/<model> gives (as tests/llama/test_ours.py)."""
    folder = HF / model
    if (folder / "tokenizer.json").is_file():
        tok = tokenizers.Tokenizer.from_file(str(folder / "tokenizer.json"))
        return tok.encode(text, add_special_tokens=add_special).ids
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


@pytest.mark.parametrize("model", MODELS)
def test_like_hf(gguf_dir, model):
    got = ours(gguf_dir / f"{model}.gguf", STRINGS)
    wrong, stale = [], []
    for text, ids in zip(STRINGS, got):
        hf = hf_tokens(model, text)
        if model in SPM_MODELS and text in SPM_HF_DIFFERS:
            if ids == hf:
                stale.append(text)
        elif ids != hf:
            wrong.append(f"{text!r}: ours {ids[:24]} hf {hf[:24]}")
    assert not wrong, "\n".join(wrong)
    assert not stale, f"now equal to sentencepiece, drop from SPM_HF_DIFFERS: {stale}"


@pytest.mark.parametrize("model", MODELS)
def test_bos_eos_like_hf(gguf_dir, model):
    texts = ["hello world", "digits 1234567", ""]
    got = ours(gguf_dir / f"{model}.gguf", texts, flags=("-s", "-a"))
    assert got == [hf_tokens(model, t, add_special=True) for t in texts]


@pytest.mark.parametrize("model", MODELS)
def test_hf_folder_in_memory_equals_its_gguf(gguf_dir, model):
    """The model hf/ builds in memory gives the tokenizer of the GGUF it writes."""
    assert ours(HF / model, STRINGS) == ours(gguf_dir / f"{model}.gguf", STRINGS)


@pytest.mark.parametrize("model", ["llama-bpe", "qwen2"])
def test_bpe_pieces_give_the_text_back(gguf_dir, model):
    path = gguf_dir / f"{model}.gguf"
    for text, ids in zip(STRINGS, ours(path, STRINGS)):
        if not ids:
            continue
        r = subprocess.run([str(DRIVER), "-d", str(path), ",".join(map(str, ids))],
                           capture_output=True, text=True, check=True)
        assert bytes.fromhex(r.stdout.strip()) == text.encode("utf-8")


def test_default_text_differs_from_sentencepiece_only_by_whitespace(gguf_dir):
    flat = " ".join(DEFAULT.split())   # what the normalizer makes of it
    assert ours(gguf_dir / "llama-spm.gguf", [flat])[0] == hf_tokens("llama-spm", flat)


def test_default_text_is_a_few_hundred_tokens(gguf_dir):
    n = {m: len(ours(gguf_dir / f"{m}.gguf", [default_text()])[0]) for m in MODELS}
    assert all(200 <= v <= 2000 for v in n.values()), n


def test_unknown_pre_tokenizer_refused(gguf_dir, tmp_path):
    out = tmp_path / "tekken.gguf"
    subprocess.run([str(BIN / "safetensors2gguf"), "-q", "--vocab-only", "--pre", "tekken",
                    str(HF / "llama-bpe"), str(out)], check=True)
    r = subprocess.run([str(DRIVER), str(out), "x"], capture_output=True, text=True)
    assert r.returncode == 1
    assert r.stderr.startswith("unsupported:") and "tekken" in r.stderr, r.stderr
