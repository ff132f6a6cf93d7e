"""Typed metadata: GGUF's value model, to and from Python.

Metadata crosses between the library and Python as GGUF's own bytes (after its counts:
key, u32 type, value; jobs/ffi.h). Reading gives natural Python values (int, float,
bool, str, and for arrays a list of str, a list of arrays, or a numpy array of the
items' exact type); `Model.metadata_types` keeps each key's GGUF type. Writing infers
types as gguf-py's GGUFWriter does (int -> i32, float -> f32, bool, str, list -> array
of the first item's type), numpy scalars and arrays keep their own type, and `Typed`
says one exactly.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

# GGUF value type ids (libconvert/value.h, equal to GGUF's).
U8, I8, U16, I16, U32, I32, F32, BOOL, STRING, ARRAY, U64, I64, F64 = range(13)
NAMES = ["u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "string", "array", "u64",
         "i64", "f64"]
_FMT = {U8: "B", I8: "b", U16: "H", I16: "h", U32: "I", I32: "i", F32: "f", BOOL: "?",
        U64: "Q", I64: "q", F64: "d"}
_NP = {U8: np.uint8, I8: np.int8, U16: np.uint16, I16: np.int16, U32: np.uint32,
       I32: np.int32, F32: np.float32, BOOL: np.bool_, U64: np.uint64, I64: np.int64,
       F64: np.float64}
_FROM_NP = {np.dtype(v).newbyteorder("<"): k for k, v in _NP.items()}
_ALIASES = {n: i for i, n in enumerate(NAMES)}
_ALIASES.update({"uint8": U8, "int8": I8, "uint16": U16, "int16": I16, "uint32": U32,
                 "int32": I32, "float32": F32, "uint64": U64, "int64": I64,
                 "float64": F64, "str": STRING})


@dataclass(frozen=True)
class Typed:
    """A metadata value with its GGUF type said exactly: Typed(5, "u64"),
    Typed([1, 2], "array", "u16"). Types: u8 i8 u16 i16 u32 i32 u64 i64 f32 f64 bool
    string array (or gguf-py's GGUFValueType)."""
    value: Any
    type: Any
    sub_type: Any = None


def type_id(t) -> int:
    if isinstance(t, str):
        if t.lower() not in _ALIASES:
            raise ValueError(f"unknown GGUF value type {t!r}")
        return _ALIASES[t.lower()]
    return int(t)  # an int or gguf.GGUFValueType


def type_name(t: int, sub: Optional[str] = None) -> str:
    return f"array[{sub}]" if t == ARRAY else NAMES[t]


# ---- decoding ----

class _Reader:
    def __init__(self, buf: bytes):
        self.b = memoryview(buf)
        self.pos = 0

    def take(self, fmt: str):
        v = struct.unpack_from("<" + fmt, self.b, self.pos)[0]
        self.pos += struct.calcsize(fmt)
        return v

    def string(self):
        n = self.take("Q")
        s = bytes(self.b[self.pos:self.pos + n])
        self.pos += n
        try:
            return s.decode("utf-8")
        except UnicodeDecodeError:
            return s   # GGUF strings should be UTF-8; the bytes when one is not

    def value(self, t: int) -> Tuple[Any, str]:
        if t == STRING:
            return self.string(), "string"
        if t != ARRAY:
            return self.take(_FMT[t]), NAMES[t]
        elem, count = self.take("I"), self.take("Q")
        if elem == STRING:
            return [self.string() for _ in range(count)], "array[string]"
        if elem == ARRAY:
            items, sub = [], "array[?]"
            for _ in range(count):
                v, sub = self.value(ARRAY)
                items.append(v)
            return items, f"array[{sub}]"
        dt = np.dtype(_NP[elem]).newbyteorder("<")
        a = np.frombuffer(self.b, dt, count, self.pos).copy()
        self.pos += count * dt.itemsize
        return a, f"array[{NAMES[elem]}]"


def decode(buf: bytes, n_kv: int) -> Tuple[Dict[str, Any], Dict[str, str]]:
    r = _Reader(buf)
    values: Dict[str, Any] = {}
    types: Dict[str, str] = {}
    for _ in range(n_kv):
        key = r.string()
        if isinstance(key, bytes):
            key = key.decode("utf-8", "backslashreplace")
        v, t = r.value(r.take("I"))
        values[key] = v
        types[key] = t
    return values, types


# ---- encoding ----

def infer(v: Any) -> int:
    """gguf-py's GGUFValueType.get_type, and numpy's own types."""
    if isinstance(v, Typed):
        return type_id(v.type)
    if isinstance(v, (str, bytes, bytearray)):
        return STRING
    if isinstance(v, (list, tuple, np.ndarray)):
        return ARRAY
    if isinstance(v, np.generic):
        t = _FROM_NP.get(np.dtype(v.dtype).newbyteorder("<"))
        if t is None:
            raise TypeError(f"no GGUF type for numpy {v.dtype}")
        return t
    if isinstance(v, float):
        return F32
    if isinstance(v, bool):
        return BOOL
    if isinstance(v, int):
        return I32
    raise TypeError(f"no GGUF type for {type(v).__name__}")


def _put(out: List[bytes], v: Any, t: int, sub: Optional[int] = None) -> None:
    if isinstance(v, Typed):
        v, sub = v.value, (type_id(v.sub_type) if v.sub_type is not None else None)
    if t == STRING:
        b = v.encode("utf-8") if isinstance(v, str) else bytes(v)
        out.append(struct.pack("<Q", len(b)))
        out.append(b)
    elif t == ARRAY:
        if isinstance(v, np.ndarray) and sub is None:
            sub = _FROM_NP.get(v.dtype.newbyteorder("<"))
            if sub is None:
                raise TypeError(f"no GGUF type for numpy {v.dtype}")
        if sub is None:
            if isinstance(v, (bytes, bytearray)):
                sub = U8
            elif len(v) == 0:
                raise ValueError("an empty array needs its item type (Typed([], 'array', T))")
            else:
                sub = infer(v[0])
                if any(infer(i) != sub for i in v[1:]):
                    raise ValueError("all items of a GGUF array must have one type")
        out.append(struct.pack("<IQ", sub, len(v)))
        if sub in _NP:
            out.append(np.asarray(v, dtype=np.dtype(_NP[sub]).newbyteorder("<")).tobytes())
        else:
            for item in v:
                _put(out, item, sub)
    else:
        fmt = _FMT.get(t)
        if fmt is None:
            raise ValueError(f"unknown GGUF value type {t}")
        out.append(struct.pack("<" + fmt, v.item() if isinstance(v, np.generic) else v))


def encode(meta: Dict[str, Any]) -> bytes:
    out: List[bytes] = []
    for key, v in meta.items():
        t = infer(v)
        k = key.encode("utf-8")
        out.append(struct.pack("<Q", len(k)))
        out.append(k)
        out.append(struct.pack("<I", t))
        _put(out, v, t)
    return b"".join(out)
