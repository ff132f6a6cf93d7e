"""quantize_array / dequantize_array: ggml's block types over numpy arrays."""
from __future__ import annotations

import ctypes as C
from typing import Optional, Sequence

import numpy as np

from . import _dtypes
from ._lib import check, lc_error, lib


def _threads(threads: Optional[int]) -> int:
    """The library's -t: 0 is one thread per core (at most 8)."""
    if threads is None:
        return 0
    if threads < 1:
        raise ValueError("threads must be at least 1")
    return threads


def _address(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]    # cheaper than a.ctypes.data


_IMATRIX_USE = {1: "ignores", 2: "uses", 3: "requires"}
# Asked once (a foreign call is a microsecond, and quantize_array may be called per row).
_WRITABLE = frozenset(c for c in _dtypes.BY_CODE if lib.lc_quant_writable(c))


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
    most 8; the library's parallel-for, as the tools' -t) in ranges of about a million
    values; the bytes are the same for any count."""
    d = _dtypes.qtype(qtype)
    if d.code not in _WRITABLE:
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
        err = lc_error()
        check(lib.lc_ffi_quantize_rows(d.code, _address(a), _address(out), nrows, ncols,
                                       _address(im) if im is not None else None,
                                       _threads(threads), C.byref(err)), err)
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
        err = lc_error()
        check(lib.lc_ffi_dequantize_rows(d.code, _address(b), _address(out), nrows, ncols,
                                         _threads(threads), C.byref(err)), err)
    return out


def quantize_types() -> list:
    """The block types quantize_array writes."""
    return [d.name for d in _dtypes.BY_CODE.values() if d.code in _WRITABLE]


def dequantize_types() -> list:
    """The block types dequantize_array reads."""
    return [d.name for d in _dtypes.BY_CODE.values() if lib.lc_dequant_supported(d.code)]
