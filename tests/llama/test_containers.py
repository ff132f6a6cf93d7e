"""llama.cpp on what our bare-container path makes of a vocab-only GGUF (issue 19, 14).

A vocab-only GGUF -> gguf2safetensors (keys as strings in __metadata__) ->
safetensors2gguf is a container, not a model: it must claim no architecture, and
llama.cpp must refuse it as a model (it did before too, but because the container
claimed general.architecture = llama with string-typed keys). The vocab-only GGUF we
started from still loads and tokenizes."""
import os
import subprocess

import gguf
import llama_cpp
import pytest

from conftest import BIN, HF, llama


def tool(name, *args):
    r = subprocess.run([str(BIN / name), "-q", *map(str, args)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_vocab_only_container_is_no_model(tmp_path):
    v, st, c = tmp_path / "v.gguf", tmp_path / "v.safetensors", tmp_path / "c.gguf"
    tool("safetensors2gguf", "--vocab-only", HF / "llama-spm", v)
    tool("gguf2safetensors", v, st)
    tool("safetensors2gguf", st, c)
    assert llama(v, vocab_only=True).tokenize(b"hello world", add_bos=False)
    assert "general.architecture" not in gguf.GGUFReader(str(c)).fields
    with pytest.raises(ValueError):
        llama_cpp.Llama(model_path=str(c), vocab_only=True, verbose=False)
