"""The jobs through the package against the tools themselves: quantize() writes the bytes
gguf-quantize writes and returns its --json figures; verify() returns model-verify
--json's figures; convert() and pth_to_safetensors() write what safetensors2gguf,
gguf2safetensors, safetensors-rewrite and pth2safetensors write; scan() lists what
pth2safetensors --scan prints."""
import json
import subprocess

import pytest

from pylc import BIN, FIX, libconvert as lc


def tool(name, *args, ok=(0,)):
    r = subprocess.run([str(BIN / name), "-q", "--no-fsync", *map(str, args)],
                       capture_output=True, text=True)
    assert r.returncode in ok, r.stderr
    return r


def unknown_keys(obj, at="result"):
    """Keys of the tool's JSON that no dataclass field names (the types fall behind)."""
    out = [f"{at}.{k}" for k in getattr(obj, "unknown_keys", {})]
    for name in getattr(obj, "__dataclass_fields__", {}):
        v = getattr(obj, name)
        for i, item in enumerate(v if isinstance(v, list) else [v]):
            out += unknown_keys(item, f"{at}.{name}")
    return out


def without_seconds(d):
    d = dict(d)
    d.pop("seconds", None)
    return d


@pytest.mark.parametrize("ftype", ["Q8_0", "Q4_K_M", "Q3_K_S", "Q5_1"])
def test_quantize_equals_tool(tmp_path, ftype):
    src = FIX / "hf-ref" / "llama-bpe-f16.gguf"
    r = tool("gguf-quantize", "--json", src, tmp_path / "tool.gguf", ftype)
    want = json.loads(r.stdout)
    got = lc.quantize(src, tmp_path / "py.gguf", ftype, threads=2)
    assert (tmp_path / "py.gguf").read_bytes() == (tmp_path / "tool.gguf").read_bytes()
    d = got.to_dict()
    assert d["out"] == str(tmp_path / "py.gguf")
    d["out"] = want["out"]
    assert without_seconds(d) == without_seconds(want)
    assert unknown_keys(got) == []
    assert got.type == ftype and 0 < got.bytes_out < (tmp_path / "py.gguf").stat().st_size
    assert [t.name for t in got.tensors] == [t["name"] for t in want["tensors"]]


def test_quantize_options_mirror_llama_params(tmp_path):
    src = FIX / "hf-ref" / "qwen2-f16.gguf"
    args = ["--json", "--pure", "--output-tensor-type", "q8_0", "--token-embedding-type",
            "q8_0", "--tensor-type", "attn_v=q8_0", "--tensor-type", r"ffn_down=q5_0",
            "--override-kv", "general.name=str:renamed", src, tmp_path / "tool.gguf",
            "Q4_K_M"]
    want = json.loads(tool("gguf-quantize", *args).stdout)
    got = lc.quantize(src, tmp_path / "py.gguf", "Q4_K_M", pure=True,
                      output_tensor_type="q8_0", token_embedding_type="q8_0",
                      tensor_types={"attn_v": "q8_0", "ffn_down": "q5_0"},
                      override_kv={"general.name": "renamed"})
    assert (tmp_path / "py.gguf").read_bytes() == (tmp_path / "tool.gguf").read_bytes()
    assert [t.to for t in got.tensors] == [t["to"] for t in want["tensors"]]
    with lc.open(tmp_path / "py.gguf") as m:
        assert m.metadata["general.name"] == "renamed"


def test_quantize_dry_run_keep_split_and_errors(tmp_path):
    src = FIX / "hf-ref" / "llama-bpe-f16.gguf"
    plan = lc.quantize(src, tmp_path / "never.gguf", "Q4_K_M", dry_run=True)
    assert plan.dry_run and not (tmp_path / "never.gguf").exists()
    want = json.loads(tool("gguf-quantize", "--json", "--dry-run", src,
                           tmp_path / "never.gguf", "Q4_K_M").stdout)
    assert without_seconds(plan.to_dict()) == without_seconds(want)
    with pytest.raises(lc.ArgumentError, match="unknown TYPE"):
        lc.quantize(src, tmp_path / "x.gguf", "Q9_X")
    with pytest.raises(lc.ArgumentError) as e:          # requantizing needs permission
        lc.quantize(FIX / "hf-ref" / "llama-bpe-q8_0.gguf", tmp_path / "x.gguf", "Q4_0")
    assert "requantize" in str(e.value) and e.value.where
    with pytest.raises(lc.NotFoundError) as e:
        lc.quantize(src, tmp_path / "x.gguf", "Q4_K_M", imatrix=tmp_path / "none.dat")
    assert e.value.path == str(tmp_path / "none.dat")
    assert not (tmp_path / "x.gguf").exists()
    # a split input: keep_split writes the same parts as the tool
    tool("gguf-split", "--split-max-tensors", "12", src, tmp_path / "in")
    first = sorted(tmp_path.glob("in-*.gguf"))[0]
    tool("gguf-quantize", "--keep-split", first, tmp_path / "tool.gguf", "Q8_0")
    res = lc.quantize(first, tmp_path / "py.gguf", "Q8_0", keep_split=True)
    tool_parts = sorted(tmp_path.glob("tool-*.gguf"))
    py_parts = sorted(tmp_path.glob("py-*.gguf"))
    assert len(tool_parts) == len(py_parts) > 1 and len(res.parts) == len(py_parts)
    for a, b in zip(tool_parts, py_parts):
        assert a.read_bytes() == b.read_bytes()


@pytest.mark.parametrize("src,dst", [
    ("hf/llama-bpe", "hf-ref/llama-bpe-q8_0.gguf"),
    ("hf/qwen2", "hf-ref/qwen2-bf16.gguf"),
    ("hf/llama-bpe", "hf-ref/llama-spm-f16.gguf"),       # a failing pair: other vocabulary
])
def test_verify_equals_tool_json(src, dst):
    r = tool("model-verify", "--json", "--layers", "--max-tokens", "64", FIX / src, FIX / dst,
             ok=(0, 1, 2))
    if r.returncode == 2:     # cannot be compared: the package raises the same error
        with pytest.raises(lc.Error) as e:
            lc.verify(FIX / src, FIX / dst, layers=True, max_tokens=64)
        assert r.stderr.strip() == f"model-verify: {e.value}"
        return
    want = json.loads(r.stdout)
    got = lc.verify(FIX / src, FIX / dst, layers=True, max_tokens=64)
    assert got.to_dict() == want
    assert unknown_keys(got) == []
    assert got.passed == (r.returncode == 0) == (want["verdict"] == "pass")
    assert got.tensors.items[0].name == want["tensors"]["items"][0]["name"]
    assert got.logits.kl.mean == want["logits"]["kl"]["mean"]


def test_verify_tokens_and_report(tmp_path):
    got = lc.verify(FIX / "hf" / "llama-bpe", FIX / "hf-ref" / "llama-bpe-f32.gguf",
                    tokens=[1, 5, 9, 22, 7], report=tmp_path / "r.html")
    assert got.passed and got.logits.tokens == 5 and got.logits.token_ids == [1, 5, 9, 22, 7]
    assert (tmp_path / "r.html").read_text().startswith("<!DOCTYPE html>")


def test_verify_with_imatrix_equals_tool(tmp_path):
    """imatrix= is --imatrix: a file gguf-quantize weighted by a legacy .dat matrix is
    proven with it, and said to lack it without."""
    import struct
    import gguf
    import numpy as np
    f32, q, dat = FIX / "hf-ref" / "qwen2-f32.gguf", tmp_path / "q.gguf", tmp_path / "m.dat"
    rng = np.random.default_rng(5)
    names = [(t.name, int(t.shape[0])) for t in gguf.GGUFReader(f32).tensors
             if t.name.startswith("blk.") and len(t.shape) == 2]
    b = bytearray(struct.pack("<i", len(names)))
    for name, ne0 in names:
        b += struct.pack("<i", len(name)) + name.encode() + struct.pack("<ii", 1, ne0)
        b += np.exp(rng.normal(0, 1, ne0)).astype("<f4").tobytes()
    dat.write_bytes(bytes(b))
    tool("gguf-quantize", "--imatrix", dat, f32, q, "Q4_0")
    for extra, kw in ((["--imatrix", dat], {"imatrix": dat}), ([], {})):
        r = tool("model-verify", "--json", "--max-tokens", "16", *extra, f32, q, ok=(0, 1))
        got = lc.verify(f32, q, max_tokens=16, **kw)
        assert got.to_dict() == json.loads(r.stdout) and unknown_keys(got) == []
        assert got.imatrix.lacking == (not kw) and got.imatrix.dst_records
    assert lc.verify(f32, q, max_tokens=16, imatrix=dat).judged == "proven"


def test_convert_to_gguf_equals_tool(tmp_path):
    for outtype in ("f16", "q8_0", "q4_k_m"):
        tool("safetensors2gguf", "--outtype", outtype, FIX / "hf" / "qwen2",
             tmp_path / "tool.gguf")
        lc.convert(FIX / "hf" / "qwen2", tmp_path / "py.gguf", outtype)
        assert (tmp_path / "py.gguf").read_bytes() == (tmp_path / "tool.gguf").read_bytes()
    plan = lc.convert(FIX / "hf" / "qwen2", tmp_path / "never.gguf", "f16", dry_run=True)
    want = tool("safetensors2gguf", "--dry-run", "--outtype", "f16", FIX / "hf" / "qwen2",
                tmp_path / "never.gguf").stdout
    assert plan == want and not (tmp_path / "never.gguf").exists()
    tool("safetensors2gguf", "--metadata", "general.name=str:x", "--vocab-only",
         FIX / "hf" / "qwen2", tmp_path / "tool.gguf")
    lc.convert(FIX / "hf" / "qwen2", tmp_path / "py.gguf", vocab_only=True,
               metadata={"general.name": "x"})
    assert (tmp_path / "py.gguf").read_bytes() == (tmp_path / "tool.gguf").read_bytes()


def test_convert_back_and_rewrite_equal_tools(tmp_path):
    gguf = FIX / "hf-ref" / "llama-bpe-q8_0.gguf"
    tool("gguf2safetensors", "--dtype", "bf16", gguf, tmp_path / "tool.st")
    lc.convert(gguf, tmp_path / "py.safetensors", "bf16")
    assert (tmp_path / "py.safetensors").read_bytes() == (tmp_path / "tool.st").read_bytes()
    shards = FIX / "safetensors" / "sharded"
    tool("safetensors-rewrite", "--dtype", "f16", shards, tmp_path / "tool.st")
    lc.convert(shards, tmp_path / "py.safetensors", "f16")
    assert (tmp_path / "py.safetensors").read_bytes() == (tmp_path / "tool.st").read_bytes()
    bare = FIX / "gguf" / "bare_all_dtypes.safetensors"
    tool("safetensors2gguf", bare, tmp_path / "tool.gguf")
    lc.convert(bare, tmp_path / "py.gguf")
    assert (tmp_path / "py.gguf").read_bytes() == (tmp_path / "tool.gguf").read_bytes()


def test_pth_to_safetensors_equals_tool(tmp_path):
    src = FIX / "pth" / "2.15.0" / "checkpoint.pth"
    tool("pth2safetensors", "--key", "optimizer.state", "--dtype", "f16", src,
         tmp_path / "tool.st")
    lc.pth_to_safetensors(src, tmp_path / "py.st", key="optimizer.state", dtype="f16")
    assert (tmp_path / "py.st").read_bytes() == (tmp_path / "tool.st").read_bytes()
    shared = FIX / "pth" / "2.15.0" / "shared.pth"
    tool("pth2safetensors", "--dedupe", shared, tmp_path / "tool.st")
    lc.pth_to_safetensors(shared, tmp_path / "py.st", dedupe=True)
    assert (tmp_path / "py.st").read_bytes() == (tmp_path / "tool.st").read_bytes()
    tool("pth2safetensors", shared, tmp_path / "tool.st")
    lc.convert(shared, tmp_path / "py.safetensors")     # convert() picks the same job
    assert (tmp_path / "py.safetensors").read_bytes() == (tmp_path / "tool.st").read_bytes()
    sharded = FIX / "pth" / "2.15.0" / "sharded"
    tool("pth2safetensors", sharded, tmp_path / "tool_dir")
    lc.pth_to_safetensors(sharded, tmp_path / "py_dir")
    names = sorted(p.name for p in (tmp_path / "tool_dir").iterdir())
    assert names == sorted(p.name for p in (tmp_path / "py_dir").iterdir())
    for n in names:
        assert (tmp_path / "py_dir" / n).read_bytes() == (tmp_path / "tool_dir" / n).read_bytes()


@pytest.mark.parametrize("path", ["pth/2.15.0/mlp.pth", "pth/1.13.0a0/legacy.pth",
                                  "bad/pth/forbidden-os_system.bin",
                                  "bad/pickle/forbidden-builtins-eval.bin"])
def test_scan_equals_tool(path):
    r = tool("pth2safetensors", "--scan", FIX / path, ok=(0, 1, 2))
    got = lc.scan(FIX / path)
    lines = [f"{g.entry} @ {g.offset:#x}: {g} {'allowed' if g.allowed else 'FORBIDDEN'}"
             for g in got.globals]
    assert lines == r.stdout.splitlines()
    assert got.safe == (r.returncode == 0)
    assert bool(got.forbidden) == ("FORBIDDEN" in r.stdout)


def test_jobs_release_the_gil(tmp_path):
    """A job runs while another Python thread runs: the thread counts while the job
    quantizes (ctypes drops the GIL for the call)."""
    import threading
    import time
    ticks = []
    stop = threading.Event()

    def spin():
        while not stop.is_set():
            ticks.append(time.perf_counter())
            time.sleep(0.001)
    t = threading.Thread(target=spin)
    t.start()
    t0 = time.perf_counter()
    import numpy as np
    x = np.random.default_rng(0).standard_normal((2048, 4096)).astype(np.float32)
    for _ in range(3):
        lc.quantize_array(x, "Q4_K", threads=1)
    t1 = time.perf_counter()
    stop.set()
    t.join()
    during = [x for x in ticks if t0 < x < t1]
    assert t1 - t0 > 0.05 and len(during) > (t1 - t0) / 0.01, (len(during), t1 - t0)


def test_threads_read_while_jobs_run(tmp_path):
    """Four threads read and dequantize one model's tensors while two jobs run in others:
    every array equals a sequential read, every job's file the tool's."""
    from concurrent.futures import ThreadPoolExecutor
    import numpy as np
    src = FIX / "hf-ref" / "qwen2-q8_0.gguf"
    with lc.open(src) as m:
        want = {k: m.tensor(k, dequantize=True).copy() for k in m.tensors}

        def read_all(_):
            return all(np.array_equal(m.tensor(k, dequantize=True), v, equal_nan=True)
                       for k, v in want.items())

        def job(i):
            return lc.quantize(FIX / "hf-ref" / "qwen2-f16.gguf", tmp_path / f"{i}.gguf",
                               "Q4_K_M")
        with ThreadPoolExecutor(6) as ex:
            reads = [ex.submit(read_all, i) for i in range(4)]
            jobs = [ex.submit(job, i) for i in range(2)]
            assert all(f.result() for f in reads)
            for f in jobs:
                f.result()
    tool("gguf-quantize", FIX / "hf-ref" / "qwen2-f16.gguf", tmp_path / "tool.gguf", "Q4_K_M")
    for i in range(2):
        assert (tmp_path / f"{i}.gguf").read_bytes() == (tmp_path / "tool.gguf").read_bytes()


@pytest.mark.parametrize("ftype", ["Q4_K_M", "IQ2_XS", "IQ4_XS"])
def test_quantize_with_imatrix_equals_tool(tmp_path, ftype):
    """quantize(imatrix=, include_weights=, exclude_weights=) writes what gguf-quantize
    --imatrix writes (test_gguf_quantize_imatrix.py makes the matrix as llama-imatrix
    lays it out)."""
    from test_gguf_quantize_imatrix import stats_for, write_gguf
    src = FIX / "hf-ref" / "qwen2-f16.gguf"
    im = tmp_path / "m.imatrix.gguf"
    write_gguf(im, stats_for(str(src)))
    tool("gguf-quantize", "--imatrix", im, "--exclude-weights", "attn_v", src,
         tmp_path / "tool.gguf", ftype)
    got = lc.quantize(src, tmp_path / "py.gguf", ftype, imatrix=im, exclude_weights=["attn_v"])
    assert (tmp_path / "py.gguf").read_bytes() == (tmp_path / "tool.gguf").read_bytes()
    with lc.open(tmp_path / "py.gguf") as m:
        assert m.metadata["quantize.imatrix.file"] == str(im)
    assert got.type == ftype
    if ftype == "IQ2_XS":      # a type that needs a matrix refuses to run without one
        with pytest.raises(lc.Error, match="importance matrix"):
            lc.quantize(src, tmp_path / "none.gguf", ftype)
