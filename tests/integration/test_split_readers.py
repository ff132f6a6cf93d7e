"""model-inspect, gguf2safetensors and model-verify given the first part of a split GGUF
(as gguf-py's writer splits it: scripts/split_gguf.py) read every part, as llama.cpp's
loader does: the same tensors, in the same order, as the model unsplit, and the same
safetensors file out. A later part, or a set with a part missing: one line naming the
file, exit 1, and no output left behind."""
import json
import subprocess
import sys
from pathlib import Path

import gguf

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from split_gguf import split_gguf  # noqa: E402
from test_gguf_quantize import BIN, nothing_left, one_line, tiny_llama  # noqa: E402


def tool(name, *args):
    return subprocess.run([str(BIN / name)] + [str(a) for a in args], capture_output=True,
                          text=True)


def split_model(d):
    whole = tiny_llama(d / "whole.gguf", layers=2)
    (d / "parts").mkdir()
    parts = split_gguf(whole, d / "parts" / "m.gguf", 6)
    assert len(parts) == 4
    return whole, parts


def inspect_json(path):
    r = tool("model-inspect", "--json", path)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_model_inspect_shows_every_part_s_tensors(tmp_path):
    whole, parts = split_model(tmp_path)
    got, want = inspect_json(parts[0]), inspect_json(whole)
    assert got["format"] == "gguf-split" and want["format"] == "gguf"
    assert [t["name"] for t in got["tensors"]] == [t["name"] for t in want["tensors"]]
    assert [t["shape"] for t in got["tensors"]] == [t["shape"] for t in want["tensors"]]
    assert got["weights"] == want["weights"] == sum(
        int(t.n_elements) for t in gguf.GGUFReader(whole).tensors)
    # the first part's own keys, split keys included, as llama.cpp reads them
    assert set(got["metadata"]) >= {"split.no", "split.count", "split.tensors.count"}


def test_gguf2safetensors_of_the_parts_equals_the_unsplit_model_s(tmp_path):
    whole, parts = split_model(tmp_path)
    for src, out in ((whole, "a.safetensors"), (parts[0], "b.safetensors")):
        r = tool("gguf2safetensors", src, tmp_path / out)
        assert r.returncode == 0, r.stderr
    assert (tmp_path / "a.safetensors").read_bytes() == (tmp_path / "b.safetensors").read_bytes()


def test_model_verify_reads_every_part(tmp_path):
    whole, parts = split_model(tmp_path)
    r = tool("model-verify", "--json", "--tokens", "1,2,3,4", whole, parts[0])
    assert r.returncode == 0, r.stdout + r.stderr
    report = json.loads(r.stdout)
    assert report["verdict"] == "pass" and report["tensors"]["compared"] == 21

    def bump(name, a):                           # one tensor of the third part differs
        if name == "blk.1.ffn_up.weight":
            a[3, 5] += 1.0
    (tmp_path / "b").mkdir()
    other = tiny_llama(tmp_path / "b" / "whole.gguf", layers=2, fill=bump)
    parts_b = split_gguf(other, tmp_path / "b" / "m.gguf", 6)
    r = tool("model-verify", "--json", "--tokens", "1,2,3,4", whole, parts_b[0])
    assert r.returncode == 1, r.stdout + r.stderr
    report = json.loads(r.stdout)
    bad = [t["name"] for t in report["tensors"]["items"] if not t["ok"]]
    assert bad == ["blk.1.ffn_up.weight"], bad


def test_a_later_part_or_a_missing_part_is_refused(tmp_path):
    _, parts = split_model(tmp_path)
    for name in ("model-inspect", "gguf2safetensors"):
        args = [parts[1]] + ([tmp_path / "o.safetensors"] if name == "gguf2safetensors" else [])
        r = tool(name, *args)
        assert r.returncode == 1
        assert "part 2 of 4 of a split model: give the first part" in one_line(r)
        assert str(parts[1].name) in one_line(r)
    parts[2].unlink()
    for name in ("model-inspect", "gguf2safetensors"):
        args = [parts[0]] + ([tmp_path / "o.safetensors"] if name == "gguf2safetensors" else [])
        r = tool(name, *args)
        assert r.returncode == 1
        line = one_line(r)
        assert "part 3 of 4 is missing" in line and parts[2].name in line, line
    nothing_left(tmp_path, {"whole.gguf", "parts"})
