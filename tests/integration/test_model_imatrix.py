"""model-imatrix: the file llama-imatrix writes, values checked where they can be computed
without a forward pass, and gguf-quantize --imatrix reading it.

The values themselves are judged against llama.cpp's own forward pass by
tests/llama/test_imatrix.py (make check-llama). Here, with gguf-py as the reader of the
file and numpy on the weights of fixtures/hf-ref (convert_hf_to_gguf.py's f32 GGUFs):
  - the keys, their types and order, the tensors sorted by name, F32, their shapes (one
    row per expert for a stack), as tools/imatrix's save_imatrix writes them;
  - layer 0's attn_q / attn_k / attn_v input is rmsnorm(token_embd[ids]) * attn_norm:
    computed in float64 from the ids model-imatrix --json reports, equal within 1e-5
    (measured 7.7e-8);
  - a mixture of experts: each expert's count is the tokens routed to it (they sum to
    top-k x tokens); every token reaches k experts with the router's own input, so the
    experts' gate sums add up to k x the router's (1e-6; measured 7.9e-8, float32
    rounding of the file), and up's equal gate's exactly;
  - the HF folder gives the GGUF's matrix (1e-5; measured 2.8e-7), any thread count the
    same bytes;
  - gguf-quantize --imatrix takes it for IQ4_XS and Q4_K_M and records it;
  - bad input: one line, exit 1 (2 for a usage error), no OUT."""
import json
import os
import subprocess
from pathlib import Path

import gguf
import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
HF = ROOT / "fixtures" / "hf"
REF = ROOT / "fixtures" / "hf-ref"
BIN = Path(os.environ.get("LC_BIN", ROOT / "build" / "bin"))
TOOL = BIN / "model-imatrix"


def run(*args, ok=True):
    r = subprocess.run([str(a) for a in args], capture_output=True, text=True)
    if ok:
        assert r.returncode == 0, r.stderr
    return r


def imatrix(src, out, *opts):
    r = run(TOOL, "--json", "-q", *opts, src, out)
    return json.loads(r.stdout)


def read(path):
    """keys (name -> (type, value)) in order, and name -> (shape as ne, data) in order."""
    rd = gguf.GGUFReader(str(path))
    keys = {}
    for f in rd.fields.values():
        if f.name.startswith("GGUF."):
            continue
        t = f.types[0]
        if t == gguf.GGUFValueType.ARRAY:
            v = ([bytes(f.parts[i]).decode() for i in f.data]
                 if f.types[1:] == [gguf.GGUFValueType.STRING] else None)
        elif t == gguf.GGUFValueType.STRING:
            v = bytes(f.parts[f.data[0]]).decode()
        else:
            v = int(f.parts[f.data[0]][0])
        keys[f.name] = (t, v)
    tensors = {t.name: ([int(x) for x in t.shape], t.tensor_type,
                        np.array(t.data, dtype=np.float64)) for t in rd.tensors}
    return keys, tensors


def weights(model):
    rd = gguf.GGUFReader(str(REF / f"{model}-f32.gguf"))
    w = {t.name: np.array(t.data, dtype=np.float64) for t in rd.tensors}
    eps = float(next(f for f in rd.fields.values()
                     if f.name.endswith("layer_norm_rms_epsilon")).parts[-1][0])
    return w, eps


def test_file_is_llama_imatrix_format(tmp_path):
    out = tmp_path / "im.gguf"
    text = tmp_path / "text.txt"
    text.write_text("The quick brown fox jumps over the lazy dog. " * 40)
    rep = imatrix(HF / "qwen3moe", out, "-c", "32", "--chunks", "4", "-f", text)
    keys, tensors = read(out)
    assert list(keys) == ["general.type", "imatrix.datasets", "imatrix.chunk_count",
                          "imatrix.chunk_size"]
    assert keys["general.type"] == (gguf.GGUFValueType.STRING, "imatrix")
    assert keys["imatrix.datasets"] == (gguf.GGUFValueType.ARRAY, [str(text)])
    assert keys["imatrix.chunk_count"] == (gguf.GGUFValueType.UINT32, 4)
    assert keys["imatrix.chunk_size"] == (gguf.GGUFValueType.UINT32, 32)
    assert rep["chunks"] == 4 and rep["chunk_count"] == 4 and len(rep["tokens"]) == 4
    names = list(tensors)
    bases = names[0::2]
    assert names[1::2] == [b + ".counts" for b in [n[:-len(".in_sum2")] for n in bases]]
    assert all(n.endswith(".in_sum2") for n in bases)
    assert bases == sorted(bases) and len(bases) == rep["entries"]
    assert all(t[1] == gguf.GGMLQuantizationType.F32 for t in tensors.values())
    exps = tensors["blk.0.ffn_gate_exps.weight.in_sum2"]
    assert exps[0] == [32, 8]                                     # ne: cols, experts
    assert tensors["blk.0.ffn_gate_exps.weight.counts"][0] == [1, 8]
    assert tensors["blk.0.attn_q.weight.in_sum2"][0] == [32]
    assert tensors["blk.0.attn_q.weight.counts"][0] == [1]
    assert "output.weight.in_sum2" not in tensors             # only with --process-output


def test_layer0_attention_input_is_computed_from_the_weights(tmp_path):
    rep = imatrix(REF / "llama-spm-f32.gguf", tmp_path / "im.gguf", "-c", "48",
                  "--chunks", "5")
    _, tensors = read(tmp_path / "im.gguf")
    w, eps = weights("llama-spm")
    embd = w["token_embd.weight"].reshape(-1, 64)
    ids = np.array(rep["tokens"]).reshape(-1)
    assert (np.array(rep["tokens"])[:, 0] == 1).all()           # BOS starts every chunk
    x = embd[ids]
    h = x / np.sqrt((x * x).mean(axis=1, keepdims=True) + eps) * w["blk.0.attn_norm.weight"]
    want = (h * h).sum(axis=0)
    for m in ("attn_q", "attn_k", "attn_v"):
        _, _, got = tensors[f"blk.0.{m}.weight.in_sum2"]
        assert np.abs(got - want).max() <= 1e-5 * np.abs(want).max(), m
        assert tensors[f"blk.0.{m}.weight.counts"][2].tolist() == [5 * 48]


@pytest.mark.parametrize("model,top_k", [("qwen3moe", 2), ("mixtral", 2)])
def test_experts_count_the_tokens_routed_to_them(model, top_k, tmp_path):
    rep = imatrix(HF / model, tmp_path / "im.gguf", "-c", "40", "--chunks", "3")
    _, t = read(tmp_path / "im.gguf")
    n = 3 * 40
    layers = {k.split(".")[1] for k in t if k.startswith("blk.")}
    for l in sorted(layers):
        p = f"blk.{l}."
        counts = t[p + "ffn_gate_exps.weight.counts"][2]
        assert counts.sum() == top_k * n and (counts >= 0).all()
        for m in ("ffn_up_exps", "ffn_down_exps"):
            assert np.array_equal(t[p + m + ".weight.counts"][2], counts)
        assert t[p + "ffn_gate_inp.weight.counts"][2].tolist() == [n]
        gate = t[p + "ffn_gate_exps.weight.in_sum2"]
        cols = gate[0][0]
        per_expert = gate[2].reshape(-1, cols)
        router = t[p + "ffn_gate_inp.weight.in_sum2"][2]
        assert np.abs(per_expert.sum(axis=0) - top_k * router).max() <= 1e-6 * router.max()
        assert np.array_equal(t[p + "ffn_up_exps.weight.in_sum2"][2], gate[2])
    assert rep["chunk_count"] == 3


@pytest.mark.parametrize("model", ["llama-spm", "qwen3moe"])
def test_folder_equals_gguf_and_threads_do_not_matter(model, tmp_path):
    a = imatrix(HF / model, tmp_path / "a.gguf", "-c", "64", "--chunks", "2",
                "--process-output", "-t", "1")
    b = imatrix(REF / f"{model}-f32.gguf", tmp_path / "b.gguf", "-c", "64", "--chunks", "2",
                "--process-output", "-t", "3")
    assert a["tokens"] == b["tokens"]
    _, ta = read(tmp_path / "a.gguf")
    _, tb = read(tmp_path / "b.gguf")
    assert list(ta) == list(tb)
    for k in ta:
        x, y = ta[k][2], tb[k][2]
        assert np.abs(x - y).max() <= 1e-5 * np.abs(y).max(), k
    imatrix(HF / model, tmp_path / "c.gguf", "-c", "64", "--chunks", "2", "--process-output",
            "-t", "4")
    assert (tmp_path / "a.gguf").read_bytes() == (tmp_path / "c.gguf").read_bytes()


@pytest.mark.parametrize("ftype", ["IQ4_XS", "Q4_K_M"])
def test_gguf_quantize_takes_it(ftype, tmp_path):
    im = tmp_path / "im.gguf"
    text = tmp_path / "calib.txt"
    text.write_text("Importance matrices weight the quantization error. " * 60)
    rep = imatrix(HF / "llama-spm", im, "-c", "64", "-f", text)
    out = tmp_path / "q.gguf"
    run(BIN / "gguf-quantize", "--imatrix", im, HF / "llama-spm", out, ftype)
    keys, _ = read(out)
    assert keys["quantize.imatrix.file"][1] == str(im)
    assert keys["quantize.imatrix.dataset"][1] == str(text)
    assert keys["quantize.imatrix.entries_count"][1] == rep["entries"] == 4 * 7
    assert keys["quantize.imatrix.chunks_count"][1] == rep["chunks"]


def refused(tmp_path, *args, code=1, words=()):
    out = tmp_path / "out.gguf"
    r = run(TOOL, *args, out, ok=False)
    assert r.returncode == code, r.stderr
    if code == 1:
        assert r.stderr.count("\n") == 1 and r.stderr.startswith("model-imatrix: "), r.stderr
        for w in words:
            assert w in r.stderr, r.stderr
    assert not out.exists() and not list(tmp_path.glob(".out.gguf.lc-*"))


def test_bad_input(tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"")
    short = tmp_path / "short.txt"
    short.write_text("Call me Ishmael.")
    refused(tmp_path, "-f", empty, HF / "llama-spm", words=("empty",))
    refused(tmp_path, "-f", short, HF / "llama-spm", words=("fewer than one chunk", "512"))
    refused(tmp_path, "--ctx", "0", HF / "llama-spm", words=("--ctx",))
    refused(tmp_path, "-c", "16", ROOT / "fixtures" / "safetensors" / "all_dtypes.safetensors",
            words=("forward pass cannot run",))
    refused(tmp_path, "-c", "16", short, words=("short.txt",))       # text is not a model
    refused(tmp_path, "-f", tmp_path / "missing.txt", HF / "llama-spm", words=("missing.txt",))
    refused(tmp_path, "--chunks", "0", HF / "llama-spm", code=2)
    refused(tmp_path, "--ctx", "x", HF / "llama-spm", code=2)


def test_show_statistics(tmp_path):
    """llama-imatrix's table: per entry the activations (sums over counts, experts with a
    count only), checked in float64 against what the file holds (1e-5: the tool computes
    in float32 as llama-imatrix does)."""
    im = tmp_path / "im.gguf"
    imatrix(HF / "qwen3moe", im, "-c", "32", "--chunks", "3")
    r = run(TOOL, "--show-statistics", im)
    _, t = read(im)
    lines = r.stdout.splitlines()
    assert lines[1] == f"Computing statistics for {im} ({len(t) // 2} tensors)"
    rows = {}
    for ln in lines[5:]:
        if not ln.strip():
            break
        f = [x.strip() for x in ln.split("\t")]
        rows[(f[0], f[1])] = f
    assert len(rows) == len(t) // 2
    for name, layer in [("ffn_gate_exps", "1"), ("attn_q", "0"), ("ffn_down_exps", "0")]:
        base = f"blk.{layer}.{name}.weight"
        ne, _, sums = t[base + ".in_sum2"]
        counts = t[base + ".counts"][2]
        act = np.concatenate([sums.reshape(-1, ne[0])[i] / c
                              for i, c in enumerate(counts) if c])
        f = rows[(layer, name)]
        total = act.sum()
        p = act / total
        assert abs(float(f[2]) - total) <= 0.01 + 1e-5 * total
        assert int(f[8]) == act.size
        assert abs(float(f[9]) - -(p * np.log2(p)).sum()) <= 1e-4
        assert abs(float(f[5]) - act.mean()) <= 0.01
    # the cosine of layer 1's raw sums with layer 0's
    a = t["blk.1.attn_q.weight.in_sum2"][2]
    b = t["blk.0.attn_q.weight.in_sum2"][2]
    cos = a @ b / np.linalg.norm(a) / np.linalg.norm(b)
    assert abs(float(rows[("1", "attn_q")][12]) - cos) <= 1e-4
    assert float(rows[("0", "attn_q")][12]) == 0
    assert "Computing weighted average statistics per layer (2 layers)" in r.stdout
    bad = run(TOOL, "--show-statistics", tmp_path / "none.gguf", ok=False)
    assert bad.returncode == 1 and bad.stderr.count("\n") == 1
    assert run(TOOL, "--show-statistics", im, im, ok=False).returncode == 2


def test_dat_output_and_gguf_quantize_reads_it(tmp_path):
    """--output-format dat: llama-imatrix's legacy layout, each value its sum over its
    row's count times ncall (ceil(largest count / chunk size)), in float32 as it computes
    them; gguf-quantize takes it for a mixture of experts, each expert reading its own
    row of the flat vector (a .dat entry has no rows of its own)."""
    import struct
    text = tmp_path / "t.txt"
    text.write_text("Experts split the tokens between them. " * 50)
    g, d = tmp_path / "im.gguf", tmp_path / "im.dat"
    a = imatrix(HF / "qwen3moe", g, "-c", "32", "--chunks", "3", "-f", text)
    b = imatrix(HF / "qwen3moe", d, "-c", "32", "--chunks", "3", "-f", text,
                "--output-format", "dat")
    assert a["tokens"] == b["tokens"]
    _, t = read(g)
    raw = d.read_bytes()
    n, = struct.unpack_from("<i", raw, 0)
    at, seen = 4, []
    for _ in range(n):
        ln, = struct.unpack_from("<i", raw, at)
        name = raw[at + 4:at + 4 + ln].decode()
        ncall, nval = struct.unpack_from("<ii", raw, at + 4 + ln)
        vals = np.frombuffer(raw, "<f4", nval, at + 12 + ln)
        at += 12 + ln + 4 * nval
        ne, _, sums = t[name + ".in_sum2"]
        counts = t[name + ".counts"][2].reshape(-1)
        assert ncall == -(-int(counts.max()) // 32)
        cnt = np.repeat(counts, ne[0]).astype(np.float32)
        want = np.where(cnt == 0, np.float32(1), sums.reshape(-1).astype(np.float32) / np.where(
            cnt == 0, np.float32(1), cnt)) * np.float32(ncall)
        assert np.array_equal(vals, want.astype(np.float32)), name
        seen.append(name)
    assert seen == sorted(seen) == [k[:-len(".in_sum2")] for k in t if k.endswith(".in_sum2")]
    chunks, dl = struct.unpack_from("<ii", raw, at)
    assert chunks == 3 and raw[at + 8:].decode() == str(text) and dl == len(str(text))
    out = tmp_path / "q.gguf"
    run(BIN / "gguf-quantize", "--imatrix", d, HF / "qwen3moe", out, "Q4_K_M")
    keys, _ = read(out)
    assert keys["quantize.imatrix.entries_count"][1] == n


def test_text_is_an_input(tmp_path):
    """The text is opened as an input: OUT over it is refused before the run (the text
    kept), a FIFO is refused without blocking."""
    text = tmp_path / "t.txt"
    text.write_text("Call me Ishmael. " * 100)
    r = run(TOOL, "-c", "16", "-f", text, HF / "llama-spm", text, ok=False)
    assert r.returncode == 1 and "input" in r.stderr and r.stderr.count("\n") == 1
    assert text.read_text() == "Call me Ishmael. " * 100
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    r = subprocess.run([str(TOOL), "-c", "16", "-f", str(fifo), str(HF / "llama-spm"),
                        str(tmp_path / "o.gguf")], capture_output=True, text=True, timeout=20)
    assert r.returncode == 1 and "FIFO" in r.stderr, r.stderr
    assert not (tmp_path / "o.gguf").exists()
