"""ggml itself as the oracle of quant/: the libggml-base of this venv's llama.cpp (the pinned
llama-cpp-python 0.3.36), called through ctypes (scripts/make_quant_goldens.py holds the
harness), against our kernels through $LC_TEST_BIN/lc-quant-raw with LC_QUANT=ref (the grid types:
every vector variant too).

- Every type we quantize: our bytes equal ggml_quantize_chunk's (no importance matrix, so
  quantize_row_<type>_ref for the types that have one, what llama-quantize writes; the
  row-only types' quantize_<type>) on about four million values per
  type: normal and uniform data at every magnitude, signed zeros, exact .5 and integer
  ties, all-equal and all-zero blocks, values at GROUP_MAX_EPS, subnormals, huge values
  and sums of squares that overflow, NaN (with payloads) and infinities in every lane.
- With an importance matrix (every type that uses one), ggml_quantize_chunk's bytes on
  over two million values per type: rows of 256 to 4096, the edge inputs and normal
  data, importance vectors spread over decades, all zero, all equal and extreme.
- Every block type ggml can decode: our floats equal its to_float bit for bit on a
  million random-byte values with every special scale.
- libconvert's dtype table names every block type ggml defines, with ggml's sizes.
- The goldens in fixtures/quant/ are what this ggml makes.
Nothing here skips: without ggml's library the tests fail."""
import os
import platform
import subprocess
import sys
from pathlib import Path

import llama_cpp
import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
import make_quant_goldens as mqg  # noqa: E402

RAW = Path(os.environ.get("LC_TEST_BIN", ROOT / "build" / "test-bin")) / "lc-quant-raw"
ENV = dict(os.environ, LC_QUANT="ref")
# The grid types' vector row entries (quant/<isa>/iq_search.c), each against ggml too, the
# variants of this machine's architecture; one the CPU lacks runs the best it has
# (quant/dispatch.c), so the test holds everywhere and proves a variant where it runs.
GRID_VARIANTS = ["ref"] + {"x86_64": ["avx2", "avx512"], "aarch64": ["neon"]}.get(
    platform.machine(), [])
# The types whose row entries have vector variants besides the grid ones
# (quant/<isa>/iq4_tries.c, w_tries.c: the K and legacy types' weighted path): each
# variant is compared with ggml too (without an imatrix those run their block kernels,
# which LC_QUANT=ref compares here and tests/unit/test_quant_variants.c per variant).
ROW_VARIANTS = {t: GRID_VARIANTS for t in ("IQ4_NL", "IQ4_XS", "Q4_0", "Q4_1", "Q5_0", "Q5_1",
                                           "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K")}


@pytest.fixture(scope="module")
def ggml():
    return mqg.Ggml()


def lc(op, qtype, data: bytes, tmp_path, variant="ref") -> bytes:
    src, dst = tmp_path / "in.bin", tmp_path / "out.bin"
    src.write_bytes(data)
    r = subprocess.run([str(RAW), op, qtype, str(src), str(dst)],
                       env=dict(ENV, LC_QUANT=variant), capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return dst.read_bytes()


# ---- inputs ----

def bits(u):
    return np.array(u, dtype=np.uint32).view(np.float32)


KINDS = [
    "normal", "uniform", "magnitudes", "signed_zeros", "equal16", "equal_block", "halves",
    "integers", "subnormal", "subnormal_multiples", "huge", "max_finite", "zeros", "sparse",
    "positive", "negative", "outliers", "wide", "eps_edge", "nan", "nan_last", "inf",
    "all_nan", "inf_alternating", "square_overflow", "nan_payloads",
]


def kind_block(kind, rng):
    """256 float32 values of one kind."""
    k = 256
    with np.errstate(over="ignore", invalid="ignore"):
        if kind == "normal":
            x = rng.standard_normal(k)
        elif kind == "uniform":
            x = rng.uniform(-1, 1, k)
        elif kind == "magnitudes":      # one magnitude per 16 values, 1e-37 .. 1e37
            x = rng.standard_normal(k) * np.repeat(10.0 ** rng.uniform(-37, 37, 16), 16)
        elif kind == "signed_zeros":
            x = np.where(rng.random(k) < 0.5, 0.0, -0.0)
        elif kind == "equal16":
            x = np.repeat(rng.standard_normal(16), 16)
        elif kind == "equal_block":
            x = np.full(k, rng.standard_normal())
        elif kind == "halves":          # exact .5 steps, an extreme to pin the scale
            x = (rng.integers(-32, 32, k) + 0.5) * 2.0 ** rng.integers(-4, 4)
            x[rng.integers(0, k, 4)] = 127.0
        elif kind == "integers":
            x = rng.integers(-8, 8, k).astype(np.float64) * 2.0 ** rng.integers(-8, 8)
        elif kind == "subnormal":
            x = rng.standard_normal(k) * 1e-40
        elif kind == "subnormal_multiples":
            x = rng.integers(-300, 300, k) * 2.0 ** -149
        elif kind == "huge":
            x = rng.standard_normal(k) * 1e37
        elif kind == "max_finite":
            x = rng.uniform(-1, 1, k)
            x[rng.integers(0, k, 8)] = np.where(rng.random(8) < 0.5, 3.4028235e38, -3.4028235e38)
        elif kind == "zeros":
            x = np.zeros(k)
        elif kind == "sparse":
            x = np.where(rng.random(k) < 0.9, 0.0, rng.standard_normal(k) * 5)
        elif kind == "positive":
            x = np.abs(rng.standard_normal(k)) + 0.5
        elif kind == "negative":
            x = -np.abs(rng.standard_normal(k)) - 0.5
        elif kind == "outliers":
            x = np.where(np.arange(k) % 32 == rng.integers(0, 32), 40.0,
                         rng.standard_normal(k) * 1e-3)
        elif kind == "wide":
            x = rng.standard_normal(k) * np.exp(rng.uniform(-20, 20, k))
        elif kind == "eps_edge":        # amax right at ggml's GROUP_MAX_EPS (1e-15)
            eps = np.float32(1e-15)
            x = rng.uniform(-1, 1, k) * 1e-16
            x[::16] = np.nextafter(eps, rng.choice([0, 1], 16).astype(np.float32))
            x[rng.integers(0, k, 4)] = eps
        elif kind == "nan":
            x = rng.standard_normal(k)
            x[rng.integers(0, k, 12)] = np.nan
        elif kind == "nan_last":
            x = rng.standard_normal(k)
            x[rng.integers(0, 32)::32] = np.nan
        elif kind == "inf":
            x = rng.standard_normal(k)
            x[rng.integers(0, k, 3)] = np.inf
            x[rng.integers(0, k, 3)] = -np.inf
        elif kind == "all_nan":
            x = np.full(k, np.nan)
        elif kind == "inf_alternating":
            x = np.where(np.arange(k) % 2 == 0, np.inf, -np.inf)
        elif kind == "square_overflow":  # x*x overflows, |x| does not
            x = rng.uniform(-1, 1, k) * 3e38
        elif kind == "nan_payloads":
            x = rng.standard_normal(k).astype(np.float32)
            lanes = rng.integers(0, k, 8)
            x[lanes] = bits(rng.choice([0x7FA12345, 0xFFC00001, 0x7F800001, 0xFFFFFFFF], 8))
            return x
        else:
            raise ValueError(kind)
    return x.astype(np.float32)


def edge_inputs(values=1 << 22, seed=2026):
    """About `values` floats: every kind in turn, fresh random draws each round."""
    rng = np.random.default_rng(seed)
    rounds = values // (256 * len(KINDS)) + 1
    return np.concatenate([kind_block(kd, rng) for _ in range(rounds) for kd in KINDS])


@pytest.fixture(scope="module")
def inputs():
    x = edge_inputs()
    assert x.size >= 4_000_000
    return x


# ---- quantize ----

@pytest.mark.parametrize("qtype", mqg.WRITE)
def test_quantize_matches_ggml(ggml, inputs, qtype, tmp_path):
    want = ggml.quantize(qtype, inputs)
    for variant in ROW_VARIANTS.get(qtype, ["ref"]):
        got = np.frombuffer(lc("quantize", qtype, inputs.astype("<f4").tobytes(), tmp_path,
                               variant), np.uint8)
        block, size = mqg.BLOCK[qtype]
        assert got.size == want.size == inputs.size // block * size
        bad = np.nonzero((got != want).reshape(-1, size).any(axis=1))[0]
        if bad.size:
            first = bad[0] * block
            kind = KINDS[(first // 256) % len(KINDS)]
            pytest.fail(f"{qtype} ({variant}): {bad.size} of {want.size // size} blocks "
                        f"differ from ggml; first: block {bad[0]} ({kind}), "
                        f"x = {inputs[first:first + 8]}...")


def test_quantize_inputs_cover_the_edges(inputs):
    # The comparison above is only as good as its inputs: they hold every class.
    u = inputs.view(np.uint32)
    assert np.isnan(inputs).sum() > 10_000 and np.isinf(inputs).sum() > 10_000
    assert ((u & 0x7F800000) == 0).sum() > 100_000                 # zeros and subnormals
    assert (u == 0x80000000).sum() > 1000                           # -0.0
    assert (np.abs(inputs) > 1e38).sum() > 10_000
    assert np.isin(u, [0x7FA12345, 0xFFC00001]).sum() > 100         # NaN payloads


# ---- quantize with an importance matrix ----
# ggml_quantize_chunk(type, x, rows of n_per_row, imatrix) runs quantize_row_<type>_impl.
# The edge inputs less the NaNs with payloads: where two NaNs of different payloads meet
# in one sum (x^2 summed over a row), which one survives depends on the operand order the
# compiler picked for that addition, and ggml's -O3 build and ours order the row sums of
# Q4_0/Q5_0 differently (ggml's vector loop alternates); every other input, default NaNs
# and infinities included, gives the same bytes. llama-quantize never quantizes a NaN
# (its loader refuses the row), nor does gguf-quantize (quant/validate.h).
IM_KINDS = [k for k in KINDS if k != "nan_payloads"]


def importance(kind, n, rng):
    """An importance vector of one kind: what llama-imatrix stores (>= 0), and worse."""
    if kind == "spread":            # mean squared activations over decades, some zero
        v = 10.0 ** rng.uniform(-6, 3, n)
        v[rng.integers(0, n, n // 16)] = 0
    elif kind == "zeros":           # a column never activated: every weight 0
        v = np.zeros(n)
    elif kind == "equal":
        v = np.full(n, rng.uniform(0.1, 10))
    elif kind == "extreme":         # subnormals and values near float's top
        v = np.where(rng.random(n) < 0.5, 1e-40, 1e30) * rng.uniform(1, 2, n)
    else:
        raise ValueError(kind)
    return v.astype(np.float32)


def lc_rows(qtype, x, n_per_row, imatrix, tmp_path, variant="ref"):
    src, dst, im = tmp_path / "in.bin", tmp_path / "out.bin", tmp_path / "im.bin"
    x.astype("<f4").tofile(src)
    args = [str(RAW), "quantize", qtype, str(src), str(dst), str(n_per_row)]
    if imatrix is not None:
        imatrix.astype("<f4").tofile(im)
        args.append(str(im))
    r = subprocess.run(args, env=dict(ENV, LC_QUANT=variant), capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return np.fromfile(dst, np.uint8)


IMATRIX_TYPES = [t for t in mqg.IMATRIX]


@pytest.mark.parametrize("qtype", IMATRIX_TYPES)
def test_quantize_with_imatrix_matches_ggml(ggml, qtype, tmp_path):
    rng = np.random.default_rng(mqg.GGML_ID[qtype])
    edge = np.concatenate([kind_block(kd, rng) for _ in range(40) for kd in IM_KINDS])
    normal = rng.standard_normal(1 << 20).astype(np.float32)
    block, size = mqg.BLOCK[qtype]
    total = 0
    for x, n_per_row, kind in [(edge, 256, "spread"), (edge, 1024, "spread"),
                               (normal, 4096, "spread"), (edge, 512, "zeros"),
                               (edge, 256, "equal"), (edge, 2048, "extreme"),
                               (normal, 256, "extreme")]:
        x = x[:x.size // n_per_row * n_per_row]
        im = importance(kind, n_per_row, rng)
        want = ggml.quantize_rows(qtype, x, n_per_row, im)
        for variant in ROW_VARIANTS.get(qtype, ["ref"]):
            got = lc_rows(qtype, x, n_per_row, im, tmp_path, variant)
            assert got.size == want.size
            bad = np.nonzero((got != want).reshape(-1, size).any(axis=1))[0]
            assert bad.size == 0, (f"{qtype} ({variant}), rows of {n_per_row}, {kind} imatrix: "
                                   f"{bad.size} of {want.size // size} blocks differ from "
                                   f"ggml, first {bad[0]}")
        total += x.size
    assert total >= 2_000_000


# The grid types (IQ3_XXS ... IQ1_M). ggml's quantizers assert (abort the process) on
# some inputs: where weights overflow to infinity or turn NaN no grid point scores. So
# ggml runs in a forked child per chunk of one kind of data, and a chunk it aborts on is
# left out (the abort is ggml's answer; ours writes a block) as long as most are compared.
# Their goldens (make check) are scripts/make_quant_goldens.py's grid inputs.


def ggml_in_child(fn):
    """fn()'s bytes (a numpy array) computed in a forked child; None if the child died."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:                                    # pragma: no cover (the child)
        os.close(r)
        os.dup2(os.open(os.devnull, os.O_WRONLY), 2)
        try:
            data = fn().tobytes()
            while data:
                data = data[os.write(w, data):]
        finally:
            os._exit(0)
    os.close(w)
    chunks = []
    while True:
        c = os.read(r, 1 << 20)
        if not c:
            break
        chunks.append(c)
    os.close(r)
    _, status = os.waitpid(pid, 0)
    return np.frombuffer(b"".join(chunks), np.uint8) if status == 0 else None


def bf16_block(rng):
    """256 values as a bf16 checkpoint holds them: many exact ties per block."""
    v = (rng.standard_normal(256) * 0.02).astype(np.float32)
    return (v.view(np.uint32) & 0xFFFF0000).view(np.float32)


@pytest.mark.parametrize("qtype", mqg.GRID)
def test_grid_types_match_ggml(ggml, qtype, tmp_path):
    rng = np.random.default_rng(mqg.GGML_ID[qtype])
    ggml.quantize_rows(qtype, np.ones(256, np.float32), 256, np.ones(256, np.float32))
    chunks = {kd: np.concatenate([kind_block(kd, rng) for _ in range(24)]) for kd in KINDS}
    chunks["bf16"] = np.concatenate([bf16_block(rng) for _ in range(64)])
    chunks["normal-4096"] = rng.standard_normal(1 << 18).astype(np.float32)
    block, size = mqg.BLOCK[qtype]
    imatrices = ["spread", "equal", "zeros"] + \
        ([] if qtype in mqg.GRID_NEEDS_IMATRIX else [None])
    compared, aborted = 0, []
    for kind in imatrices:
        for name, x in chunks.items():
            n_per_row = 4096 if name == "normal-4096" else 256 if kind != "equal" else 1024
            im = importance(kind, n_per_row, rng) if kind else None
            want = ggml_in_child(lambda: ggml.quantize_rows(qtype, x, n_per_row, im))
            if want is None:
                aborted.append(f"{name}/{kind}")
                continue
            for variant in GRID_VARIANTS:
                got = lc_rows(qtype, x, n_per_row, im, tmp_path, variant)
                bad = np.nonzero((got != want).reshape(-1, size).any(axis=1))[0]
                assert bad.size == 0, (f"{qtype} ({variant}), {name} in rows of {n_per_row}, "
                                       f"{kind} imatrix: {bad.size} of {want.size // size} "
                                       f"blocks differ from ggml, first {bad[0]}")
            compared += x.size
    assert compared >= 1_000_000, (compared, aborted)
    # ggml gives up only on data whose weights overflow or are NaN.
    assert all(a.split("/")[0] in ("magnitudes", "huge", "max_finite", "nan", "nan_last", "inf",
                                   "all_nan", "inf_alternating", "square_overflow",
                                   "nan_payloads", "wide") for a in aborted), aborted


def test_ggml_requires_no_imatrix_for_our_types(ggml):
    # Without an importance matrix ggml_quantize_chunk runs exactly the _ref kernels.
    for qtype in mqg.QUANTIZE:
        assert not ggml.lib.ggml_quantize_requires_imatrix(mqg.GGML_ID[qtype]), qtype


# ---- dequantize ----

DEQ_GGML = [t for t in mqg.QUANTIZE + mqg.DEQUANTIZE_ONLY if t != "Q8_1"]


@pytest.mark.parametrize("qtype", DEQ_GGML)
def test_dequantize_matches_ggml(ggml, qtype, tmp_path):
    block, size = mqg.BLOCK[qtype]
    rng = np.random.default_rng(mqg.GGML_ID[qtype])
    blocks = np.concatenate([
        mqg.deq_blocks(qtype, 4096 * 16, seed=77),              # every special scale
        rng.integers(0, 256, (1 << 20) // block * size, dtype=np.uint8),
    ])
    want = ggml.dequantize(qtype, blocks).view("<u4")
    got = np.frombuffer(lc("dequantize", qtype, blocks.tobytes(), tmp_path), "<u4")
    assert got.size == want.size >= 1 << 20
    bad = np.nonzero(got != want)[0]
    assert bad.size == 0, (f"{qtype}: {bad.size} values differ from ggml, first at {bad[0]} "
                           f"(block {bad[0] // block}): {got[bad[0]]:08x}, want "
                           f"{want[bad[0]]:08x}")


def test_q8_1_is_the_inverse_of_ggml_quantizer(ggml, inputs, tmp_path):
    # ggml has no Q8_1 dequantizer; ours is qs * d, the value quantize_row_q8_1_ref encodes.
    fn = ggml.lib.quantize_row_q8_1_ref
    fn.argtypes = [mqg.ctypes.c_void_p, mqg.ctypes.c_void_p, mqg.ctypes.c_int64]
    fn.restype = None
    normal = np.random.default_rng(8).standard_normal(1 << 14).astype(np.float32)
    for x in (np.ascontiguousarray(inputs[:1 << 18]), normal):
        blocks = np.zeros(x.size // 32 * 36, np.uint8)
        fn(x.ctypes.data, blocks.ctypes.data, x.size)
        got = np.frombuffer(lc("dequantize", "Q8_1", blocks.tobytes(), tmp_path), "<f4")
        b = blocks.reshape(-1, 36)
        d = b[:, 0:2].copy().view(np.float16).astype(np.float32)
        with np.errstate(all="ignore"):
            want = b[:, 4:].view(np.int8).astype(np.float32) * d
        assert np.array_equal(got.view("<u4"), want.reshape(-1).view("<u4"))
    amax = np.abs(normal).reshape(-1, 32).max(axis=1, keepdims=True)
    assert (np.abs(got - normal).reshape(-1, 32) <= amax / 127).all()


# ---- the type table and the goldens ----

def test_every_ggml_block_type_is_in_our_table(ggml):
    out = subprocess.run([str(RAW), "types"], check=True, capture_output=True, text=True)
    ours = {int(f[1]): f for f in map(str.split, out.stdout.splitlines())}
    count = llama_cpp.GGML_TYPE_COUNT
    assert count == 43, "a newer ggml: check its new types"
    seen = set()
    for tid in range(count):
        t = ggml.traits(tid)
        if not t.is_quantized:
            continue
        seen.add(tid)
        assert tid in ours, f"ggml type {tid} ({t.type_name.decode()}) is not in libconvert/dtype.c"
        name, _, block, size, _, deq = ours[tid]
        assert name.lower() == t.type_name.decode().lower()
        assert (int(block), int(size)) == (t.blck_size, t.type_size), name
        assert deq == "1", f"{name}: no dequantizer"
        assert mqg.GGML_ID[name] == tid and mqg.BLOCK[name] == (int(block), int(size)), name
    assert seen == set(ours), "types in our table that ggml does not quantize"


def test_goldens_are_what_ggml_makes(ggml):
    for name, (data, _, _) in mqg.goldens(ggml).items():
        assert (mqg.FIX / name).read_bytes() == data, f"fixtures/quant/{name}"
