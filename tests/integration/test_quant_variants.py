"""Kernel variants through the test driver: LC_QUANT=<variant> and LC_QUANT=ref must give
the same bytes from tests/tools/lc-quant-raw, for every type, quantizing and dequantizing,
and the variant must give ggml's golden blocks (fixtures/quant/) itself. A variant that
this build or CPU lacks is skipped: lc-quant-bench names the variant actually chosen."""
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
FIX = ROOT / "fixtures" / "quant"
BIN = Path(os.environ.get("LC_TEST_BIN", ROOT / "build" / "test-bin"))
RAW, BENCH = BIN / "lc-quant-raw", BIN / "lc-quant-bench"

ALL = ["Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K"]
BLOCK = {"Q2_K": 256, "Q3_K": 256, "Q4_K": 256, "Q5_K": 256, "Q6_K": 256}
# quant/types.h LC_DEQUANT_TYPES: (values, bytes) per block.
DEQ_ONLY = {"Q8_1": (32, 36), "Q8_K": (256, 292), "IQ2_XXS": (256, 66), "IQ2_XS": (256, 74),
            "IQ3_XXS": (256, 98), "IQ1_S": (256, 50), "IQ4_NL": (32, 18), "IQ3_S": (256, 110),
            "IQ2_S": (256, 82), "IQ4_XS": (256, 136), "IQ1_M": (256, 56), "TQ1_0": (256, 54),
            "TQ2_0": (256, 66), "MXFP4": (32, 17), "NVFP4": (64, 36), "Q1_0": (128, 18),
            "Q2_0": (64, 18)}
VARIANTS = ["avx2", "avx512", "neon", "cuda"]


def env_for(variant):
    return dict(os.environ, LC_QUANT=variant)


def chosen(variant) -> str:
    out = subprocess.run([str(BENCH), "1", "1"], env=env_for(variant), check=True,
                         capture_output=True, text=True).stdout
    return out.split()[1].rstrip(",")     # "variant NAME, 1 MiB of f32, ..."


@pytest.fixture(params=VARIANTS)
def variant(request):
    if chosen(request.param) != request.param:
        pytest.skip(f"{request.param} is not built or not supported by this CPU")
    assert chosen("ref") == "ref"
    return request.param


def run(variant, op, qtype, data: bytes, tmp_path) -> bytes:
    src, dst = tmp_path / f"in-{variant}.bin", tmp_path / f"out-{variant}.bin"
    src.write_bytes(data)
    subprocess.run([str(RAW), op, qtype, str(src), str(dst)], env=env_for(variant), check=True)
    return dst.read_bytes()


def hard_inputs():
    """The fixture inputs plus random data with ties, huge, subnormal and non-finite lanes."""
    rng = np.random.default_rng(20261122)
    x = rng.standard_normal(32 * 1024).astype(np.float32)
    x[:32] = np.arange(-16, 16, dtype=np.float32) + 0.5      # exact ties, d = 1 block
    x[15] = 127.0
    x[64:96] *= np.float32(1e36)
    x[96:128] = rng.integers(-2**20, 2**20, 32).astype(np.float32) * np.float32(1e-45)
    for lane in range(32):                                    # one NaN/inf per block
        x[128 + 32 * lane + lane] = np.nan
        x[1280 + 32 * lane + lane] = np.inf if lane % 2 else -np.inf
        x[2560 + 32 * lane + lane] = np.nan
        x[2560 + 32 * lane + (lane + 7) % 32] = 1e3
    yield "random", x.tobytes()
    for name in ("hard", "special"):
        yield name, (FIX / f"{name}.f32").read_bytes()


@pytest.mark.parametrize("qtype", ALL)
def test_quantize_same_bytes_as_ref(variant, qtype, tmp_path):
    for name, data in hard_inputs():
        want = run("ref", "quantize", qtype, data, tmp_path)
        got = run(variant, "quantize", qtype, data, tmp_path)
        assert len(want) > 0 and got == want, f"{variant} {qtype} on {name}"
        if name != "random":
            assert got == (FIX / f"{name}.{qtype}.bin").read_bytes(), f"{name} golden"


@pytest.mark.parametrize("qtype", ALL)
def test_quantize_odd_length_rejected_alike(variant, qtype, tmp_path):
    """Not a whole number of blocks: both refuse (lc_quantize_rows), neither writes."""
    src, dst = tmp_path / "x.f32", tmp_path / "y.bin"
    src.write_bytes(np.ones(BLOCK.get(qtype, 32) + 1, np.float32).tobytes())
    for v in ("ref", variant):
        r = subprocess.run([str(RAW), "quantize", qtype, str(src), str(dst)],
                           env=env_for(v), capture_output=True, text=True)
        assert r.returncode == 1 and "not a multiple" in r.stderr, (v, r.stderr)
        assert not dst.exists()


@pytest.mark.parametrize("qtype", ALL)
def test_dequantize_same_bytes_as_ref(variant, qtype, tmp_path):
    blocks = [(FIX / f"{n}.{qtype}.bin").read_bytes() for n in ("hard", "special")]
    size = len((FIX / f"hard.{qtype}.bin").read_bytes()) // (len((FIX / "hard.f32").read_bytes())
                                                             // 4 // BLOCK.get(qtype, 32))
    rng = np.random.default_rng(7)
    blocks.append(rng.integers(0, 256, size * 300, dtype=np.uint8).tobytes())
    for data in blocks:
        want = run("ref", "dequantize", qtype, data, tmp_path)
        got = run(variant, "dequantize", qtype, data, tmp_path)
        assert len(want) > 0 and same_floats(got, want)


def same_floats(a: bytes, b: bytes) -> bool:
    """Every bit equal, except that two NaNs are equal: where d*q + m meets two NaN
    scales, which comes out is the compiler's operand order (see first_float_diff in
    tests/unit/test_quant_variants.c)."""
    x, y = np.frombuffer(a, "<u4"), np.frombuffer(b, "<u4")
    if x.shape != y.shape:
        return False
    both_nan = np.isnan(x.view("<f4")) & np.isnan(y.view("<f4"))
    return bool(np.all((x == y) | both_nan))


@pytest.mark.parametrize("qtype", sorted(DEQ_ONLY))
def test_dequantize_only_same_bytes_as_ref(variant, qtype, tmp_path):
    """The dequantize-only types: ggml's golden blocks (where it has a dequantizer) and
    random bytes, every scale pattern included."""
    _, size = DEQ_ONLY[qtype]
    inputs = [np.random.default_rng(9).integers(0, 256, size * 512, dtype=np.uint8).tobytes()]
    if (FIX / f"deq.{qtype}.bin").exists():
        inputs.append((FIX / f"deq.{qtype}.bin").read_bytes())
    for data in inputs:
        want = run("ref", "dequantize", qtype, data, tmp_path)
        got = run(variant, "dequantize", qtype, data, tmp_path)
        assert len(want) > 0 and same_floats(got, want)


def test_cpu_disable_hides_a_variant():
    """LC_CPU_DISABLE (libconvert/cpu.h) hides the features it names from every run-time
    choice: without one a variant's kernels need, neither the default nor LC_QUANT=<it>
    gets them, and the next variant down is chosen. Skipped where neither avx512 nor
    avx2 is chosen to begin with."""
    env = {k: v for k, v in os.environ.items() if k not in ("LC_QUANT", "LC_CPU_DISABLE")}

    def pick(**extra):
        out = subprocess.run([str(BENCH), "1", "1"], env=dict(env, **extra), check=True,
                             capture_output=True, text=True).stdout
        return out.split()[1].rstrip(",")

    best = pick()
    if best not in ("avx512", "avx2"):
        pytest.skip("neither avx512 nor avx2 is the default variant here")
    if best == "avx512":
        for feature in ("avx512f", "avx512bw", "avx512vl", "AVX512F"):
            assert pick(LC_CPU_DISABLE=feature) == "avx2", feature
            assert pick(LC_QUANT="avx512", LC_CPU_DISABLE=feature) == "avx2", feature
        assert pick(LC_QUANT="avx2") == "avx2"
    assert pick(LC_QUANT="avx2", LC_CPU_DISABLE="avx512f") == "avx2"
    for feature in ("avx2", "fma", "f16c", "avx", "AVX2"):
        assert pick(LC_CPU_DISABLE=feature) == "ref", feature
        assert pick(LC_QUANT="avx2", LC_CPU_DISABLE=feature) == "ref", feature
        assert pick(LC_QUANT="avx512", LC_CPU_DISABLE=feature) == "ref", feature
