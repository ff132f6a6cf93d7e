"""The pre-tokenizer names we accept are llama.cpp's (issue 19, 12): the table in
infer/tokenize_pre_names_impl.h is what scripts/gen_pre_names.py makes of the pinned
tree's src/llama-vocab.cpp, read at test time from the unpacked sdist
(scripts/make_llama_ref.py's fetch_sdist). And a name that maps to a split we implement
tokenizes as llama.cpp tokenizes it: a BPE reference GGUF with tokenizer.ggml.pre changed
to each alias gives llama.cpp's ids."""
import re
import sys

import pytest

from conftest import ROOT
from test_tokenize import STRINGS, judge, vocab_gguf

sys.path.insert(0, str(ROOT / "scripts"))
import gen_pre_names  # noqa: E402
import make_llama_ref  # noqa: E402

HEADER = ROOT / "infer" / "tokenize_pre_names_impl.h"


def pinned_source():
    make_llama_ref.fetch_sdist()
    return (make_llama_ref.LLAMA / "src" / "llama-vocab.cpp").read_text()


def test_table_is_llama_cpps():
    want = gen_pre_names.header(pinned_source())
    assert HEADER.read_text() == want, "regenerate: scripts/gen_pre_names.py > " + str(HEADER)


def test_issue_names_are_in_it():
    text = HEADER.read_text()
    for name in ["deepseek-r1-qwen", "falcon3", "falcon-h1", "pixtral", "phi-2", "kormo",
                 "lfm2", "gigachat", "mellum", "modern-bert", "jina-v2-de", "jina-es"]:
        assert f'"{name}"' in text, name


ALIASES = re.findall(r'^\{ "([^"]+)", LC_PRE_\w+', HEADER.read_text(), re.M)


@pytest.mark.parametrize("pre", ALIASES)
def test_every_alias_tokenizes_like_llama_cpp(tmp_path, pre):
    wrong = judge(vocab_gguf(tmp_path, "llama-bpe", pre), STRINGS)
    assert not wrong, "\n".join(wrong)
