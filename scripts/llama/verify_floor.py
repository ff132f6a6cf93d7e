"""The tensor-level floor of model-verify for the types quant/ reads but cannot write
(IQ*, TQ*, MXFP4, NVFP4, Q1_0, Q2_0, Q8_1, Q8_K): what llama.cpp's own quantizer gives.

For each type, ggml_quantize_chunk (the pinned llama.cpp's libggml, as llama-quantize
calls it: no importance matrix, or a uniform one where the type requires one) over 2^18
values of model-like distributions (three seeds each), dequantized with the type's to_float; prints the
relative RMSE sqrt(sum (x - q)^2 / sum x^2) and the cosine of each, and the worst per
type. jobs/model_verify_expect.c's floors are these worsts with a margin.

Run: build/llama-venv/bin/python scripts/llama/verify_floor.py"""
import ctypes
from pathlib import Path

import llama_cpp
import numpy as np

LIB = Path(llama_cpp.__file__).parent / "lib"
ggml = ctypes.CDLL(str(LIB / "libggml-base.so"))


class Traits(ctypes.Structure):
    _fields_ = [("type_name", ctypes.c_char_p), ("blck_size", ctypes.c_int64),
                ("blck_size_interleave", ctypes.c_int64), ("type_size", ctypes.c_size_t),
                ("is_quantized", ctypes.c_bool), ("to_float", ctypes.c_void_p),
                ("from_float_ref", ctypes.c_void_p)]


ggml.ggml_get_type_traits.restype = ctypes.POINTER(Traits)
ggml.ggml_quantize_chunk.restype = ctypes.c_size_t
ggml.ggml_quantize_chunk.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64,
                                     ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p]
ggml.ggml_quantize_requires_imatrix.restype = ctypes.c_bool
TO_FLOAT = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)

TYPES = {"Q8_0": 8, "Q8_1": 9, "Q8_K": 15, "IQ2_XXS": 16, "IQ2_XS": 17, "IQ3_XXS": 18, "IQ1_S": 19,
         "IQ4_NL": 20, "IQ3_S": 21, "IQ2_S": 22, "IQ4_XS": 23, "IQ1_M": 29, "TQ1_0": 34,
         "TQ2_0": 35, "MXFP4": 39, "NVFP4": 40, "Q1_0": 41, "Q2_0": 42}
ROW = 4096


def dists(rng, n):
    yield "normal", rng.standard_normal(n)
    yield "laplace", rng.laplace(size=n)
    yield "t2", rng.standard_t(2, n)
    x = rng.standard_normal(n)
    x[rng.random(n) < 0.01] *= 20
    yield "outliers", x
    yield "uniform", rng.uniform(-1, 1, n)


def main():
    n = 1 << 18
    for name, t in TYPES.items():
        tr = ggml.ggml_get_type_traits(t).contents
        if not tr.to_float:
            print(f"{name:8s} no to_float")
            continue
        imat = np.ones(ROW, np.float32) if ggml.ggml_quantize_requires_imatrix(t) else None
        worst_rel, worst_cos = 0.0, 1.0
        for dname, x in (d for seed in (0, 1, 2) for d in dists(np.random.default_rng(seed), n)):
            x = np.ascontiguousarray(0.02 * x, np.float32)
            rows = n // ROW
            q = np.zeros(rows * ROW // tr.blck_size * tr.type_size, np.uint8)
            ggml.ggml_quantize_chunk(t, x.ctypes.data, q.ctypes.data, 0, rows, ROW,
                                     imat.ctypes.data if imat is not None else None)
            y = np.zeros(n, np.float32)
            TO_FLOAT(tr.to_float)(q.ctypes.data, y.ctypes.data, n)
            x64, y64 = x.astype(np.float64), y.astype(np.float64)
            rel = np.sqrt(((x64 - y64) ** 2).sum() / (x64 ** 2).sum())
            cos = (x64 * y64).sum() / np.sqrt((x64 ** 2).sum() * (y64 ** 2).sum())
            worst_rel, worst_cos = max(worst_rel, rel), min(worst_cos, cos)
            print(f"{name:8s} {dname:9s} rel RMSE {rel:.4f}  cosine {cos:.5f}")
        print(f"{name:8s} worst     rel RMSE {worst_rel:.4f}  cosine {worst_cos:.5f}"
              f"{'  (uniform imatrix)' if imat is not None else ''}")


if __name__ == "__main__":
    main()
