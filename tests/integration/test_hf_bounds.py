"""Issue 11 item 12, the hf/ part: numbers in a small config.json never become
allocations or output the tensors (or the tokenizer) cannot justify.

Each case edits a copy of fixtures/hf/llama-spm's config.json and runs
safetensors2gguf under tests/tools/lc-peak (the tool's own peak RSS): it must refuse
with a one-line error naming what is wrong, exit 1, write no OUT, and stay small.
Before the fix (df331c4) these cost gigabytes or wrote an 819 MB GGUF."""
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(os.environ.get("LC_BIN", ROOT / "build" / "bin"))
TBIN = Path(os.environ.get("LC_TEST_BIN", ROOT / "build" / "test-bin"))
HF = ROOT / "fixtures" / "hf"
PEAK_LIMIT_KIB = 64 * 1024      # the tool converts this folder in ~4 MiB


def folder(tmp_path, edit):
    d = tmp_path / "m"
    shutil.copytree(HF / "llama-spm", d)
    cfg = json.loads((d / "config.json").read_text())
    edit(cfg)
    (d / "config.json").write_text(json.dumps(cfg))
    return d


def run_peak(tmp_path, *args):
    report = tmp_path / "peak.txt"
    r = subprocess.run([str(TBIN / "lc-peak"), str(report), str(BIN / "safetensors2gguf"),
                        "-q", *map(str, args)], capture_output=True, text=True, timeout=60)
    secs, kib = report.read_text().split()
    return r, int(kib)


def llama3(cfg):
    cfg["head_dim"] = 10 ** 9
    cfg["rope_scaling"] = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                           "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}


CASES = [
    # (name, edit, extra args, words the error must hold)
    ("vocab-30M-vocab-only", lambda c: c.update(vocab_size=30_000_000), ["--vocab-only"],
     "vocab_size 30000000"),
    ("vocab-30M", lambda c: c.update(vocab_size=30_000_000), [], "config.json implies [30000000, 64]"),
    ("head-dim-1e9-llama3", llama3, [], "config.json implies"),
    ("layers-4e9", lambda c: c.update(num_hidden_layers=4_000_000_000), [], "4000000000 layers"),
]


@pytest.mark.parametrize("name,edit,extra,needle", CASES, ids=[c[0] for c in CASES])
def test_config_numbers_are_checked_before_use(tmp_path, name, edit, extra, needle):
    d = folder(tmp_path, edit)
    out = tmp_path / "out.gguf"
    r, kib = run_peak(tmp_path, *extra, d, out)
    assert r.returncode == 1, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert needle in r.stderr, r.stderr
    assert not out.exists()
    assert kib < PEAK_LIMIT_KIB, f"peak RSS {kib} KiB"


def test_vocab_padding_a_tokenizer_can_justify_still_converts(tmp_path):
    """llama.cpp pads to config.json's vocab_size: 400 pieces -> 32000 ids is fine
    without tensors (at most max(pieces, 65536) placeholders) and with them."""
    d = folder(tmp_path, lambda c: c.update(vocab_size=32000))
    out = tmp_path / "v.gguf"
    r, kib = run_peak(tmp_path, "--vocab-only", d, out)
    assert r.returncode == 0, r.stderr
    assert out.stat().st_size > 32000 * 8
    d2 = folder(tmp_path / "b", lambda c: c.update(vocab_size=400 + 65537))
    r, _ = run_peak(tmp_path, "--vocab-only", d2, tmp_path / "w.gguf")
    assert r.returncode == 1 and "65537 placeholders" in r.stderr, r.stderr
