"""gguf-quantize without llama.cpp (tests/llama/test_quantize.py compares it with
llama.cpp's own quantizer): tensor bytes against gguf-py's numpy quantizers, what the
output holds (keys, order, dimensions), and bad input: NaN/Inf rows, scales that overflow,
quantized input without --allow-requantize, explicit types a row cannot take, unknown or
unavailable TYPEs, truncated and foreign files, SIGINT. Every failure is one line naming
the tensor, exit 1 (2 for usage), and leaves no OUT and no temporary behind."""
import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import gguf
import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
HF = ROOT / "fixtures" / "hf"
REF = ROOT / "fixtures" / "hf-ref"
BIN = Path(os.environ.get("LC_BIN", ROOT / "build" / "bin"))
TOOL = BIN / "gguf-quantize"


def run(*args, ok=True):
    r = subprocess.run([str(TOOL)] + [str(a) for a in args], capture_output=True, text=True)
    if ok:
        assert r.returncode == 0, r.stderr
    return r


def tiny_llama(path, fill=None, dtype=np.float32, h=64, layers=2, arch="llama", kv=None,
               extra=()):
    """A llama GGUF by gguf-py's writer: h hidden, head_dim 16, ffn 2h, vocab 32, random
    weights of `dtype`; fill(name, array) may change a tensor's values; kv: extra keys;
    extra: names of more [32, h] tensors."""
    rng = np.random.default_rng(7)
    w = gguf.GGUFWriter(str(path), arch)
    w.add_context_length(64)
    w.add_embedding_length(h)
    w.add_block_count(layers)
    w.add_feed_forward_length(2 * h)
    w.add_head_count(h // 16)
    w.add_head_count_kv(h // 16)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_file_type(0)
    for k, v in (kv or {}).items():
        w.add_uint16(k, v)
    names = [("token_embd.weight", (32, h)), ("output_norm.weight", (h,)),
             ("output.weight", (32, h))]
    for i in range(layers):
        names += [(f"blk.{i}.attn_norm.weight", (h,)), (f"blk.{i}.attn_q.weight", (h, h)),
                  (f"blk.{i}.attn_k.weight", (h, h)), (f"blk.{i}.attn_v.weight", (h, h)),
                  (f"blk.{i}.attn_output.weight", (h, h)), (f"blk.{i}.ffn_norm.weight", (h,)),
                  (f"blk.{i}.ffn_gate.weight", (2 * h, h)), (f"blk.{i}.ffn_up.weight", (2 * h, h)),
                  (f"blk.{i}.ffn_down.weight", (h, 2 * h))]
    names += [(name, (32, h)) for name in extra]
    for name, shape in names:
        a = rng.standard_normal(shape).astype(np.float32) * 0.1
        if fill:
            fill(name, a)
        w.add_tensor(name, a if len(shape) == 1 else a.astype(dtype))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def nothing_left(d, keep):
    left = sorted(p.name for p in Path(d).iterdir() if p.name not in keep)
    assert left == [], f"left behind: {left}"


def one_line(r):
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    return lines[0]


# ---- bytes against gguf-py ----

@pytest.mark.parametrize("qtype", ["Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1"])
def test_tensor_bytes_equal_gguf_py(tmp_path, qtype):
    """--pure: every weight the base type; gguf-py's numpy quantizer from the same f32."""
    src = tiny_llama(tmp_path / "in.gguf", h=64)
    run("-q", "--pure", src, tmp_path / "out.gguf", qtype)
    a, b = gguf.GGUFReader(src), gguf.GGUFReader(tmp_path / "out.gguf")
    want = {t.name: t for t in a.tensors}
    qt = gguf.GGMLQuantizationType[qtype]
    for t in b.tensors:
        s = np.asarray(want[t.name].data, dtype=np.float32).reshape(
            [int(x) for x in reversed(want[t.name].shape)])
        if t.name.endswith("_norm.weight"):
            assert t.tensor_type == gguf.GGMLQuantizationType.F32
            assert t.data.tobytes() == s.tobytes()
            continue
        assert t.tensor_type == qt, t.name
        assert t.data.tobytes() == gguf.quants.quantize(s, qt).tobytes(), t.name


def test_mxfp4_moe_bytes_equal_gguf_py(tmp_path):
    """MXFP4_MOE on a mixture of experts: each stack of experts MXFP4, every other matrix
    Q8_0 (the router and norms kept F32), all as gguf-py's numpy quantizers make them
    from the same f32 (on ordinary values gguf-py's MXFP4 is ggml's; edge values are
    tests/llama/test_quant_ggml.py's)."""
    src = REF / "qwen3moe-f32.gguf"
    run("-q", src, tmp_path / "out.gguf", "MXFP4_MOE")
    a, b = gguf.GGUFReader(src), gguf.GGUFReader(tmp_path / "out.gguf")
    want = {t.name: t for t in a.tensors}
    seen = set()
    for t in b.tensors:
        s = np.asarray(want[t.name].data, dtype=np.float32).reshape(
            [int(x) for x in reversed(want[t.name].shape)])
        seen.add(t.tensor_type.name)
        if t.tensor_type == gguf.GGMLQuantizationType.F32:
            assert t.data.tobytes() == s.tobytes(), t.name
            continue
        qt = gguf.GGMLQuantizationType.MXFP4 if s.ndim == 3 else gguf.GGMLQuantizationType.Q8_0
        assert t.tensor_type == qt, t.name
        assert t.data.tobytes() == gguf.quants.quantize(s, qt).tobytes(), t.name
    assert seen == {"F32", "Q8_0", "MXFP4"}


def test_output_layout(tmp_path):
    """Keys in order with general.quantization_version and general.file_type moved last,
    overrides after them, tensors by layer number then name, 1-D norms kept F32."""
    src = tiny_llama(tmp_path / "in.gguf", layers=11)
    run("-q", "--override-kv", "general.name=str:x", src, tmp_path / "o.gguf", "Q8_0")
    r = gguf.GGUFReader(tmp_path / "o.gguf")
    keys = [k for k in r.fields if not k.startswith("GGUF.")]
    assert keys[-3:] == ["general.quantization_version", "general.file_type", "general.name"]
    assert r.fields["general.file_type"].parts[-1][0] == 7
    names = [t.name for t in r.tensors]
    assert names[:3] == ["output.weight", "output_norm.weight", "token_embd.weight"]
    assert names.index("blk.10.attn_k.weight") > names.index("blk.9.ffn_up.weight")
    types = {t.name: t.tensor_type.name for t in r.tensors}
    assert types["output.weight"] == "Q8_0" and types["blk.3.attn_norm.weight"] == "F32"


def test_dry_run_json_and_default_name(tmp_path):
    src = tiny_llama(tmp_path / "in.gguf")
    r = run("--dry-run", "--json", src, "q4_k")
    d = json.loads(r.stdout)
    assert d["type"] == "Q4_K_M" and d["dry_run"] is True
    assert d["out"].endswith("ggml-model-Q4_K_M.gguf")
    t = {x["name"]: x for x in d["tensors"]}
    assert t["blk.0.attn_q.weight"]["to"] == "Q5_0"         # 64 columns: Q4_K falls back
    assert t["blk.0.attn_q.weight"]["wanted"] == "Q4_K"
    assert t["output.weight"]["to"] == "Q8_0" and t["output.weight"]["why"] == "rule"
    nothing_left(tmp_path, {"in.gguf"})
    run("-q", src, "Q8_0", "2")
    assert (tmp_path / "ggml-model-Q8_0.gguf").is_file()


# ---- bad input ----

def nan_at(name, row, col, value):
    def fill(n, a):
        if n == name:
            a[row, col] = value
    return fill


HOSTILE = "blk.0.x\x1b]0;title\x07\r\nforged\x1b[2J\u009b\u202e\x7f"


def test_dry_run_escapes_names(tmp_path):
    """A tensor name is the file's bytes: OSC, BEL, CR/LF, CSI (C0 and C1) and a bidi
    override must reach the terminal escaped, as libconvert/escape.c writes them."""
    src = tiny_llama(tmp_path / "h.gguf", extra=[HOSTILE])
    r = run("--dry-run", src, "q8_0")
    line = [ln for ln in r.stdout.splitlines() if "forged" in ln]
    assert len(line) == 1, r.stdout
    assert "blk.0.x\\x1b]0;title\\x07\\r\\nforged\\x1b[2J\\u009b\\u202e\\x7f " in line[0]
    assert not re.search("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]",
                         r.stdout + r.stderr)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("value,what", [(np.nan, "NaN"), (np.inf, "infinity")])
def test_nan_and_inf_rows_are_refused(tmp_path, dtype, value, what):
    src = tiny_llama(tmp_path / "in.gguf", nan_at("blk.1.ffn_up.weight", 77, 5, value),
                     dtype=dtype)
    out = tmp_path / "out.gguf"
    r = run("-q", src, out, "Q4_0", ok=False)
    assert r.returncode == 1
    line = one_line(r)
    assert "blk.1.ffn_up.weight" in line and f"row 77, column 5 holds {what}" in line, line
    nothing_left(tmp_path, {"in.gguf"})


def test_nan_in_a_copied_tensor_is_refused_too(tmp_path):
    """llama.cpp's loader checks every tensor it reads, copies included."""
    def fill(n, a):
        if n == "blk.0.ffn_norm.weight":
            a[9] = np.nan
    src = tiny_llama(tmp_path / "in.gguf", fill)
    r = run("-q", src, tmp_path / "out.gguf", "Q8_0", ok=False)
    assert r.returncode == 1 and "blk.0.ffn_norm.weight" in one_line(r)
    nothing_left(tmp_path, {"in.gguf"})


@pytest.mark.parametrize("qtype,what", [("Q8_0", "Q8_0 block at column 32 has an infinite "
                                                 "scale"),
                                        ("F16", "column 40 holds infinity")])
def test_values_that_overflow_the_output_are_refused(tmp_path, qtype, what):
    src = tiny_llama(tmp_path / "in.gguf", nan_at("blk.0.attn_k.weight", 3, 40, 1e38))
    r = run("-q", src, tmp_path / "out.gguf", qtype, ok=False)
    assert r.returncode == 1
    line = one_line(r)
    assert "blk.0.attn_k.weight" in line and f"row 3, {'the ' if 'block' in what else ''}" \
        f"{what}" in line, line
    nothing_left(tmp_path, {"in.gguf"})


def test_quantized_input_needs_allow_requantize(tmp_path):
    out = tmp_path / "out.gguf"
    r = run("-q", REF / "llama-spm-q8_0.gguf", out, "Q4_0", ok=False)
    assert r.returncode == 1 and "--allow-requantize" in one_line(r)
    nothing_left(tmp_path, set())
    run("-q", "--allow-requantize", REF / "llama-spm-q8_0.gguf", out, "Q4_0")
    run("-q", REF / "llama-spm-q8_0.gguf", out, "Q8_0")       # nothing to requantize


@pytest.mark.parametrize("opt", [["--tensor-type", "ffn_up=q4_k"],
                                 ["--output-tensor-type", "q6_k"],
                                 ["--token-embedding-type", "q5_k"]])
def test_an_explicit_type_a_row_cannot_take_is_refused(tmp_path, opt):
    """Rows of 64 values are no whole K block; llama-quantize would fall back silently
    (--tensor-type) or abort mid-file (the others)."""
    src = tiny_llama(tmp_path / "in.gguf")
    r = run("-q", *opt, src, tmp_path / "out.gguf", "Q8_0", ok=False)
    if r.returncode == 2:                 # no Q5_K kernel yet: a usage error
        assert "cannot write Q5_K yet" in r.stderr
        return
    assert r.returncode == 1
    line = one_line(r)
    assert "64 values are not whole 256-value blocks" in line, line
    nothing_left(tmp_path, {"in.gguf"})


@pytest.mark.parametrize("args", [["X", "Q9_9"], ["X", "o.gguf", "nope"],
                                  ["X", "o.gguf", "Q8_0", "many"],
                                  ["--output-tensor-type", "q3", "X", "Q8_0"],
                                  ["--tensor-type", "=q8_0", "X", "Q8_0"],
                                  ["--tensor-type", "attn_v", "X", "Q8_0"],
                                  ["--override-kv", "a=int:x", "X", "Q8_0"],
                                  ["--override-kv", "a=text:x", "X", "Q8_0"]])
def test_usage_errors_exit_2(tmp_path, args):
    r = run(*args, ok=False)
    assert r.returncode == 2, r.stderr
    nothing_left(tmp_path, set())


def test_a_type_without_kernels_is_refused_but_planned(tmp_path):
    src = tiny_llama(tmp_path / "in.gguf")
    # Q2_K_S needs an importance matrix; NVFP4 has no quantizer here, IQ2_M needs a matrix.
    for t in ["Q2_K_S", "NVFP4", "IQ2_M"]:
        r = run("-q", src, tmp_path / "o.gguf", t, ok=False)
        assert r.returncode == 2 and "not available yet" in r.stderr, t
        if t != "Q2_K_S":
            run("--dry-run", src, t)
    nothing_left(tmp_path, {"in.gguf"})


def test_truncated_and_foreign_files(tmp_path):
    src = tiny_llama(tmp_path / "in.gguf")
    data = src.read_bytes()
    (tmp_path / "cut.gguf").write_bytes(data[:len(data) - 100])
    r = run("-q", tmp_path / "cut.gguf", tmp_path / "o.gguf", "Q8_0", ok=False)
    assert r.returncode == 1 and "cut.gguf" in one_line(r)
    tiny_llama(tmp_path / "g.gguf", arch="gemma")
    r = run("-q", tmp_path / "g.gguf", tmp_path / "o.gguf", "Q8_0", ok=False)
    assert r.returncode == 1 and "general.architecture" in one_line(r)
    tiny_llama(tmp_path / "s.gguf", kv={"split.count": 2})
    r = run("-q", tmp_path / "s.gguf", tmp_path / "o.gguf", "Q8_0", ok=False)
    assert r.returncode == 1 and "split" in one_line(r)
    nothing_left(tmp_path, {"in.gguf", "cut.gguf", "g.gguf", "s.gguf"})


def test_out_may_not_be_in(tmp_path):
    src = tiny_llama(tmp_path / "in.gguf")
    before = src.read_bytes()
    r = run("-q", src, src, "Q8_0", ok=False)
    assert r.returncode == 1 and "is IN" in one_line(r)
    assert src.read_bytes() == before
    nothing_left(tmp_path, {"in.gguf"})


def test_a_failed_run_keeps_an_existing_out(tmp_path):
    src = tiny_llama(tmp_path / "in.gguf", nan_at("blk.0.attn_q.weight", 1, 1, np.nan))
    out = tmp_path / "out.gguf"
    out.write_bytes(b"old")
    assert run("-q", src, out, "Q8_0", ok=False).returncode == 1
    assert out.read_bytes() == b"old"
    nothing_left(tmp_path, {"in.gguf", "out.gguf"})


def test_sigint_leaves_nothing(tmp_path):
    """A big enough model that the run is still writing when SIGINT comes (the signal is
    sent once the temporary output exists)."""
    src = tiny_llama(tmp_path / "in.gguf", h=512, layers=4)
    p = subprocess.Popen([str(TOOL), "-q", "-t", "1", str(src), str(tmp_path / "o.gguf"),
                          "Q4_K_M"], stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while p.poll() is None and time.monotonic() < deadline:
        if any(x.name not in ("in.gguf",) for x in tmp_path.iterdir()):
            p.send_signal(signal.SIGINT)
            break
        time.sleep(0.001)
    p.communicate(timeout=60)
    if p.returncode == 0:
        pytest.skip("the run ended before the signal could be sent")
    assert p.returncode != 0
    nothing_left(tmp_path, {"in.gguf"})


# ---- --tensor-type patterns (libconvert/regex.h) ----

@pytest.mark.parametrize("pattern,what", [
    (r"(|)(\1\1)*", "back-references"),                   # glibc: SIGSEGV, no message
    (r"^(.*)(.*)(.*)(.*)(.*)(.*)(.*)(.*)(.*)\9\8\7\6\5\4\3\2\1x$", "back-references"),  # 8 s
    (r"((.{1,255}){1,255}){1,255}", "more than 4096 NFA states"),   # glibc: 3 GB
    (r"(?!attn)", "lookaround"),
    (r"blk\.[0-9", "unbalanced ["),
])
def test_hostile_patterns_are_usage_errors(tmp_path, pattern, what):
    src = tiny_llama(tmp_path / "in.gguf")
    t0 = time.monotonic()
    r = run("--dry-run", "--tensor-type", f"{pattern}=q8_0", src, "q4_0", ok=False)
    assert time.monotonic() - t0 < 5
    assert r.returncode == 2, r.stderr
    line = one_line(r)
    assert line.startswith("gguf-quantize: --tensor-type pattern '") and what in line, line


@pytest.mark.parametrize("pattern,hits", [
    ("attn_v", {"blk.0.attn_v.weight", "blk.1.attn_v.weight"}),
    (r"blk\.[0-9]+\.ffn_down", {"blk.0.ffn_down.weight", "blk.1.ffn_down.weight"}),
    (r"^output\.weight$", {"output.weight"}),
    ("(ffn_up|ffn_gate)", {f"blk.{i}.ffn_{k}.weight" for i in (0, 1) for k in ("up", "gate")}),
    (r"BLK\.1\.ATTN_[QK]", {"blk.1.attn_q.weight", "blk.1.attn_k.weight"}),   # lower-cased
    (r"blk\.\D\.", set()),                  # \D lower-cased to \d, as llama-quantize does
    (r"^blk\.(0|1)\.attn_(q|k)\.weight$", {f"blk.{i}.attn_{k}.weight" for i in (0, 1)
                                            for k in ("q", "k")}),
    (r"_(o|ou)t\w{0,3}\.weight", {f"blk.{i}.attn_output.weight" for i in (0, 1)}),
])
def test_patterns_people_use(tmp_path, pattern, hits):
    src = tiny_llama(tmp_path / "in.gguf")
    d = json.loads(run("--dry-run", "--json", "--tensor-type", f"{pattern}=q8_0", src,
                       "q4_0").stdout)
    got = {t["name"] for t in d["tensors"] if t["why"] == "option"}
    if pattern == r"blk\.\D\.":
        hits = {t["name"] for t in d["tensors"]                 # norms are never quantized
                if t["name"].startswith("blk.") and "norm" not in t["name"]}
    assert got == hits
    assert all(t["to"] == "Q8_0" for t in d["tensors"] if t["name"] in hits)
