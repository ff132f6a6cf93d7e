"""The library's dtypes (libconvert/dtype.h) and their numpy counterparts.

Names are the library's: safetensors' spellings for plain types ("F32", "BF16",
"F8_E4M3") and ggml's for block types ("Q4_0", "Q6_K", "IQ2_XXS"). bfloat16 and the
float8 types have numpy dtypes only through ml_dtypes; without it such tensors are
widened to float32 on read.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Optional, Union

import numpy as np

from ._lib import lib

try:  # optional: bfloat16 and float8 as numpy dtypes
    import ml_dtypes as _mld
except ImportError:  # pragma: no cover - exercised where ml_dtypes is absent
    _mld = None


@dataclass(frozen=True)
class DType:
    """One dtype of the library: `name`, its enum value `code`, ggml's type id (-1 when
    GGUF lacks it), elements per block (1 for plain types), bytes per block."""
    name: str
    code: int
    gguf_id: int
    block_size: int
    type_size: int
    is_float: bool

    @property
    def quantized(self) -> bool:
        return self.block_size > 1

    def row_bytes(self, n: int) -> int:
        if n % self.block_size:
            raise ValueError(f"{self.name} rows hold a multiple of {self.block_size} "
                             f"elements, not {n}")
        return n // self.block_size * self.type_size


BY_NAME: Dict[str, DType] = {}
BY_CODE: Dict[int, DType] = {}
BY_GGUF: Dict[int, DType] = {}


def _load() -> None:
    code = 1
    while True:
        info = lib.lc_dtype_get(code).contents
        name = info.name.decode()
        if name == "INVALID":
            break
        d = DType(name, code, info.gguf_id, info.block_size, info.type_size, info.is_float)
        BY_NAME[name] = BY_CODE[code] = d
        if d.gguf_id >= 0:
            BY_GGUF[d.gguf_id] = d
        code += 1


_load()

# Plain dtypes whose bytes numpy reads as they are (little-endian).
_NUMPY = {"BOOL": np.bool_, "U8": np.uint8, "I8": np.int8, "I16": np.int16,
          "U16": np.uint16, "F16": np.float16, "I32": np.int32, "U32": np.uint32,
          "F32": np.float32, "F64": np.float64, "I64": np.int64, "U64": np.uint64}
if _mld is not None:
    _NUMPY.update({"BF16": _mld.bfloat16, "F8_E4M3": _mld.float8_e4m3fn,
                   "F8_E5M2": _mld.float8_e5m2, "F8_E4M3FNUZ": _mld.float8_e4m3fnuz,
                   "F8_E5M2FNUZ": _mld.float8_e5m2fnuz})
    if hasattr(_mld, "float8_e8m0fnu"):
        _NUMPY["F8_E8M0"] = _mld.float8_e8m0fnu

NUMPY: Dict[str, np.dtype] = {k: np.dtype(v).newbyteorder("<") for k, v in _NUMPY.items()}
FROM_NUMPY: Dict[np.dtype, str] = {np.dtype(v): k for k, v in _NUMPY.items()}


def numpy_dtype(name: str) -> Optional[np.dtype]:
    """numpy's dtype for the library's NAME, or None (block types; bf16/f8 without
    ml_dtypes)."""
    return NUMPY.get(name)


def from_numpy(dt: np.dtype) -> str:
    """The library's name for a numpy dtype; TypeError when there is none."""
    name = FROM_NUMPY.get(np.dtype(dt).newbyteorder("="))
    if name is None:
        raise TypeError(f"no libconvert dtype for numpy {np.dtype(dt)}")
    return name


QType = Union[str, int, "object"]


def qtype(t) -> DType:
    """A block type given by name ("Q4_K", case-insensitive), by ggml id (an int, or
    gguf-py's GGMLQuantizationType) or as a DType."""
    if isinstance(t, DType):
        return t
    if isinstance(t, str):
        d = BY_NAME.get(t.upper())
    elif isinstance(t, (int, np.integer)):   # gguf.GGMLQuantizationType is an IntEnum
        d = BY_GGUF.get(int(t))
    else:
        d = None
    if d is None:
        raise ValueError(f"unknown type {t!r}")
    return d
