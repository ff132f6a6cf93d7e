"""llama.cpp judges infer/tokenize: on the GGUFs our converter writes ("ours") and on the
reference GGUFs llama.cpp's own converter wrote ("ref"), our ids (through the test driver
lc-tokenize) must equal llama.cpp's Llama.tokenize for every test string, with and
without special-token parsing and BOS/EOS -- plus, on llama-bpe's vocabulary written with
the other pre-tokenizers we implement (gpt-2, default, qwen2), a seeded set of random
strings mixing scripts, digits, whitespace, specials and invalid UTF-8.

Where the HF tokenizer disagrees with llama.cpp is listed (and asserted) in
tests/integration/test_tokenize.py; here llama.cpp is the judge and no exception exists.
"""
import json
import os
import random
import subprocess
from pathlib import Path

import pytest

from conftest import BIN, HF, MODELS, llama, ref_path

ROOT = Path(__file__).resolve().parents[2]
DRIVER = Path(os.environ.get("LC_TEST_BIN", BIN.parent / "test-bin")) / "lc-tokenize"


def default_text():
    return subprocess.run([str(DRIVER), "--default-text"], capture_output=True, text=True,
                          check=True).stdout


STRINGS = [s.encode("utf-8") for s in
           json.loads((ROOT / "tests" / "tokenize_strings.json").read_text()) + [default_text()]]
MODES = [("special", ["-s"], True, False), ("plain", [], False, False),
         ("special+bos", ["-s", "-a"], True, True), ("bos", ["-a"], False, True)]


def ours(path, texts, flags):
    inp = "".join(t.hex() + "\n" for t in texts)
    r = subprocess.run([str(DRIVER), *flags, str(path)], input=inp, capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) == len(texts) and not any(l.startswith("ERR") for l in lines), lines
    return [[int(x) for x in l.split(",")] if l else [] for l in lines]


def judge(path, texts):
    """Every mode: the texts whose ids differ from llama.cpp's, with both lists."""
    m = llama(path, vocab_only=True)
    wrong = []
    for name, flags, special, add in MODES:
        for text, ids in zip(texts, ours(path, texts, flags)):
            want = m.tokenize(text, add_bos=add, special=special)
            if ids != want:
                wrong.append(f"{name} {text!r}: ours {ids[:20]} llama.cpp {want[:20]}")
    return wrong


@pytest.fixture(scope="module")
def vocab_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("tokvocab")


def vocab_gguf(vocab_dir, model, pre=None):
    out = vocab_dir / f"{model}-{pre or 'own'}.gguf"
    if not out.exists():
        cmd = [str(BIN / "safetensors2gguf"), "-q", "--vocab-only", str(HF / model), str(out)]
        if pre:
            cmd[3:3] = ["--pre", pre]
        subprocess.run(cmd, check=True)
    return out


@pytest.mark.parametrize("model", MODELS)
def test_ours_like_llama_cpp(vocab_dir, model):
    wrong = judge(vocab_gguf(vocab_dir, model), STRINGS)
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("model", MODELS)
def test_on_the_reference_gguf_like_llama_cpp(model):
    wrong = judge(ref_path(model, "f16"), STRINGS)
    assert not wrong, "\n".join(wrong)


ALPHABET = list("abcdeSTMDLRVE'sStTmMdDlLrRvVeE0123456789    \n\r\t.,!?;:-_()[]{}<>|$+=^~`@#%&*/\\\"") + [
    "\u00e9", "\u00df", "\u0416", "\u0436", "\u4e2d", "\u65e5", "\U0001f600", "\U0001f44d\U0001f3fd",
    "\u0301", "\u0308", "\u0663", "\u00bd", "\u00b2", "\u216b", "\u00a0", "\u3000", "\u2028", "\u0085",
    "\u200b", "\u0001", "\x7f", "\u2014", "\u2019", "\u00ab", "\u20ac", "\ufeff", "\u0378", "\U0010ffff",
    "\ue000", "\u2581", "<s>", "</s>", "<|im_end|>", "<|im_start|>", "<|endoftext|>", "<extra_word>",
    "<|begin_of_text|>", "<|eot_id|>", "<tool>", "<ctl>", "<unk>", " 's", "'ll", "123456"]
# Bad UTF-8 llama.cpp reads as U+FFFD (nothing past U+10FFFF: llama.cpp throws on those).
BAD = [b"\x80", b"\xff", b"\xe6\x97", b"\xc3", b"\xf0\x9f\x98", b"\xc0\x80", b"\xed\xa0\x80",
       b"\xf8\x88\x80\x80\x80"]


def random_strings(seed, n):
    rnd = random.Random(seed)
    out = []
    for _ in range(n):
        parts = [rnd.choice(BAD) if rnd.random() < 0.05 else rnd.choice(ALPHABET).encode()
                 for _ in range(rnd.randint(0, 30))]
        out.append(b"".join(parts))
    return out


@pytest.mark.parametrize("model,pre", [("llama-spm", None), ("llama-bpe", None),
                                       ("qwen2", None), ("llama-bpe", "gpt-2"),
                                       ("llama-bpe", "default"), ("llama-bpe", "qwen2")])
def test_random_strings_like_llama_cpp(vocab_dir, model, pre):
    wrong = judge(vocab_gguf(vocab_dir, model, pre), random_strings(20240917, 1500))
    assert not wrong, f"{len(wrong)} differ:\n" + "\n".join(wrong[:10])
