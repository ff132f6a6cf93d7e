"""quantize_array / dequantize_array: ggml's block types over numpy arrays."""
from __future__ import annotations

import ctypes as C
import os
from concurrent.futures import ThreadPoolExecutor
from typing import Optional, Sequence

import numpy as np

from . import _dtypes
from ._lib import check, lc_error, lib

# Rows are split between threads above this many elements (below it a thread costs
# more than it saves).
_PARALLEL_MIN = 1 << 20
_pool: Optional[ThreadPoolExecutor] = None
_CORES = min(os.cpu_count() or 1, 8)     # asked once: it reads /proc each time


def _threads(threads: Optional[int]) -> int:
    if threads is not None:
        if threads < 1:
            raise ValueError("threads must be at least 1")
        return threads
    return _CORES


def _address(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]    # cheaper than a.ctypes.data


def _run_rows(fn, code: int, src: np.ndarray, dst: np.ndarray, nrows: int, ncols: int,
              src_row: int, dst_row: int, threads: int) -> None:
    """fn(code, src + r * src_row, dst + r * dst_row, rows, ncols) over row ranges, in
    parallel: ctypes releases the GIL, so the threads run the C kernels at once."""
    s0, d0 = _address(src), _address(dst)

    def one(r0: int, r1: int) -> None:
        err = lc_error()
        check(fn(code, s0 + r0 * src_row, d0 + r0 * dst_row, r1 - r0, ncols, C.byref(err)),
              err)

    n = min(threads, max(1, nrows * ncols // _PARALLEL_MIN), nrows) if nrows else 1
    if n <= 1:
        one(0, nrows)
        return
    global _pool
    if _pool is None or _pool._max_workers < n:
        _pool = ThreadPoolExecutor(max_workers=n, thread_name_prefix="libconvert")
    step = (nrows + n - 1) // n
    futures = [_pool.submit(one, r, min(r + step, nrows)) for r in range(0, nrows, step)]
    for f in futures:
        f.result()


def quantize_array(x, qtype, imatrix=None, *, threads: Optional[int] = None) -> np.ndarray:
    """Quantizes X (any float array, rows along its last axis) to the block type QTYPE
    ("Q4_K", a ggml type id, or gguf-py's GGMLQuantizationType): uint8 of shape
    (*x.shape[:-1], bytes per row), as gguf-py's `gguf.quants.quantize` returns it and
    byte for byte what ggml's `ggml_quantize_chunk` writes without an importance matrix
    (quantize_row_<type>_ref: what llama-quantize writes). Types: Q8_0 Q4_0 Q4_1 Q5_0
    Q5_1 Q2_K Q3_K Q4_K Q5_K Q6_K. `imatrix` (one weight per column) needs the weighted
    quantizers, which this build does not have: NotImplementedError. Rows are split
    between `threads` threads (default: one per core, at most 8) for large arrays; the
    bytes are the same for any count."""
    d = _dtypes.qtype(qtype)
    if imatrix is not None:
        raise NotImplementedError(
            f"quantize_array: importance matrices are not supported by this build "
            f"(no weighted quantizer for {d.name})")
    if not lib.lc_quant_supported(d.code):
        raise ValueError(f"quantize_array: no quantizer for {d.name} (types: "
                         f"{', '.join(quantize_types())})")
    a = np.ascontiguousarray(x, dtype=np.float32)
    if a.ndim == 0:
        raise ValueError("quantize_array: a scalar has no rows")
    ncols = a.shape[-1]
    row = d.row_bytes(ncols)
    out = np.empty(a.shape[:-1] + (row,), np.uint8)
    nrows = a.size // ncols if ncols else 0
    if nrows and ncols:
        _run_rows(lib.lc_quantize_rows, d.code, a, out, nrows, ncols, ncols * 4, row,
                  _threads(threads))
    return out


def dequantize_array(blocks, qtype, shape: Optional[Sequence[int]] = None, *,
                     threads: Optional[int] = None) -> np.ndarray:
    """The inverse for every block type ggml defines (the IQ, TQ and FP4 types too):
    BLOCKS (uint8, rows of whole blocks along the last axis) to float32, bit for bit
    what ggml's dequantizers give. `shape` is the tensor's (its last axis in elements);
    default (*blocks.shape[:-1], elements per row), as gguf.quants.dequantize."""
    d = _dtypes.qtype(qtype)
    if not lib.lc_dequant_supported(d.code):
        raise ValueError(f"dequantize_array: {d.name} is not a block type")
    b = np.ascontiguousarray(blocks)
    if b.dtype != np.uint8:
        b = b.view(np.uint8)
    if b.ndim == 0:
        raise ValueError("dequantize_array: blocks must have at least one axis")
    if b.shape[-1] % d.type_size:
        raise ValueError(f"dequantize_array: rows of {b.shape[-1]} bytes are not whole "
                         f"{d.name} blocks of {d.type_size} bytes")
    if shape is None:
        shape = b.shape[:-1] + (b.shape[-1] // d.type_size * d.block_size,)
    shape = tuple(int(s) for s in shape)
    n = int(np.prod(shape, dtype=np.int64)) if shape else 1
    ncols = shape[-1] if shape else n
    if b.size != d.row_bytes(ncols) * (n // ncols if ncols else 0):
        raise ValueError(f"dequantize_array: {b.size} bytes are not a {d.name} tensor of "
                         f"shape {shape}")
    out = np.empty(shape, np.float32)
    nrows = n // ncols if ncols else 0
    if nrows and ncols:
        _run_rows(lib.lc_dequantize_rows, d.code, b, out, nrows, ncols, d.row_bytes(ncols),
                  ncols * 4, _threads(threads))
    return out


def quantize_types() -> list:
    """The block types quantize_array writes."""
    return [d.name for d in _dtypes.BY_CODE.values() if lib.lc_quant_supported(d.code)]


def dequantize_types() -> list:
    """The block types dequantize_array reads."""
    return [d.name for d in _dtypes.BY_CODE.values() if lib.lc_dequant_supported(d.code)]
