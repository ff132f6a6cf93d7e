"""gguf-quantize --imatrix without llama.cpp (tests/llama/test_quantize_imatrix.py compares
the files with llama.cpp's): the matrix is used, --include/--exclude-weights filter it,
the quantize.imatrix.* keys are written, and bad matrices are refused: a tensor's entry of
another column count, NaN or infinite weights, a matrix for another model, a legacy .dat
cut short, a GGUF without its metadata or with sums and no counts. Each failure is one
line naming the file and the entry, exit 1, and leaves no OUT."""
import struct

import gguf
import numpy as np
import pytest

from test_gguf_quantize import run, tiny_llama


def stats_for(model, seed=1, rename=None):
    """{name: (sums (n_mat, ne0), counts (n_mat,))} for the model's blk.* matrices."""
    rng = np.random.default_rng(seed)
    out = {}
    for t in gguf.GGUFReader(model).tensors:
        if t.name.startswith("blk.") and len(t.shape) >= 2:
            ne0 = int(t.shape[0])
            counts = np.full(1, 512 * 3, np.float32)
            sums = (np.exp(rng.normal(0, 1, (1, ne0))) * counts[0]).astype(np.float32)
            out[rename(t.name) if rename else t.name] = (sums, counts)
    return out


def write_gguf(path, stats, meta=True, drop_counts=None):
    w = gguf.GGUFWriter(str(path), "imatrix")
    if meta:
        w.add_array("imatrix.datasets", ["calib.txt"])
        w.add_uint32("imatrix.chunk_count", 3)
        w.add_uint32("imatrix.chunk_size", 512)
    for name in sorted(stats):
        sums, counts = stats[name]
        w.add_tensor(f"{name}.in_sum2", sums)
        if name != drop_counts:
            w.add_tensor(f"{name}.counts", counts.reshape(-1, 1))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def write_dat(path, stats):
    b = bytearray(struct.pack("<i", len(stats)))
    for name in sorted(stats):
        sums, counts = stats[name]
        nb = name.encode()
        b += struct.pack("<i", len(nb)) + nb + struct.pack("<ii", 3, sums.size)
        b += (sums.reshape(-1) / counts[0] * 3).astype("<f4").tobytes()
    b += struct.pack("<i", 3) + struct.pack("<i", 9) + b"calib.txt"
    path.write_bytes(bytes(b))


@pytest.fixture
def model(tmp_path):
    p = tmp_path / "m.gguf"
    tiny_llama(p)
    return p


def keys(path):
    r = gguf.GGUFReader(path)
    out = {}
    for k, f in r.fields.items():
        if k.startswith("quantize.imatrix."):
            out[k] = bytes(f.parts[-1]).decode() if f.types[0] == gguf.GGUFValueType.STRING \
                else int(f.parts[-1][0])
    return out


def data(path):
    return {t.name: bytes(t.data.tobytes()) for t in gguf.GGUFReader(path).tensors}


@pytest.mark.parametrize("fmt", ["gguf", "dat"])
def test_imatrix_is_used_and_recorded(model, tmp_path, fmt):
    im = tmp_path / f"m.imatrix.{fmt}"
    (write_gguf if fmt == "gguf" else write_dat)(im, stats_for(model))
    run("-q", "--imatrix", im, model, tmp_path / "w.gguf", "Q4_0")
    run("-q", model, tmp_path / "p.gguf", "Q4_0")
    a, b = data(tmp_path / "w.gguf"), data(tmp_path / "p.gguf")
    changed = [k for k in a if a[k] != b[k]]
    assert changed and all(k.startswith("blk.") for k in changed)
    assert "token_embd.weight" not in changed
    assert keys(tmp_path / "w.gguf") == {
        "quantize.imatrix.file": str(im), "quantize.imatrix.dataset": "calib.txt",
        "quantize.imatrix.entries_count": 14, "quantize.imatrix.chunks_count": 3}
    assert keys(tmp_path / "p.gguf") == {}


def test_include_and_exclude_weights(model, tmp_path):
    im = tmp_path / "m.imatrix.gguf"
    write_gguf(im, stats_for(model))
    run("-q", "--imatrix", im, "--include-weights", "attn", "--exclude-weights", "attn_q",
        model, tmp_path / "w.gguf", "Q4_0")
    assert keys(tmp_path / "w.gguf")["quantize.imatrix.entries_count"] == 6   # k, v, out x2
    run("-q", "--imatrix", im, "--include-weights", "nothing-matches", model,
        tmp_path / "n.gguf", "Q4_0")
    assert keys(tmp_path / "n.gguf") == {}       # no entry left: as without a matrix


def refused(model, tmp_path, im, entry, *words, ftype="Q4_0"):
    out = tmp_path / "out.gguf"
    r = run("--imatrix", im, model, out, ftype, ok=False)
    assert r.returncode == 1, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert str(im) in lines[0] and entry in lines[0], lines[0]
    for w in words:
        assert w in lines[0], lines[0]
    assert not out.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".out.gguf")]


def test_wrong_column_count(model, tmp_path):
    st = stats_for(model)
    s, c = st["blk.1.ffn_down.weight"]
    st["blk.1.ffn_down.weight"] = (s[:, :64], c)
    im = tmp_path / "bad.imatrix.gguf"
    write_gguf(im, st)
    refused(model, tmp_path, im, "blk.1.ffn_down.weight", "64 importance weights", "128 columns")


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_non_finite_weight(model, tmp_path, bad):
    st = stats_for(model)
    st["blk.0.attn_v.weight"][0][0, 5] = bad
    im = tmp_path / "bad.imatrix.gguf"
    write_gguf(im, st)
    refused(model, tmp_path, im, "blk.0.attn_v.weight", "column 5",
            "NaN" if np.isnan(bad) else "infinite")


def test_count_of_zero_is_weight_one(model, tmp_path):
    st = stats_for(model)
    st["blk.0.attn_v.weight"][1][0] = 0
    st["blk.0.attn_v.weight"][0][0, 5] = np.nan    # never read: the count says "no data"
    im = tmp_path / "zero.imatrix.gguf"
    write_gguf(im, st)
    run("-q", "--imatrix", im, model, tmp_path / "z.gguf", "Q4_0")
    # All-ones weights: the same bytes as a matrix of ones for that tensor.
    st["blk.0.attn_v.weight"] = (np.ones_like(st["blk.0.attn_v.weight"][0]),
                                 np.ones(1, np.float32))
    write_gguf(tmp_path / "ones.imatrix.gguf", st)
    run("-q", "--imatrix", tmp_path / "ones.imatrix.gguf", model, tmp_path / "o.gguf", "Q4_0")
    assert data(tmp_path / "z.gguf") == data(tmp_path / "o.gguf")


def test_matrix_for_another_model(model, tmp_path):
    im = tmp_path / "other.imatrix.gguf"
    write_gguf(im, stats_for(model, rename=lambda n: n.replace("blk.", "model.layers.")))
    refused(model, tmp_path, im, "model.layers.", "another model")


def test_truncated_dat(model, tmp_path):
    im = tmp_path / "cut.imatrix.dat"
    st = stats_for(model)
    write_dat(im, st)
    b = im.read_bytes()
    last = sorted(st)[-1]
    im.write_bytes(b[:len(b) - 100])          # inside the last entry's values
    refused(model, tmp_path, im, last, "the values need")
    im.write_bytes(b[:b.index(last.encode()) + 3])   # inside its name: named by its index
    refused(model, tmp_path, im, f"entry {len(st)} of {len(st)}", "the name needs")


def test_gguf_without_metadata_or_counts(model, tmp_path):
    im = tmp_path / "nometa.imatrix.gguf"
    write_gguf(im, stats_for(model), meta=False)
    out = tmp_path / "o.gguf"
    r = run("--imatrix", im, model, out, "Q4_0", ok=False)
    assert r.returncode == 1 and "missing imatrix metadata" in r.stderr and str(im) in r.stderr
    im2 = tmp_path / "nocounts.imatrix.gguf"
    write_gguf(im2, stats_for(model), drop_counts="blk.0.ffn_up.weight")
    refused(model, tmp_path, im2, "blk.0.ffn_up.weight", "without counts")


def test_types_that_need_a_matrix(model, tmp_path):
    # Q2_K_S needs an imatrix for its Q2_K tensors: without one it is not offered.
    r = run(model, tmp_path / "x.gguf", "Q2_K_S", ok=False)
    assert r.returncode == 2 and "--imatrix" in r.stderr
    st = stats_for(model)
    del st["blk.1.ffn_gate.weight"]
    im = tmp_path / "partial.imatrix.gguf"
    write_gguf(im, st)
    big = tmp_path / "big.gguf"
    tiny_llama(big, h=256)
    write_gguf(im, {k: v for k, v in stats_for(big).items() if k != "blk.1.ffn_gate.weight"})
    out = tmp_path / "out.gguf"
    r = run("--imatrix", im, big, out, "Q2_K_S", ok=False)
    assert r.returncode == 1 and "blk.1.ffn_gate.weight" in r.stderr, r.stderr
    assert "importance matrix" in r.stderr and not out.exists()
