"""llama.cpp's own quantizer judges gguf-quantize's i-quant and ternary file types and its
importance matrices (issue 20).

The oracle is llama_model_quantize of the pinned llama.cpp (tests/llama/test_quantize.py
drives it), one thread, on the same inputs:
  - every IQ/TQ TYPE gguf-quantize offers without an importance matrix (IQ4_NL, IQ4_XS,
    TQ1_0, TQ2_0) gives llama.cpp's bytes, and llama.cpp runs the file;
  - every IQ/TQ TYPE's plan (gguf-quantize --dry-run --json) is llama.cpp's dry run's;
  - gguf-quantize --imatrix FILE gives llama_model_quantize's bytes when it gets what
    llama-quantize --imatrix FILE hands it: the weights and the quantize.imatrix.* keys,
    made here from FILE as tools/quantize/quantize.cpp and common/imatrix-loader.cpp make
    them (load_like_llama_quantize: gguf-py reads the GGUF, struct the .dat), for every
    TYPE it offers (IQ3_XS and MXFP4_MOE included), with GGUF and legacy files,
    --include/--exclude-weights, a count of 0 and per-expert data of a 3-D stack; the
    plans with an imatrix are llama.cpp's;
  - bad matrices fail with one line naming the file and the entry, exit 1, no OUT.
Neither llama-cpp-python nor its wheel has llama-imatrix, so the matrices are written
here as llama-imatrix stores them (tools/imatrix/imatrix.cpp save_imatrix: per weight
NAME.in_sum2 and NAME.counts, F32, with imatrix.datasets, chunk_count, chunk_size), with
random positive sums and token counts.
"""
import json
import math
import struct
import subprocess

import gguf
import numpy as np
import pytest

from conftest import BIN, llama
from test_quantize import (FTYPES, INPUTS, OFFERED, inputs, llama_plan, llama_quantize,  # noqa: F401
                           ours, same_bytes)

IQ_FTYPES = {"IQ2_XXS": 19, "IQ2_XS": 20, "Q2_K_S": 21, "IQ3_XS": 22, "IQ3_XXS": 23,
             "IQ1_S": 24, "IQ4_NL": 25, "IQ3_S": 26, "IQ3_M": 27, "IQ2_S": 28, "IQ2_M": 29,
             "IQ4_XS": 30, "IQ1_M": 31, "TQ1_0": 36, "TQ2_0": 37}
FTYPES.update(IQ_FTYPES)
# Written without an importance matrix by llama-quantize (it needs none for them).
PLAIN = ["IQ4_NL", "IQ4_XS", "TQ1_0", "TQ2_0", "IQ3_S", "IQ3_M"]


def runs(path):
    m = llama(path)
    m.reset()
    m.eval([1, 2, 3, 4, 5])
    scores = np.array(m.scores[:m.n_tokens], dtype=np.float32)
    assert scores.shape[0] == 5 and np.isfinite(scores).all()


@pytest.mark.parametrize("model", INPUTS)
@pytest.mark.parametrize("ftype", PLAIN)
def test_iq_file_is_llama_quantize_s(inputs, tmp_path, model, ftype):
    if ftype not in OFFERED:
        pytest.skip(f"{ftype}: its kernels are not in this branch yet")
    runs(same_bytes(tmp_path, inputs[model], ftype))


@pytest.mark.parametrize("model", INPUTS)
@pytest.mark.parametrize("ftype", list(IQ_FTYPES))
def test_iq_plan_is_llama_quantize_s(inputs, model, ftype):
    want = llama_plan(inputs[model], ftype)
    r = ours(["--dry-run", "--json", inputs[model], ftype])
    got = {t["name"]: t["to"] for t in json.loads(r.stdout)["tensors"]}
    assert list(got) == list(want), "tensor order"
    assert got == want


# ---- importance matrices ----

def weight_tensors(model_path, with_output=True):
    """(name, ne0, n_mat) of what llama-imatrix records: every blk.* matrix (per expert
    for a 3-D stack) and, with --process-output, output.weight."""
    out = []
    for t in gguf.GGUFReader(model_path).tensors:
        ne = [int(v) for v in t.shape]
        if len(ne) < 2 or not t.name.endswith(".weight"):
            continue
        if t.name.startswith("blk.") and "norm" not in t.name or \
                (with_output and t.name == "output.weight"):
            out.append((t.name, ne[0], ne[2] if len(ne) > 2 else 1))
    return out


def make_stats(model_path, seed, zero_count=False, with_output=True):
    """{name: (sums (n_mat, ne0) float32, counts (n_mat,) float32)} as llama-imatrix
    accumulates them: per column the sum of squared activations over `count` tokens."""
    rng = np.random.default_rng(seed)
    stats = {}
    for name, ne0, nmat in weight_tensors(model_path, with_output):
        counts = rng.integers(1, 8, nmat).astype(np.float32) * 512
        if zero_count and nmat > 1:
            counts[rng.integers(0, nmat)] = 0        # an expert no token was routed to
        elif zero_count and name.endswith("attn_k.weight"):
            counts[0] = 0
        mean_sq = np.exp(rng.normal(-1, 1.5, (nmat, ne0))).astype(np.float32)
        sums = (mean_sq * counts[:, None]).astype(np.float32)
        stats[name] = (sums, counts)
    return stats


def write_gguf_imatrix(path, stats, datasets=("calibration.txt",), chunk_count=7,
                       chunk_size=512, meta=True):
    w = gguf.GGUFWriter(str(path), "imatrix")
    w.add_string("general.type", "imatrix")
    if meta:
        w.add_array("imatrix.datasets", list(datasets))
        w.add_uint32("imatrix.chunk_count", chunk_count)
        w.add_uint32("imatrix.chunk_size", chunk_size)
    for name in sorted(stats):
        sums, counts = stats[name]
        w.add_tensor(f"{name}.in_sum2", sums)
        w.add_tensor(f"{name}.counts", counts.reshape(-1, 1))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def write_dat_imatrix(path, stats, chunk_count=7, dataset="calibration.txt"):
    """The legacy format (llama-imatrix --output-format dat): per entry the sums divided by
    the count and multiplied by ncall."""
    b = bytearray(struct.pack("<i", len(stats)))
    for name in sorted(stats):
        sums, counts = stats[name]
        ncall = int(counts[0] // 512)
        vals = (sums.reshape(-1) / np.float32(counts[0]) * np.float32(ncall)).astype("<f4")
        nb = name.encode()
        b += struct.pack("<i", len(nb)) + nb + struct.pack("<ii", ncall, vals.size)
        b += vals.tobytes()
    if chunk_count is not None:
        b += struct.pack("<i", chunk_count)
        b += struct.pack("<i", len(dataset)) + dataset.encode()
    path.write_bytes(bytes(b))


def lround(f):
    f = float(f)
    return int(math.copysign(math.floor(abs(f) + 0.5), f))


def load_like_llama_quantize(path, include=(), exclude=()):
    """What llama-quantize --imatrix PATH hands llama_model_quantize: ({name: weights},
    the kv overrides it appends)."""
    data = path.read_bytes()
    entries, datasets, chunks = {}, [], 0
    if data[:4] == b"GGUF":
        r = gguf.GGUFReader(path)
        f = r.fields["imatrix.datasets"]
        datasets = [bytes(f.parts[i]).decode() for i in f.data]
        chunks = int(r.fields["imatrix.chunk_count"].parts[-1][0])
        t = {x.name: np.array(x.data, dtype=np.float32).reshape(-1) for x in r.tensors}
        for n in t:
            if n.endswith(".in_sum2"):
                name = n[:-len(".in_sum2")]
                sums, counts = t[n], t[name + ".counts"]
                ne0 = sums.size // counts.size
                e = np.empty_like(sums)
                for j, c in enumerate(counts):
                    c = np.float32(lround(c))
                    e[j * ne0:(j + 1) * ne0] = sums[j * ne0:(j + 1) * ne0] / c if c > 0 else 1
                entries[name] = e
    else:
        (n,), off = struct.unpack_from("<i", data), 4
        for _ in range(n):
            (ln,) = struct.unpack_from("<i", data, off)
            name = data[off + 4:off + 4 + ln].split(b"\0")[0].decode()
            off += 4 + ln
            ncall, nval = struct.unpack_from("<ii", data, off)
            off += 8
            v = np.frombuffer(data, "<f4", nval, off).astype(np.float32)
            off += 4 * nval
            entries[name] = v / np.float32(ncall) if ncall > 0 else v
        if off < len(data):
            (chunks,) = struct.unpack_from("<i", data, off)
            (ln,) = struct.unpack_from("<i", data, off + 4)
            # imatrix-loader.cpp keeps a dataset only when its length is above 0
            datasets = [data[off + 8:off + 8 + ln].decode()] if ln > 0 else []
    for x in exclude:
        entries = {k: v for k, v in entries.items() if x not in k}
    if include:
        entries = {k: v for k, v in entries.items() if any(x in k for x in include)}
    if not entries:
        return {}, []
    kv = [("quantize.imatrix.file", "str", str(path).encode()[:127])]    # strncpy's cut
    if datasets:
        kv.append(("quantize.imatrix.dataset", "str", datasets[0].encode()[:127]))
    kv.append(("quantize.imatrix.entries_count", "int", str(len(entries))))
    if chunks > 0:
        kv.append(("quantize.imatrix.chunks_count", "int", str(chunks)))
    return entries, kv


def same_bytes_imatrix(tmp_path, inp, ftype, im_path, include=(), exclude=(), extra=()):
    ref, mine = tmp_path / "ref.gguf", tmp_path / "ours.gguf"
    entries, kv = load_like_llama_quantize(im_path, include, exclude)
    rc, text = llama_quantize(inp, ref, ftype, imatrix=entries, overrides=kv)
    assert rc == 0, text[-2000:]
    args = ["-q", "-t", "2", "--imatrix", im_path, *extra]
    for x in include:
        args += ["--include-weights", x]
    for x in exclude:
        args += ["--exclude-weights", x]
    ours([*args, inp, mine, ftype])
    a, b = ref.read_bytes(), mine.read_bytes()
    if a != b:
        ra, rb = gguf.GGUFReader(ref), gguf.GGUFReader(mine)
        diff = [f"{x.name}: {x.tensor_type.name} vs {y.tensor_type.name}"
                for x, y in zip(ra.tensors, rb.tensors)
                if x.name != y.name or x.tensor_type != y.tensor_type or
                bytes(x.data.tobytes()) != bytes(y.data.tobytes())]
        keys = [f"{x}" for x, y in zip(ra.fields, rb.fields) if x != y]
        pytest.fail(f"{ftype}: {len(a)} vs {len(b)} bytes; tensors differ: {diff[:8]}; "
                    f"keys: {keys[:8]}")
    return mine


WITH_IMATRIX = ["Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q2_K", "Q2_K_S", "Q3_K_S", "Q3_K_M",
                "Q3_K_L", "Q4_K_S", "Q4_K_M", "Q5_K_S", "Q5_K_M", "Q6_K", "Q8_0", "IQ4_NL",
                "IQ4_XS", "TQ1_0", "TQ2_0", "IQ3_S", "IQ3_M",
                "IQ3_XXS", "IQ3_XS", "IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ2_M", "IQ1_S", "IQ1_M",
                "MXFP4_MOE"]


def offered_with_imatrix(ftype):
    """gguf-quantize's own answer: whether it writes ftype given an imatrix."""
    r = subprocess.run([str(BIN / "gguf-quantize"), "--imatrix", "/nonexistent", "x.gguf",
                        "/nonexistent/o.gguf", ftype], capture_output=True, text=True)
    return "not available yet" not in r.stderr


@pytest.fixture(scope="module")
def imatrices(inputs, tmp_path_factory):
    """model -> (GGUF imatrix, legacy .dat imatrix) of its tensors."""
    d = tmp_path_factory.mktemp("imatrix")
    out = {}
    for k, m in enumerate(INPUTS):
        st = make_stats(inputs[m], seed=100 + k)
        g, dat = d / f"{m}.imatrix.gguf", d / f"{m}.imatrix.dat"
        write_gguf_imatrix(g, st)
        write_dat_imatrix(dat, st)
        out[m] = (g, dat)
    return out


@pytest.mark.parametrize("model", INPUTS)
@pytest.mark.parametrize("ftype", WITH_IMATRIX)
def test_imatrix_file_is_llama_quantize_s(inputs, imatrices, tmp_path, model, ftype):
    if not offered_with_imatrix(ftype):
        pytest.skip(f"{ftype}: its kernels are not in this branch yet")
    out = same_bytes_imatrix(tmp_path, inputs[model], ftype, imatrices[model][0])
    runs(out)
    # The matrix was used: the tensor data differs from the file made without one (for
    # the types whose quantizer weighs, on a model with whole blocks).
    if model == "qwen2-k" and ftype not in ("Q8_0", "TQ1_0", "TQ2_0", "MXFP4_MOE"):
        plain = tmp_path / "plain.gguf"
        r = ours(["-q", inputs[model], plain, ftype], check=False)
        if r.returncode == 0:
            a = {t.name: bytes(t.data.tobytes()) for t in gguf.GGUFReader(out).tensors}
            b = {t.name: bytes(t.data.tobytes()) for t in gguf.GGUFReader(plain).tensors}
            assert sum(a[k] != b[k] for k in a) > len(a) // 4, ftype


@pytest.mark.parametrize("model", ["qwen2-k", "llama-q9"])
@pytest.mark.parametrize("ftype", ["Q4_K_M", "Q4_0", "IQ4_XS", "Q2_K"])
def test_legacy_dat_imatrix(inputs, imatrices, tmp_path, model, ftype):
    same_bytes_imatrix(tmp_path, inputs[model], ftype, imatrices[model][1])


@pytest.mark.parametrize("case", ["include", "exclude", "both", "none-left"])
def test_include_exclude_weights(inputs, imatrices, tmp_path, case):
    inc, exc = {"include": (["ffn_down", "attn_v"], []), "exclude": ([], ["blk.0.", "ffn_up"]),
                "both": (["blk.1"], ["attn"]), "none-left": (["no-such-tensor"], [])}[case]
    same_bytes_imatrix(tmp_path, inputs["qwen2-k"], "Q4_K_M", imatrices["qwen2-k"][0],
                       include=inc, exclude=exc)


def test_count_of_zero_means_weight_one(inputs, tmp_path):
    st = make_stats(inputs["qwen2-k"], seed=7, zero_count=True)
    im = tmp_path / "zero.imatrix.gguf"
    write_gguf_imatrix(im, st)
    same_bytes_imatrix(tmp_path, inputs["qwen2-k"], "Q4_K_M", im)


def test_long_path_and_dataset_are_cut_to_127_bytes(inputs, tmp_path):
    d = tmp_path / ("d" * 100)
    d.mkdir()
    im = d / ("m" * 60 + ".imatrix.gguf")
    write_gguf_imatrix(im, make_stats(inputs["qwen2-k"], seed=8), datasets=("é" * 100, "b"),
                       chunk_count=3)
    out = same_bytes_imatrix(tmp_path, inputs["qwen2-k"], "Q4_K_M", im)
    f = gguf.GGUFReader(out).fields["quantize.imatrix.file"]
    assert len(bytes(f.parts[-1])) == 127


@pytest.mark.parametrize("model", INPUTS)
@pytest.mark.parametrize("ftype", ["IQ3_XXS", "IQ4_NL", "IQ4_XS", "Q4_0", "Q5_0", "Q2_K_S"])
def test_plan_with_imatrix_is_llama_quantize_s(inputs, imatrices, model, ftype):
    entries, kv = load_like_llama_quantize(imatrices[model][0])
    rc, text = llama_quantize(inputs[model], "/nonexistent/unused.gguf", ftype, dry_run=True,
                              imatrix=entries)
    assert rc == 0, text[-2000:]
    import re
    want = {}
    for m in re.finditer(r"\]\s+(\S+)\s+- \[[^\]]*\], type =\s+(\S+), size =\s+[\d.]+ MiB"
                         r"(?: ->\s+[\d.]+ MiB \((\S+)\))?", text):
        want[m.group(1)] = (m.group(3) or m.group(2)).upper()
    r = ours(["--dry-run", "--json", "--imatrix", imatrices[model][0], inputs[model], ftype])
    got = {t["name"]: t["to"] for t in json.loads(r.stdout)["tensors"]}
    assert got == want
