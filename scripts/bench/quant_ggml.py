#!/usr/bin/env python3
"""One-thread quantize speed of our kernels next to ggml's ggml_quantize_chunk (the
function llama-quantize calls; without an importance matrix it runs
quantize_row_<type>_ref, single-threaded), on the same floats.

    build/llama-venv/bin/python scripts/bench/quant_ggml.py [MIB [REPS]]

Needs build/llama-venv (scripts/bootstrap-llama.sh) for ggml's library, and
$LC_TEST_BIN/lc-quant-bench (default build/test-bin). Ours is timed twice: the
reference (LC_QUANT=ref) and the variant lc_qkernels_best() picks. Speeds are MB/s of
input floats (10^6 bytes per second), best of REPS; the machine's noise applies."""
import ctypes
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import llama_cpp
import numpy as np

ROOT = Path(__file__).resolve().parents[2]
TEST_BIN = Path(os.environ.get("LC_TEST_BIN", ROOT / "build" / "test-bin"))
GGML_ID = {"Q4_0": 2, "Q4_1": 3, "Q5_0": 6, "Q5_1": 7, "Q8_0": 8, "Q2_K": 10, "Q3_K": 11,
           "Q4_K": 12, "Q5_K": 13, "Q6_K": 14}


def ggml_lib():
    lib = ctypes.CDLL(str(Path(llama_cpp.__file__).parent / "lib" / "libggml-base.so"))
    lib.ggml_quantize_chunk.restype = ctypes.c_size_t
    lib.ggml_quantize_chunk.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p,
                                        ctypes.c_int64, ctypes.c_int64, ctypes.c_int64,
                                        ctypes.c_void_p]
    lib.ggml_row_size.restype = ctypes.c_size_t
    lib.ggml_row_size.argtypes = [ctypes.c_int, ctypes.c_int64]
    return lib


def ours(path, mib, reps, env):
    out = subprocess.run([str(TEST_BIN / "lc-quant-bench"), str(mib), str(reps), str(path)],
                         env={**os.environ, **env}, check=True, capture_output=True,
                         text=True).stdout
    speeds, variant = {}, out.splitlines()[0].split()[1].rstrip(",")
    for line in out.splitlines()[1:]:
        f = line.split()
        speeds[f[0]] = float(f[2])
    return variant, speeds


def main():
    mib = int(sys.argv[1]) if len(sys.argv) > 1 else 16
    reps = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    n = mib * 1024 * 1024 // 4 // 256 * 256
    x = (np.random.default_rng(12345).standard_normal(n) * 0.02).astype(np.float32)
    lib = ggml_lib()
    rows, per_row = n // 4096, 4096
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "x.f32"
        x.tofile(path)
        _, ref = ours(path, mib, reps, {"LC_QUANT": "ref"})
        best_name, best = ours(path, mib, reps, {})
    print(f"quantize, one thread, {mib} MiB of f32 (normal, sd 0.02), MB/s, best of {reps}")
    print(f"{'type':6} {'ggml':>9} {'ours ref':>9} {'ref/ggml':>8} "
          f"{'ours ' + best_name:>10} {'/ggml':>7}")
    for t, tid in GGML_ID.items():
        out = np.empty(lib.ggml_row_size(tid, per_row) * rows, np.uint8)
        dt = 1e30
        for _ in range(reps):
            t0 = time.perf_counter()
            lib.ggml_quantize_chunk(tid, x.ctypes.data, out.ctypes.data, 0, rows, per_row, None)
            dt = min(dt, time.perf_counter() - t0)
        g = n * 4 / 1e6 / dt
        r, b = ref.get(t), best.get(t)
        print(f"{t:6} {g:9.1f} {r:9.1f} {r / g:8.2f} {b:10.1f} {b / g:7.2f}")


if __name__ == "__main__":
    main()
