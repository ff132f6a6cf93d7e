"""Our tokenizer against llama.cpp's own test vocabularies (issue 19): the pinned tree's
models/ggml-vocab-*.gguf with their .inp/.out pairs (what tests/test-tokenizer-0.cpp
checks: no BOS/EOS added, special tokens not parsed), read at test time from the
unpacked sdist (scripts/make_llama_ref.py's fetch_sdist), never committed.

Every vocabulary whose tokenizer we build must give the .out ids for every .inp string.
One we refuse (a tokenizer model or pre-tokenizer we do not implement) is skipped,
naming why; the vocabularies we tokenize today must stay among those that pass."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
import make_llama_ref  # noqa: E402

DRIVER = Path(os.environ.get("LC_TEST_BIN", ROOT / "build" / "test-bin")) / "lc-tokenize"
SEP = b"\n__ggml_vocab_test__\n"
# What passes today: a vocabulary leaving this list is a regression.
SUPPORTED = {"command-r", "deepseek-coder", "deepseek-llm", "falcon", "gemma-4", "gpt-2",
             "llama-bpe", "llama-spm", "mpt", "phi-3", "qwen2", "qwen35", "refact", "starcoder"}


def models():
    make_llama_ref.fetch_sdist()
    return make_llama_ref.LLAMA / "models"


def pairs(vocab):
    """(texts, ids) as test-tokenizer-0.cpp reads them."""
    raw = Path(str(vocab) + ".inp").read_bytes()
    texts, pos = [], 0
    while pos < len(raw):
        nxt = raw.find(SEP, pos)
        if nxt < 0:
            texts.append(raw[pos:])
            break
        texts.append(raw[pos:nxt])
        pos = nxt + len(SEP)
    outs = Path(str(vocab) + ".out").read_text().split("\n")
    ids = [[int(x) for x in line.split()] for line in outs[:len(texts)]]
    assert len(ids) == len(texts)
    return texts, ids


def ours(vocab, texts):
    r = subprocess.run([str(DRIVER), str(vocab)], input="".join(t.hex() + "\n" for t in texts),
                       capture_output=True, text=True)
    if r.returncode == 1 and r.stderr.startswith("unsupported:"):
        return None, r.stderr.strip()
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) == len(texts)
    return [l if l.startswith("ERR") else [int(x) for x in l.split(",")] if l else []
            for l in lines], None


VOCABS = sorted(p.name[len("ggml-vocab-"):-len(".gguf")]
                for p in models().glob("ggml-vocab-*.gguf") if Path(str(p) + ".inp").exists())
_passed = set()


@pytest.mark.parametrize("name", VOCABS)
def test_vocab_pairs(name):
    vocab = models() / f"ggml-vocab-{name}.gguf"
    texts, want = pairs(vocab)
    got, why = ours(vocab, texts)
    if got is None:
        assert name not in SUPPORTED, f"{name} is refused now: {why}"
        pytest.skip(f"{name}: {why}")
    wrong = [f"{t[:50]!r}: ours {g[:12] if isinstance(g, list) else g}, llama.cpp {w[:12]}"
             for t, g, w in zip(texts, got, want) if g != w]
    assert not wrong, f"{len(wrong)}/{len(texts)} strings differ:\n" + "\n".join(wrong)
    _passed.add(name)


def test_supported_vocabularies_all_ran():
    assert SUPPORTED <= _passed, SUPPORTED - _passed
