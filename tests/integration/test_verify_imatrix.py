"""model-verify --imatrix: a file quantized with an importance matrix is proven when the
reproduction gets the same matrix, and said to lack it when it does not.

Subjects: the wide random llama of test_verify.py (rows of 256 and 512, so the K, IQ and
TQ types apply) and the mixtral fixture (8 experts: one vector per expert of each
stack), quantized by our gguf-quantize (llama-quantize's bytes, tests/llama) with a
matrix written here as llama-imatrix stores it (GGUF: NAME.in_sum2 and NAME.counts per
weight, with imatrix.datasets, chunk_count and chunk_size; or the legacy .dat).
  - with --imatrix: every tensor reproduced byte for byte (judged "proven"), the
    matrix's vectors used (imatrix.weighted);
  - without it: not proven; the verdict passes judged against the unweighted
    reproduction (or, for IQ2_XS, whose quantizer requires a matrix, against a
    stand-in type), and the report says the reproduction lacks DST's matrix;
  - IQ4_NL, IQ4_XS, TQ1_0, TQ2_0, IQ3_S made without a matrix: proven;
  - a planted defect in a weighted file is still named (row, layer); a matrix of
    another model is an error (exit 2) naming the file and the entry."""
import struct

import gguf
import numpy as np
import pytest

from test_verify import BIN, HF, VERIFY, Gguf, failing, make_wide, run, verify


def stats_for(model, seed=7):
    """{name: (sums (n_mat, ne0), counts (n_mat,))} for what llama-imatrix records: every
    blk.* matrix (one row per expert of a stack) and output.weight."""
    rng = np.random.default_rng(seed)
    out = {}
    for t in gguf.GGUFReader(model).tensors:
        ne = [int(v) for v in t.shape]
        if len(ne) < 2 or not (t.name.startswith("blk.") or t.name == "output.weight"):
            continue
        nmat = ne[2] if len(ne) > 2 else 1
        counts = rng.integers(1, 8, nmat).astype(np.float32) * 512
        mean_sq = np.exp(rng.normal(-1, 1.5, (nmat, ne[0]))).astype(np.float32)
        out[t.name] = ((mean_sq * counts[:, None]).astype(np.float32), counts)
    return out


def write_gguf(path, stats):
    w = gguf.GGUFWriter(str(path), "imatrix")
    w.add_array("imatrix.datasets", ["calib.txt"])
    w.add_uint32("imatrix.chunk_count", 7)
    w.add_uint32("imatrix.chunk_size", 512)
    for name in sorted(stats):
        sums, counts = stats[name]
        w.add_tensor(f"{name}.in_sum2", sums)
        w.add_tensor(f"{name}.counts", counts.reshape(-1, 1))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def write_dat(path, stats):
    """The legacy format (2-D weights only): sums / count x ncall per entry."""
    b = bytearray(struct.pack("<i", len(stats)))
    for name in sorted(stats):
        sums, counts = stats[name]
        ncall = int(counts[0] // 512)
        vals = (sums.reshape(-1) / np.float32(counts[0]) * np.float32(ncall)).astype("<f4")
        b += struct.pack("<i", len(name)) + name.encode() + struct.pack("<ii", ncall, vals.size)
        b += vals.tobytes()
    b += struct.pack("<i", 7) + struct.pack("<i", 9) + b"calib.txt"
    path.write_bytes(bytes(b))
    return path


@pytest.fixture(scope="module")
def wide(tmp_path_factory):
    """(HF folder, its f32 GGUF, its GGUF importance matrix)."""
    folder, f32 = make_wide(tmp_path_factory.mktemp("wide-im"))
    return folder, f32, write_gguf(folder.parent / "wide.imatrix.gguf", stats_for(f32))


def quantize(f32, out, qtype, im=None):
    r = run(BIN / "gguf-quantize", "-q", *(["--imatrix", im] if im else []), f32, out, qtype)
    assert r.returncode == 0, r.stderr
    return out


def proven(j):
    assert j["verdict"] == "pass" and j["judged"] == "proven", j["why"]
    assert j["tensors"]["proven"] == j["tensors"]["compared"]
    assert all(t["reproduced"] == "same" for t in j["tensors"]["items"])


# gguf-quantize's file types with a matrix: K mixes, legacy (whole-row weighting), IQ4,
# and grid types whose quantizers require one (IQ2_XS, IQ1_S) or use it (IQ3_S, IQ2_S)
WEIGHTED = ["IQ4_XS", "Q4_K_M", "IQ2_XS", "Q4_0", "IQ4_NL", "Q3_K_S", "IQ3_S", "IQ1_S"]


@pytest.mark.parametrize("qtype", WEIGHTED)
def test_weighted_file_is_proven_with_its_matrix(wide, tmp_path, qtype):
    folder, f32, im = wide
    q = quantize(f32, tmp_path / f"{qtype}.gguf", qtype, im)
    for src in (folder, f32):
        rc, j, err = verify(src, q, "--imatrix", im)
        assert rc == 0, (err, j and j["why"])
        proven(j)
        assert j["imatrix"]["given"] == str(im) and j["imatrix"]["weighted"] > 0
        assert j["imatrix"]["dst_records"] and not j["imatrix"]["lacking"]
        assert j["imatrix"]["dst_entries"] == 15        # 2 x 7 matrices + output
        assert j["tensors"]["proxied"] == 0
        assert any(t["imatrix_weighted"] for t in j["tensors"]["items"])
    # the DST's own types, no stand-in
    assert {t["repro_type"] for t in j["tensors"]["items"]} == \
        {t["dst_type"] for t in j["tensors"]["items"]}


@pytest.mark.parametrize("qtype", ["IQ4_XS", "Q4_K_M", "IQ2_XS"])
def test_weighted_file_without_its_matrix_is_not_proven(wide, tmp_path, qtype):
    folder, f32, im = wide
    q = quantize(f32, tmp_path / f"{qtype}.gguf", qtype, im)
    rc, j, err = verify(folder, q, "--layers")
    assert rc == 0, (err, j and j["why"])          # a correct file: judged, and passes
    assert j["judged"] == "relative" and j["tensors"]["proven"] < j["tensors"]["compared"]
    assert j["imatrix"] == {"given": None, "weighted": 0, "dst_records": True,
                            "dst_file": str(im), "dst_entries": 15, "lacking": True}
    if qtype == "IQ2_XS":       # its quantizer requires a matrix: a stand-in type
        assert j["tensors"]["proxied"] > 0
    # the weighted tensors that differ: held to 4x their blocks' largest value and to
    # 1.5x the unweighted reproduction's relative RMSE (+ 0.01), which they meet
    differ = [t for t in j["tensors"]["items"] if t["reproduced"] == "differs"]
    assert differ and all(t["dst_weighted"] and t["expected"]["rel"] >= 4 for t in differ)
    for t in differ:
        assert t["rel_rmse"] <= t["expected"]["rel_rmse_max"] == pytest.approx(
            1.5 * t["repro_rel_rmse"] + 0.01)
        assert t["rel_rmse"] <= 1.1 * t["repro_rel_rmse"]     # measured at most 1.08
    r = run(VERIFY, folder, q)
    assert r.returncode == 0
    assert "that the reproduction lacks" in r.stdout
    assert "not proven: reproduced without DST's importance matrix" in r.stdout


def test_proven_without_dst_s_keys(wide, tmp_path):
    """The quantize.imatrix.* keys stripped: with the matrix every tensor is still SRC's
    weighted reproduction, so proven, though Q4_0's weighted blocks lie past the
    unweighted bound (a proven tensor is within its bound by construction)."""
    folder, f32, im = wide
    g = Gguf(quantize(f32, tmp_path / "q.gguf", "Q4_0", im))
    g.fields = [f for f in g.fields if not f[0].startswith("quantize.imatrix.")]
    q = g.write(tmp_path / "bare.gguf")
    rc, j, err = verify(folder, q, "--imatrix", im)
    assert rc == 0, err
    proven(j)
    assert not j["imatrix"]["dst_records"]
    assert max(t["worst"] for t in j["tensors"]["items"]) > 1      # past the unweighted bound
    # without either, it fails on the unweighted bound: a weighted file must say so
    rc, j, err = verify(folder, q)
    assert rc == 1 and "outside the bound" in j["why"]


def test_legacy_dat_matrix_proves_too(wide, tmp_path):
    folder, f32, _ = wide
    dat = write_dat(tmp_path / "m.imatrix.dat", stats_for(f32))
    q = quantize(f32, tmp_path / "q.gguf", "IQ4_XS", dat)
    rc, j, err = verify(folder, q, "--imatrix", dat)
    assert rc == 0, err
    proven(j)


@pytest.mark.parametrize("qtype", ["IQ4_NL", "IQ4_XS", "TQ1_0", "TQ2_0", "IQ3_S"])
def test_iq_and_tq_files_without_a_matrix_are_proven(wide, tmp_path, qtype):
    """Types quant/ now writes: reproduced in their own type, not a stand-in."""
    folder, f32, _ = wide
    q = quantize(f32, tmp_path / f"{qtype}.gguf", qtype)
    rc, j, err = verify(folder, q)
    assert rc == 0, err
    proven(j)
    assert not j["imatrix"]["dst_records"] and not j["imatrix"]["lacking"]
    assert any(t["dst_type"] == qtype for t in j["tensors"]["items"])


def test_experts_are_weighted_each_by_its_vector(tmp_path):
    """mixtral's stacks [8 experts, rows, cols]: each expert's piece by its own vector
    (Q4_0 weighs whole rows by their mean square)."""
    f32 = tmp_path / "mixtral-f32.gguf"
    assert run(BIN / "safetensors2gguf", "-q", "--outtype", "f32", HF / "mixtral",
               f32).returncode == 0
    im = write_gguf(tmp_path / "mixtral.imatrix.gguf", stats_for(f32, seed=3))
    q = quantize(f32, tmp_path / "q.gguf", "Q4_0", im)
    rc, j, err = verify(HF / "mixtral", q, "--imatrix", im)
    assert rc == 0, (err, j and j["why"])
    proven(j)
    experts = [t for t in j["tensors"]["items"] if "_exps.weight[" in t["name"]]
    assert len(experts) == 2 * 3 * 8 and j["imatrix"]["weighted"] >= len(experts)
    # without it: the stacks differ
    rc, j, err = verify(HF / "mixtral", q)
    assert j["imatrix"]["lacking"] and j["tensors"]["proven"] < j["tensors"]["compared"]


def plant_k_block(g):
    t = g.tensor("blk.1.ffn_down.weight")       # Q4_K_M: Q6_K rows of 512 (2 blocks of 210 B)
    d = t[1].copy()
    d[7, 208:210] = np.frombuffer(np.float16(8.0).tobytes(), np.uint8)  # block 0's scale d
    t[1] = d


def test_planted_defect_in_a_weighted_file_is_located(wide, tmp_path):
    folder, f32, im = wide
    g = Gguf(quantize(f32, tmp_path / "q.gguf", "Q4_K_M", im))
    plant_k_block(g)
    a, b = g.tensor("blk.0.ffn_up.weight"), g.tensor("blk.1.ffn_up.weight")
    a[1], b[1] = b[1], a[1]
    bad_file = g.write(tmp_path / "bad.gguf")
    for opts in (["--imatrix", im], []):
        rc, j, err = verify(folder, bad_file, "--layers", *opts)
        assert rc == 1, err
        bad = failing(j)
        assert set(bad) == {"blk.1.ffn_down.weight", "blk.0.ffn_up.weight",
                            "blk.1.ffn_up.weight"}, opts
        assert bad["blk.1.ffn_down.weight"]["worst_row"] == 7
        assert "layer 1's tensor" in bad["blk.0.ffn_up.weight"]["diagnosis"]
        assert j["judged"] == "relative" and "blk.1.ffn_down.weight" in j["why"]
        if opts:    # every other tensor still proven with the matrix
            others = [t for t in j["tensors"]["items"] if t["name"] not in bad]
            assert others and all(t["reproduced"] == "same" for t in others)
        else:       # without it, the failure says what the reproduction lacked
            assert j["imatrix"]["lacking"] and "importance matrix" in j["why"]


def test_zeroed_tensor_in_a_weighted_file_is_caught(wide, tmp_path):
    """Without the matrix a weighted block may lie far from the unweighted one; a zeroed
    tensor still misses the reproduction's relative RMSE (1 against about 0.1)."""
    folder, f32, im = wide
    g = Gguf(quantize(f32, tmp_path / "q.gguf", "IQ4_XS", im))
    t = g.tensor("blk.0.attn_output.weight")
    t[1] = np.zeros_like(t[1])
    rc, j, err = verify(folder, g.write(tmp_path / "z.gguf"))
    assert rc == 1, err
    (bad,) = failing(j).values()
    assert bad["name"] == "blk.0.attn_output.weight" and bad["below_floor"]
    assert bad["diagnosis"] == "DST's tensor is all zeros"


def test_matrix_of_another_model_is_an_error(wide, tmp_path):
    folder, f32, im = wide
    q = quantize(f32, tmp_path / "q.gguf", "Q4_K_M", im)
    st = stats_for(f32)
    s, c = st["blk.1.ffn_down.weight"]
    st["blk.1.ffn_down.weight"] = (s[:, :256], c)          # 256 columns, the tensor has 512
    other = write_gguf(tmp_path / "other.imatrix.gguf", st)
    r = run(VERIFY, "--imatrix", other, folder, q)
    assert r.returncode == 2 and r.stdout == ""
    (line,) = r.stderr.strip().splitlines()
    assert str(other) in line and "blk.1.ffn_down.weight" in line and "column" in line, line
    r = run(VERIFY, "--imatrix", tmp_path / "absent.dat", folder, q)
    assert r.returncode == 2 and "absent.dat" in r.stderr


def test_recorded_file_name_reaches_the_terminal_escaped(wide, tmp_path):
    """quantize.imatrix.file is text from the file: the report quotes it by the
    terminal-output rule (no ESC, C1 or bidi control), --json keeps it as a string."""
    folder, f32, im = wide
    g = Gguf(quantize(f32, tmp_path / "q.gguf", "Q4_K_M", im))
    hostile = "m\x1b]0;owned\x07\x1b[2J\u009b\u202e.gguf"
    g.field("quantize.imatrix.file")[1] = hostile
    q = g.write(tmp_path / "h.gguf")
    r = run(VERIFY, folder, q)
    assert r.returncode == 0 and "that the reproduction lacks" in r.stdout
    assert not any(c in r.stdout for c in "\x1b\x07\u009b\u202e")
    rc, j, err = verify(folder, q)
    assert j["imatrix"]["dst_file"] == hostile
