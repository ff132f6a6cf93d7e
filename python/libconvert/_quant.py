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


def _split(nrows: int, ncols: int, threads: int) -> list:
    """Row ranges for the threads: one range below _PARALLEL_MIN elements."""
    n = min(threads, max(1, nrows * ncols // _PARALLEL_MIN), nrows) if nrows else 1
    step = (nrows + n - 1) // n if nrows else 1
    return [(r, min(r + step, nrows)) for r in range(0, nrows, step)] or [(0, 0)]


def _run(one, ranges) -> None:
    """one(r0, r1) over the ranges, in parallel: ctypes releases the GIL, so the threads
    run the C kernels at once."""
    if len(ranges) == 1:
        one(*ranges[0])
        return
    global _pool
    if _pool is None or _pool._max_workers < len(ranges):
        _pool = ThreadPoolExecutor(max_workers=len(ranges), thread_name_prefix="libconvert")
    for f in [_pool.submit(one, r0, r1) for r0, r1 in ranges]:
        f.result()


def _run_rows(fn, code: int, src: np.ndarray, dst: np.ndarray, nrows: int, ncols: int,
              src_row: int, dst_row: int, threads: int) -> None:
    """fn(code, src + r * src_row, dst + r * dst_row, rows, ncols, err) over row ranges."""
    s0, d0 = _address(src), _address(dst)

    def one(r0: int, r1: int) -> None:
        err = lc_error()
        check(fn(code, s0 + r0 * src_row, d0 + r0 * dst_row, r1 - r0, ncols, C.byref(err)),
              err)
    _run(one, _split(nrows, ncols, threads))


_IMATRIX_USE = {1: "ignores", 2: "uses", 3: "requires"}


def imatrix_use(qtype) -> str:
    """What QTYPE's quantizer does with an importance matrix: "ignores" (Q8_0, TQ1_0,
    TQ2_0), "uses" (the legacy and K types, IQ4_NL, IQ4_XS, IQ3_S, ...) or "requires"
    (IQ2_XXS, IQ2_XS, IQ1_S), as ggml's quantizers; ValueError for a type not written."""
    d = _dtypes.qtype(qtype)
    use = _IMATRIX_USE.get(lib.lc_quant_imatrix_use(d.code))
    if use is None:
        raise ValueError(f"{d.name} is not a type quantize_array writes")
    return use


def quantize_array(x, qtype, imatrix=None, *, threads: Optional[int] = None) -> np.ndarray:
    """Quantizes X (any float array, rows along its last axis) to the block type QTYPE
    ("Q4_K", a ggml type id, or gguf-py's GGMLQuantizationType): uint8 of shape
    (*x.shape[:-1], bytes per row), as gguf-py's `gguf.quants.quantize` returns it, byte
    for byte what ggml's `ggml_quantize_chunk(type, x, y, 0, rows, row_length, imatrix)`
    writes: without an importance matrix the _ref quantizers llama-quantize writes with,
    with one (`imatrix`: a weight per column, >= 0, as llama-imatrix collects them) the
    weighted searches. Types: quantize_types(); imatrix_use() says which ignore, use or
    require a matrix. Rows are split between `threads` threads (default: one per core, at
    most 8) for large arrays; the bytes are the same for any count."""
    d = _dtypes.qtype(qtype)
    if not lib.lc_quant_writable(d.code):
        raise ValueError(f"quantize_array: no quantizer for {d.name} (types: "
                         f"{', '.join(quantize_types())})")
    a = np.ascontiguousarray(x, dtype=np.float32)
    if a.ndim == 0:
        raise ValueError("quantize_array: a scalar has no rows")
    ncols = a.shape[-1]
    row = d.row_bytes(ncols)
    im = None
    if imatrix is not None:
        im = np.ascontiguousarray(imatrix, dtype=np.float32)
        if im.shape != (ncols,):
            raise ValueError(f"quantize_array: the importance matrix has shape {im.shape}, "
                             f"rows of {ncols} values need ({ncols},)")
    out = np.empty(a.shape[:-1] + (row,), np.uint8)
    nrows = a.size // ncols if ncols else 0
    if nrows and ncols:
        s0, d0 = _address(a), _address(out)
        imp = _address(im) if im is not None else None
        src_row = ncols * 4

        def one(r0: int, r1: int) -> None:
            err = lc_error()
            check(lib.lc_quantize_rows_imatrix(d.code, s0 + r0 * src_row, d0 + r0 * row,
                                               r1 - r0, ncols, imp, C.byref(err)), err)
        _run(one, _split(nrows, ncols, _threads(threads)))
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
    return [d.name for d in _dtypes.BY_CODE.values() if lib.lc_quant_writable(d.code)]


def dequantize_types() -> list:
    """The block types dequantize_array reads."""
    return [d.name for d in _dtypes.BY_CODE.values() if lib.lc_dequant_supported(d.code)]
