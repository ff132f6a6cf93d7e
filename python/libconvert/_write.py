"""save_gguf / save_safetensors: numpy arrays to files, through the library's writers."""
from __future__ import annotations

import ctypes as C
from typing import Any, Mapping, Optional

import numpy as np

from . import _dtypes, _meta
from ._lib import Progress, ProgressFn, check, fspath, job_lock, lc_error, lib


class _Building:
    """A C model under construction; the arrays it borrows are kept alive with it."""

    def __init__(self, ptr: int):
        self.ptr = ptr
        self.keep = []

    def __enter__(self):
        return self

    def __exit__(self, *a):
        lib.lc_model_free(self.ptr)
        self.ptr = 0
        self.keep = []

    def add(self, name: str, arr: np.ndarray, dtype: str, shape) -> None:
        arr = np.ascontiguousarray(arr)
        if arr.dtype.byteorder == ">":
            arr = arr.astype(arr.dtype.newbyteorder("<"))
        self.keep.append(arr)
        shp = (C.c_uint64 * 8)(*shape)
        err = lc_error()
        check(lib.lc_ffi_add_tensor(self.ptr, name.encode("utf-8"),
                                    _dtypes.BY_NAME[dtype].code, len(shape), shp,
                                    arr.ctypes.data if arr.nbytes else None, arr.nbytes,
                                    C.byref(err)), err)


def _plain(name: str, a) -> tuple:
    a = np.asarray(a)
    return a, _dtypes.from_numpy(a.dtype), a.shape


def save_gguf(path, tensors: Mapping[str, Any], metadata: Optional[Mapping[str, Any]] = None,
              *, raw_dtypes: Optional[Mapping[str, Any]] = None, threads: int = 0,
              progress: Optional[ProgressFn] = None) -> None:
    """Writes a GGUF (version 3) at PATH, atomically, byte for byte what gguf-py's
    GGUFWriter writes for the same keys and tensors in the same order:
    `GGUFWriter(path, arch)` starts with general.architecture, so give it first here.

    `metadata` values are typed as GGUFWriter's add_key_value infers them (int -> i32,
    float -> f32, bool, str, list -> array of its first item's type), numpy scalars and
    arrays keep their dtype, and `libconvert.Typed(value, "u64")` says a type. Each key
    is held to GGUF's rules (the library's reader checks them: non-empty, well-formed
    keys; general.alignment a u32 power of two).

    `tensors` maps names to numpy arrays (f32, f16, bf16 with ml_dtypes, f64, i8...i64)
    written as they are; a quantized tensor is its blocks (uint8 of shape
    (*shape[:-1], bytes per row), as quantize_array returns) with its type in
    `raw_dtypes` (name -> "Q4_K"), as GGUFWriter.add_tensor's raw_dtype."""
    raw_dtypes = dict(raw_dtypes or {})
    blob = _meta.encode(dict(metadata or {}))
    err = lc_error()
    ptr = C.c_void_p()
    check(lib.lc_ffi_model_from_meta(blob, len(blob), len(metadata or {}), C.byref(ptr),
                                     C.byref(err)), err)
    with _Building(ptr.value) as m:
        for name, a in tensors.items():
            if name in raw_dtypes:
                d = _dtypes.qtype(raw_dtypes[name])
                b = np.asarray(a)
                if b.dtype != np.uint8 or b.ndim == 0 or b.shape[-1] % d.type_size:
                    raise ValueError(f"{name}: {d.name} blocks must be uint8 rows of whole "
                                     f"{d.type_size}-byte blocks")
                shape = b.shape[:-1] + (b.shape[-1] // d.type_size * d.block_size,)
                m.add(name, b, d.name, shape)
            else:
                a, dt, shape = _plain(name, a)
                m.add(name, a, dt, shape)
        with job_lock, Progress(progress) as p:
            check(lib.lc_ffi_write_gguf(m.ptr, fspath(path), threads, p, C.byref(err)), err)


def save_safetensors(path, tensors: Mapping[str, Any],
                     metadata: Optional[Mapping[str, str]] = None, *, threads: int = 0,
                     progress: Optional[ProgressFn] = None) -> None:
    """Writes a safetensors file at PATH, atomically, byte for byte what safetensors'
    `save_file` (numpy or torch) writes for the same tensors and metadata: tensors laid
    out by dtype then name, the header padded to 8 bytes. `metadata` holds strings
    (__metadata__); the reference orders several keys as a Rust HashMap happens to, so
    files with two or more keys match it only up to that order."""
    err = lc_error()
    with _Building(lib.lc_model_new()) as m:
        if not m.ptr:
            raise MemoryError("out of memory")
        for k, v in (metadata or {}).items():
            if not isinstance(v, str):
                raise TypeError(f"safetensors metadata values are strings; {k!r} is "
                                f"{type(v).__name__}")
            b = v.encode("utf-8")
            check(lib.lc_ffi_model_set_str(m.ptr, k.encode("utf-8"), b, len(b),
                                           C.byref(err)), err)
        for name, a in tensors.items():
            a, dt, shape = _plain(name, a)
            m.add(name, a, dt, shape)
        with job_lock, Progress(progress) as p:
            check(lib.lc_ffi_write_safetensors(m.ptr, fspath(path), False, threads, p,
                                               C.byref(err)), err)

