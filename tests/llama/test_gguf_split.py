"""Split output against llama.cpp's own gguf-split (tools/gguf-split of the pinned tree,
built from the same sdist and flags as the wheel by scripts/llama/build-gguf-split.sh into
build/llama-venv/bin/llama-gguf-split).

- gguf-split --split (by tensor count, by size, --no-tensor-first-split) and --merge:
  every file byte for byte, and the plan it prints, on the fixtures' reference GGUFs and
  on the generated ~1.5 GiB model of make bench;
- safetensors2gguf and gguf-quantize with --split-max-*: their parts are llama.cpp's
  gguf-split of the one file they write without the options (gguf-quantize's on the
  1.5 GiB model too), and --part K/N is part K;
- llama.cpp loads the split files from their first part and gives the unsplit file's
  logits, exactly.
"""
import filecmp
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from conftest import BIN, HF, REF, ROOT, logits

LLAMA_SPLIT = Path(os.environ.get("LC_LLAMA_GGUF_SPLIT",
                                  ROOT / "build" / "llama-venv" / "bin" / "llama-gguf-split"))
OURS = BIN / "gguf-split"
BENCH = ROOT / "build" / "bench"
BIG_FOLDER = BENCH / "hf-llama-1.5g"
BIG = BENCH / "hf-llama-1.5g-bf16.gguf"
VENV_PY = ROOT / "build" / "venv" / "bin" / "python"


def run(cmd, cwd=None):
    r = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, cwd=cwd)
    assert r.returncode == 0, f"{cmd}: exit {r.returncode}: {r.stderr[-2000:]}"
    return r


@pytest.fixture(scope="session", autouse=True)
def llama_split_built():
    assert LLAMA_SPLIT.is_file(), (f"{LLAMA_SPLIT} is missing: scripts/bootstrap-llama.sh "
                                   "builds it (scripts/llama/build-gguf-split.sh)")


def parts(prefix):
    d, stem = prefix.parent, prefix.name
    return sorted(p for p in d.iterdir() if p.name.startswith(stem + "-") and
                  p.name.endswith(".gguf") and "-of-" in p.name)


def same_files(a, b):
    pa, pb = parts(a), parts(b)
    assert [p.name[len(a.name):] for p in pa] == [p.name[len(b.name):] for p in pb]
    for x, y in zip(pa, pb):
        assert filecmp.cmp(x, y, shallow=False), f"{x} differs from llama.cpp's {y}"
    return pa


def llama_plan(stdout):
    """gguf-split's plan lines (it prints "Writing file ..." too, when it writes)."""
    return [l for l in stdout.splitlines() if l.startswith(("n_split:", "split "))]


def split_both(src, tmp, opts, tag):
    """Our and llama.cpp's gguf-split of src with opts: the parts compared byte for
    byte, the printed plans compared; returns our parts' prefix."""
    ours, ref = tmp / f"ours-{tag}", tmp / f"ref-{tag}"
    dry_ours = run([OURS, "-q", "--dry-run", *opts, src, ours]).stdout
    dry_ref = run([LLAMA_SPLIT, "--dry-run", *opts, src, ref]).stdout
    assert dry_ours.splitlines() == llama_plan(dry_ref)
    assert not parts(ours), "--dry-run wrote nothing"
    assert llama_plan(run([OURS, "-q", *opts, src, ours]).stdout) == llama_plan(dry_ref)
    run([LLAMA_SPLIT, *opts, src, ref])
    same_files(ours, ref)
    return ours, ref


def merge_both(ours, ref, tmp, tag):
    run([OURS, "-q", "--merge", parts(ours)[0], tmp / f"m-ours-{tag}.gguf"])
    run([LLAMA_SPLIT, "--merge", parts(ref)[0], tmp / f"m-ref-{tag}.gguf"])
    assert filecmp.cmp(tmp / f"m-ours-{tag}.gguf", tmp / f"m-ref-{tag}.gguf", shallow=False)
    return tmp / f"m-ours-{tag}.gguf"


FIXTURES = ["llama-spm-f16", "llama-bpe-q8_0", "qwen2-f32", "llama-tf-bf16"]
OPTIONS = [["--split-max-tensors", "1"], ["--split-max-tensors", "7"], [],
           ["--split-max-tensors", "10", "--no-tensor-first-split"],
           ["--split-max-size", "1M"], ["--split-max-size", "1M", "--no-tensor-first-split"]]


@pytest.mark.parametrize("name", FIXTURES)
@pytest.mark.parametrize("opts", OPTIONS, ids=lambda o: "_".join(o).replace("-", "") or "default")
def test_split_and_merge_are_llama_cpp_s(tmp_path, name, opts):
    src = REF / f"{name}.gguf"
    ours, ref = split_both(src, tmp_path, opts, "x")
    merge_both(ours, ref, tmp_path, "x")


def test_a_split_model_runs_in_llama_cpp(tmp_path):
    """Loaded from its first part, with the unsplit file's logits, bit for bit."""
    src = REF / "llama-spm-f32.gguf"
    run([OURS, "-q", "--split-max-tensors", "5", src, tmp_path / "m"])
    first = parts(tmp_path / "m")[0]
    tokens = [1, 15, 30, 7, 99, 4]
    assert np.array_equal(logits(first, tokens), logits(src, tokens))


@pytest.mark.parametrize("model,outtype,opts", [
    ("llama-spm", "f16", ["--split-max-tensors", "9"]),
    ("qwen2", "q8_0", ["--split-max-tensors", "4", "--no-tensor-first-split"]),
    ("llama-bpe", "q4_k_m", ["--split-max-size", "1M"]),
])
def test_safetensors2gguf_split_is_gguf_split_of_its_file(tmp_path, model, outtype, opts):
    one = tmp_path / "one.gguf"
    run([BIN / "safetensors2gguf", "-q", "--outtype", outtype, HF / model, one])
    run([BIN / "safetensors2gguf", "-q", "--outtype", outtype, *opts, HF / model,
         tmp_path / "ours.gguf"])
    run([LLAMA_SPLIT, *opts, one, tmp_path / "ref"])
    got = same_files(tmp_path / "ours", tmp_path / "ref")
    for k in range(1, len(got) + 1):     # every part alone
        run([BIN / "safetensors2gguf", "-q", "--outtype", outtype, *opts, "--part",
             f"{k}/{len(got)}", HF / model, tmp_path / f"p{k}.gguf"])
        alone = parts(tmp_path / f"p{k}")
        assert [p.name[1 + len(str(k)):] for p in alone] == [got[k - 1].name[4:]]
        assert filecmp.cmp(alone[0], got[k - 1], shallow=False)
    tokens = [1, 5, 9, 2]
    assert np.array_equal(logits(got[0], tokens), logits(one, tokens))


@pytest.mark.parametrize("ftype", ["Q8_0", "Q4_K_M"])
def test_gguf_quantize_split_is_gguf_split_of_its_file(tmp_path, ftype):
    src = REF / "qwen2-f16.gguf"
    opts = ["--split-max-tensors", "6"]
    run([BIN / "gguf-quantize", "-q", src, tmp_path / "one.gguf", ftype])
    run([BIN / "gguf-quantize", "-q", *opts, src, tmp_path / "ours.gguf", ftype])
    run([LLAMA_SPLIT, *opts, tmp_path / "one.gguf", tmp_path / "ref"])
    got = same_files(tmp_path / "ours", tmp_path / "ref")
    k = len(got) // 2 + 1
    run([BIN / "gguf-quantize", "-q", *opts, "--part", f"{k}/{len(got)}", src,
         tmp_path / "p.gguf", ftype])
    assert filecmp.cmp(parts(tmp_path / "p")[0], got[k - 1], shallow=False)
    merged = merge_both(tmp_path / "ours", tmp_path / "ref", tmp_path, "q")
    tokens = [1, 5, 9, 2]
    assert np.array_equal(logits(got[0], tokens), logits(tmp_path / "one.gguf", tokens))
    assert np.array_equal(logits(merged, tokens), logits(tmp_path / "one.gguf", tokens))


@pytest.fixture(scope="module")
def big():
    """The ~1.5 GiB bf16 GGUF of make bench (made once, kept in build/bench/)."""
    if not (BIG_FOLDER / "config.json").exists():
        run([VENV_PY, ROOT / "scripts" / "bench" / "hf2gguf_bench.py", "gen", BIG_FOLDER])
    if not BIG.exists():
        run([BIN / "safetensors2gguf", "-q", "--outtype", "bf16", BIG_FOLDER,
             str(BIG) + ".part"])
        os.rename(str(BIG) + ".part", BIG)
    return BIG


@pytest.fixture
def big_tmp(tmp_path):
    """tmp_path, emptied as soon as the test ends, passed or failed: each big-model test
    writes gigabytes, and pytest keeps every test's folder until the whole run ends (a CI
    machine's disk filled up halfway through check-llama that way)."""
    yield tmp_path
    shutil.rmtree(tmp_path, ignore_errors=True)


@pytest.mark.parametrize("opts", [["--split-max-size", "400M"],
                                  ["--split-max-size", "1G", "--no-tensor-first-split"],
                                  ["--split-max-tensors", "32"]],
                         ids=["400M", "1G_nofirst", "32tensors"])
def test_big_model_split_and_merge(big_tmp, big, opts):
    tmp_path = big_tmp
    ours, ref = split_both(big, tmp_path, opts, "b")
    for p in parts(ref):                # one copy at a time on disk
        p.unlink()
    run([OURS, "-q", "--merge", parts(ours)[0], tmp_path / "m.gguf"])
    # llama.cpp's merge of these parts (the same bytes as its own: compared above).
    run([LLAMA_SPLIT, "--merge", parts(ours)[0], tmp_path / "m-ref.gguf"])
    assert filecmp.cmp(tmp_path / "m.gguf", tmp_path / "m-ref.gguf", shallow=False)


def test_big_model_quantized_split_is_gguf_split_of_its_file(big_tmp, big):
    """gguf-quantize's parts of the 1.5 GiB model are llama.cpp's split of its one file."""
    tmp_path = big_tmp
    opts = ["--split-max-size", "130M"]
    run([BIN / "gguf-quantize", "-q", big, tmp_path / "one.gguf", "Q4_K_M"])
    run([LLAMA_SPLIT, *opts, tmp_path / "one.gguf", tmp_path / "ref"])
    (tmp_path / "one.gguf").unlink()
    run([BIN / "gguf-quantize", "-q", *opts, big, tmp_path / "ours.gguf", "Q4_K_M"])
    got = same_files(tmp_path / "ours", tmp_path / "ref")
    assert len(got) == 4
