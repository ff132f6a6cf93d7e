"""Oracle tests for lc_convert: every result is compared bit for bit with numpy
(pairs within F16/F32/F64, and integers) or ml_dtypes (pairs with BF16 or F8), through
the test-only driver lc-convert-raw (tests/tools/lc-convert-raw.c)."""
import os
import subprocess
import warnings

import ml_dtypes
import numpy as np
import pytest

BIN = os.path.join(os.environ.get("LC_TEST_BIN", "build/test-bin"), "lc-convert-raw")

NP = {
    "BOOL": np.bool_, "U8": np.uint8, "I8": np.int8, "U16": np.uint16, "I16": np.int16,
    "U32": np.uint32, "I32": np.int32, "U64": np.uint64, "I64": np.int64,
    "F16": np.float16, "F32": np.float32, "F64": np.float64,
    "BF16": ml_dtypes.bfloat16, "F8_E4M3": ml_dtypes.float8_e4m3fn,
    "F8_E5M2": ml_dtypes.float8_e5m2, "F8_E4M3FNUZ": ml_dtypes.float8_e4m3fnuz,
    "F8_E5M2FNUZ": ml_dtypes.float8_e5m2fnuz, "F8_E8M0": ml_dtypes.float8_e8m0fnu,
}
UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
FLOATS = ["F8_E5M2", "F8_E4M3", "F8_E4M3FNUZ", "F8_E5M2FNUZ", "F16", "BF16", "F32", "F64"]
# F8_E8M0 (MX scales) is read only: it converts to every float type, nothing into it.
F8 = ["F8_E4M3", "F8_E5M2", "F8_E4M3FNUZ", "F8_E5M2FNUZ", "F8_E8M0"]
INTS = ["U8", "I8", "U16", "I16", "U32", "I32", "U64", "I64"]


def bits(a):
    """The raw bit patterns of an array, as unsigned ints of the same size."""
    a = np.ascontiguousarray(a)
    return a.view(UINT[a.dtype.itemsize])


def run(frm, to, arr, tmp_path, chunk=None, check=True):
    src, dst = tmp_path / "in.bin", tmp_path / "out.bin"
    src.write_bytes(np.ascontiguousarray(arr).tobytes())
    args = [BIN] + ([f"--via-cast={chunk}"] if chunk else []) + [frm, to, str(src), str(dst)]
    p = subprocess.run(args, capture_output=True, text=True)
    if not check:
        return p
    assert p.returncode == 0, p.stderr
    return np.frombuffer(dst.read_bytes(), dtype=NP[to])


def reference(arr, to):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # overflow / invalid-value casts are the point
        if arr.dtype == ml_dtypes.float8_e8m0fnu and to in F8:
            # ml_dtypes has no direct cast from E8M0 to another F8; through F32 (exact
            # from E8M0), as every narrow float pair goes
            return arr.astype(np.float32).astype(NP[to])
        return arr.astype(NP[to])


def assert_bits_equal(got, want, what):
    gb, wb = bits(got), bits(want)
    bad = np.nonzero(gb != wb)[0]
    assert bad.size == 0, (f"{what}: {bad.size} of {gb.size} differ; first at {bad[0]}: "
                           f"got {gb[bad[0]]:#x}, want {wb[bad[0]]:#x}")


def all_patterns(dtype_name):
    n = np.dtype(NP[dtype_name]).itemsize
    return np.arange(1 << (8 * n), dtype=UINT[n]).view(NP[dtype_name])


def f32_probe():
    """About 4 million f32 bit patterns: random ones (every exponent many times), every
    exponent with the f16 and bf16 round-half-even ties and their neighbours, windows
    around f16's overflow and subnormal limits, NaNs with payloads, +-0 and +-inf."""
    rng = np.random.default_rng(20261122)
    parts = [rng.integers(0, 1 << 32, size=3_000_000, dtype=np.uint64).astype(np.uint32)]
    exps = np.arange(256, dtype=np.uint32) << 23
    low = []
    for tie, keep in ((0x1000, 13), (0x8000, 16)):          # f16 and bf16 dropped bits
        for hi in range(16):                                  # kept-bit patterns, odd and even
            for d in (-1, 0, 1):
                low.append(((hi * 0x1111) << keep & 0x7fffff) | (tie + d))
    low = np.array(low, dtype=np.uint32) & 0x7fffff
    ties = (exps[:, None] | low[None, :]).ravel()
    parts += [ties, ties | 0x80000000]
    centres = [0x477fe000, 0x477fefff, 0x477ff000, 0x47800000,   # 65504, 65520 and around
               0x33800000, 0x33000000, 0x33400000, 0x387fe000,   # 2^-24, 2^-25, 1.5*2^-25, ~2^-14
               0x38800000, 0x00000001, 0x00800000, 0x7f7fffff]   # 2^-14, f32 denormal, max
    for c in centres:
        w = np.arange(c - 20000, c + 20000, dtype=np.int64)
        w = w[(w >= 0) & (w < 0x7f800000)].astype(np.uint32)
        parts += [w, w | 0x80000000]
    payload = rng.integers(1, 1 << 23, size=50_000, dtype=np.uint32)
    nans = 0x7f800000 | payload
    special = np.array([0, 0x80000000, 0x7f800000, 0xff800000, 0x7fc00000, 0xffc00000,
                        0x7f800001, 0xff800001, 0x7f802000, 0x7fffe000, 0x7fffffff, 0x7f801fff],
                       dtype=np.uint32)
    parts += [nans, nans | 0x80000000, special]
    return np.concatenate(parts).view(np.float32)


@pytest.fixture(scope="module")
def probe():
    return f32_probe()


# ---- narrow floats -> F32, every pattern ----

@pytest.mark.parametrize("frm", ["F16", "BF16"] + F8)
def test_all_patterns_to_f32(frm, tmp_path):
    a = all_patterns(frm)
    got = run(frm, "F32", a, tmp_path)
    assert_bits_equal(got, reference(a, "F32"), f"{frm}->F32")
    # NaN keeps its sign (and for F16/BF16 its payload: checked by the equality above);
    # E8M0 has no sign bit, and the FNUZ types' one NaN is 0x80, which ml_dtypes widens to
    # -NaN: the equality above checks both.
    nan = np.isnan(a.astype(np.float32))
    if frm != "F8_E8M0":
        assert np.all(np.signbit(got[nan]) ==
                      (bits(a)[nan] >> (8 * a.itemsize - 1)).astype(bool))


def test_f16_to_f32_is_exact_and_subnormals_exact(tmp_path):
    a = all_patterns("F16")
    got = run("F16", "F32", a, tmp_path)
    sub = (bits(a) & 0x7c00) == 0
    assert np.array_equal(got[sub], (bits(a)[sub] & 0x3ff) * np.float32(2.0 ** -24) *
                          np.where(bits(a)[sub] & 0x8000, -1, 1).astype(np.float32))


# ---- F32 -> F16 / BF16 / F8, about 4 million patterns ----

def ggml_fp32_to_fp16(x):
    """ggml's portable GGML_FP32_TO_FP16 (ggml_compute_fp32_to_fp16) redone in numpy
    float32 arithmetic: scale to push the rounding bit into place, add a power of two
    that fixes the exponent, and let the FPU round to nearest even."""
    w = bits(x).astype(np.uint32)
    base = (np.abs(x) * np.float32(2.0 ** 112)) * np.float32(2.0 ** -110)
    shl1 = (w + w).astype(np.uint32)
    sign = w & np.uint32(0x80000000)
    bias = np.maximum(shl1 & np.uint32(0xFF000000), np.uint32(0x71000000))
    base = ((bias >> 1) + np.uint32(0x07800000)).astype(np.uint32).view(np.float32) + base
    b = base.view(np.uint32)
    nonsign = ((b >> 13) & np.uint32(0x7C00)) + (b & np.uint32(0x0FFF))
    out = np.where(shl1 > np.uint32(0xFF000000), np.uint32(0x7E00), nonsign)
    return ((sign >> 16) | out).astype(np.uint16)


def test_f32_to_f16_matches_numpy_and_ggml(probe, tmp_path):
    got = run("F32", "F16", probe, tmp_path)
    assert_bits_equal(got, reference(probe, "F16"), "F32->F16 vs numpy")
    nan = np.isnan(probe)
    with np.errstate(all="ignore"):
        g = ggml_fp32_to_fp16(probe)
    assert np.array_equal(bits(got)[~nan], g[~nan]), "F32->F16 vs ggml on non-NaN"
    # NaN: documented rule (numpy's): sign | 0x7c00 | top 10 payload bits, 0x7c01 when
    # those are zero; ggml instead gives sign | 0x7e00. Either way a NaN of the same sign.
    pb = bits(probe)[nan]
    top = (pb >> 13) & 0x3ff
    want = ((pb >> 16) & 0x8000) | 0x7c00 | np.where(top == 0, 1, top)
    assert np.array_equal(bits(got)[nan], want.astype(np.uint16))
    assert np.all(np.isnan(got[nan])) and np.all(np.signbit(got[nan]) == np.signbit(probe[nan]))
    assert np.array_equal(bits(got)[nan] & 0x8000, g[nan] & 0x8000)


def test_f32_to_bf16_matches_ml_dtypes(probe, tmp_path):
    got = run("F32", "BF16", probe, tmp_path)
    assert_bits_equal(got, reference(probe, "BF16"), "F32->BF16 vs ml_dtypes")
    # NaN: documented rule (ml_dtypes'): sign | 0x7fc0, payload dropped
    nan = np.isnan(probe)
    want = ((bits(probe)[nan] >> 16) & 0x8000) | 0x7fc0
    assert np.array_equal(bits(got)[nan], want.astype(np.uint16))


@pytest.mark.parametrize("to", ["F8_E4M3", "F8_E5M2", "F8_E4M3FNUZ", "F8_E5M2FNUZ"])
def test_f32_to_f8_matches_ml_dtypes(to, probe, tmp_path):
    got = run("F32", to, probe, tmp_path)
    assert_bits_equal(got, reference(probe, to), f"F32->{to} vs ml_dtypes")


def test_f32_to_f16_through_cast_reads_odd_chunks(probe, tmp_path):
    part = probe[:200_003]
    got = run("F32", "F16", part, tmp_path, chunk=4099)
    assert_bits_equal(got, reference(part, "F16"), "F32->F16 cast, 4099-byte reads")


# ---- every other float pair ----

def float_inputs(frm):
    if frm in ["F16", "BF16"] + F8:
        return all_patterns(frm)
    if frm == "F32":
        return f32_probe()[::8]
    rng = np.random.default_rng(7)
    r = rng.integers(0, 1 << 64, size=400_000, dtype=np.uint64)
    # also doubles at and just past the ties of every narrower format (mantissa bit
    # 41: F16, 44: BF16, 48: E4M3, 49: E5M2, 28: F32), where rounding once or twice differ
    exps = np.arange(2048, dtype=np.uint64) << np.uint64(52)
    mant = [1 << 41, (1 << 41) + 1, (1 << 41) - 1, 3 << 41, 1 << 44, (1 << 44) + 1,
            (1 << 44) + (1 << 28), 1 << 48, (1 << 48) + 1, 1 << 49, (1 << 49) + (1 << 28),
            (1 << 28) + 1, 0xfffffffffffff]
    t = (exps[:, None] | np.array(mant, dtype=np.uint64)[None, :]).ravel()
    s = np.array([0x7ff0000000000001, 0x7ff8000000000000, 0xfff0000000000400, 0x7ff0000000000000,
                  0, 1 << 63], dtype=np.uint64)
    return np.concatenate([r, t, t | np.uint64(1 << 63), s]).view(np.float64)


PAIRS = [(a, b) for a in FLOATS + ["F8_E8M0"] for b in FLOATS
         if a != b and not (b == "F32" and a in ["F16", "BF16"] + F8)]


@pytest.mark.parametrize("frm,to", PAIRS)
def test_float_pairs(frm, to, tmp_path):
    a = float_inputs(frm)
    got = run(frm, to, a, tmp_path)
    assert_bits_equal(got, reference(a, to), f"{frm}->{to}")


# ---- integers ----

def int_values(t):
    i = np.iinfo(NP[t])
    vals = {int(i.min), int(i.max), 0, 1, int(i.max) - 1}
    if i.min < 0:
        vals |= {-1, int(i.min) + 1}
    for u in INTS:                          # every other type's limits that fit here
        j = np.iinfo(NP[u])
        for v in (int(j.min), int(j.max), int(j.max) + 1, int(j.min) - 1):
            if i.min <= v <= i.max:
                vals.add(v)
    return np.array(sorted(vals), dtype=NP[t])


@pytest.mark.parametrize("frm", INTS + ["BOOL"])
@pytest.mark.parametrize("to", INTS + ["BOOL"])
def test_int_pairs(frm, to, tmp_path):
    a = int_values(frm) if frm != "BOOL" else np.array([0, 1, 1, 0], dtype=np.bool_)
    if to == "BOOL":
        fits = np.ones(a.size, dtype=bool)
    else:
        j = np.iinfo(NP[to])
        fits = np.array([j.min <= int(v) <= j.max for v in a])
    ok = run(frm, to, a[fits], tmp_path)
    assert np.array_equal(ok, reference(a[fits], to))
    if not fits.all():
        first = int(np.nonzero(~fits)[0][0])
        p = run(frm, to, a, tmp_path, check=False)
        assert p.returncode == 1
        assert f"element {first} ({int(a[first])}) does not fit {to}" in p.stderr, p.stderr
        # through the cast, the offset is the element's byte offset in the input
        p = run(frm, to, a, tmp_path, chunk=3, check=False)
        assert p.returncode == 1
        assert f"raw @ {first * a.itemsize:#x}:" in p.stderr, p.stderr
        assert f"element {first} ({int(a[first])}) does not fit {to}" in p.stderr, p.stderr


@pytest.mark.parametrize("frm", INTS + ["BOOL"])
@pytest.mark.parametrize("to", FLOATS)
def test_int_to_float(frm, to, tmp_path):
    if frm == "BOOL":
        a = np.array([0, 1, 1, 0], dtype=np.bool_)
    else:
        i = np.iinfo(NP[frm])
        rng = np.random.default_rng(3)
        a = np.concatenate([int_values(frm),
                            rng.integers(int(i.min), int(i.max), size=100_000, dtype=NP[frm],
                                         endpoint=True),
                            np.arange(-3000, 3000).clip(i.min, i.max).astype(NP[frm])])
        if i.bits >= 32:   # around the ties of every narrow float at 2^24 .. 2^62
            k = np.arange(24, i.bits - 1 if i.min < 0 else i.bits, dtype=np.uint64)
            base = np.left_shift(np.uint64(1), k)
            near = np.concatenate([base + (base >> np.uint64(s)) + np.uint64(d)
                                   for s in (3, 4, 8, 11, 12, 24) for d in (0, 1)])
            a = np.concatenate([a, near.astype(NP[frm])])
    got = run(frm, to, a, tmp_path)
    assert_bits_equal(got, reference(a, to), f"{frm}->{to}")


@pytest.mark.parametrize("frm", FLOATS)
def test_float_to_bool(frm, tmp_path):
    a = float_inputs(frm)[:100_000]
    got = run(frm, "BOOL", a, tmp_path)
    assert np.array_equal(got, reference(a, "BOOL"))


@pytest.mark.parametrize("to", INTS)
def test_float_to_int_is_refused(to, tmp_path):
    p = run("F32", to, np.zeros(3, np.float32), tmp_path, check=False)
    assert p.returncode == 1
    assert f"no conversion from F32 to {to}" in p.stderr


@pytest.mark.parametrize("frm", FLOATS + INTS + ["BOOL"])
def test_nothing_converts_into_e8m0(frm, tmp_path):
    p = run(frm, "F8_E8M0", np.zeros(3, NP[frm]), tmp_path, check=False)
    assert p.returncode == 1
    assert f"no conversion from {frm} to F8_E8M0" in p.stderr
