"""Our tokenizer (infer/tokenize through tests/tools/lc-tokenize) on llama.cpp's own
tokenizer tests: the pinned tree's models/ggml-vocab-<name>.gguf with its .inp texts and
.out ids (what tests/test-tokenizer-0 checks: no BOS/EOS added, special tokens not
parsed). The tree is the llama-cpp-python sdist scripts/make_llama_ref.py unpacks under
build/llama-src (fetched once, as for the references). qwen35 is Qwen3.5's pre-tokenizer
(letters with their combining marks); qwen2 the one it differs from."""
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TEST_BIN = ROOT / "build" / "test-bin"
PAIRS = ["qwen35", "qwen2"]
SEP = "\n__ggml_vocab_test__\n"


@pytest.fixture(scope="session")
def models_dir():
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "make_llama_ref.py"),
                        "--converter-path"], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    return Path(r.stdout.strip()).parent / "models"


@pytest.mark.parametrize("name", PAIRS)
def test_vocab_pair_equals_llama_cpp(models_dir, name):
    base = models_dir / f"ggml-vocab-{name}.gguf"
    texts = base.with_name(base.name + ".inp").read_text(encoding="utf-8").split(SEP)
    if texts[-1] == "":
        texts.pop()
    texts[-1] = texts[-1].removesuffix("\n__ggml_vocab_test__")
    want = base.with_name(base.name + ".out").read_text().split("\n")
    lines = "".join(t.encode("utf-8").hex() + "\n" for t in texts)
    r = subprocess.run([str(TEST_BIN / "lc-tokenize"), str(base)], input=lines,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    got = r.stdout.split("\n")
    bad = [(t, got[i], want[i]) for i, t in enumerate(texts)
           if got[i] != ",".join(want[i].split())]
    assert len(texts) > 40 and bad == [], bad[:3]
