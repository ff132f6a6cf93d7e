"""open(): any model file the library reads, as numpy arrays."""
from __future__ import annotations

import builtins
import ctypes as C
import json
import os
from pathlib import Path
from typing import Any, Dict, Iterator, NamedTuple, Optional, Tuple

import numpy as np

from . import _dtypes, _meta
from ._lib import (MAX_DIMS, NO_OFFSET, check, fspath, lc_error, lc_ffi_tensor, lc_pth_opts, lib,
                   opt_bytes)

Shape = Tuple[int, ...]


class TensorInfo(NamedTuple):
    """One tensor as stored: `dtype` is the library's name ("F32", "BF16", "Q4_K"),
    `shape` row-major, outermost first (numpy's order, also for GGUF), `nbytes` its
    bytes in the file."""
    name: str
    dtype: str
    shape: Shape
    nbytes: int


class _Handle:
    """Owns the C model. Every array handed out refers to it (through its base), so the
    mapped files stay mapped while any array lives, even after Model.close()."""
    __slots__ = ("ptr", "__weakref__")

    def __init__(self, ptr: int):
        self.ptr = ptr

    def __del__(self):
        if self.ptr:
            lib.lc_model_free(self.ptr)
            self.ptr = 0


class _Span:
    """A read-only byte range of a mapped file, for numpy (its array interface); holds
    the model's handle."""
    __slots__ = ("__array_interface__", "handle")

    def __init__(self, handle: _Handle, ptr: int, size: int):
        self.handle = handle
        self.__array_interface__ = {"data": (ptr, True), "shape": (size,), "typestr": "|u1",
                                    "version": 3}


def _span_array(handle: _Handle, ptr: int, size: int) -> np.ndarray:
    if size == 0:
        a = np.empty(0, np.uint8)
        a.flags.writeable = False
        return a
    return np.asarray(_Span(handle, ptr, size))


class Model:
    """A model file opened by `libconvert.open`: the header is read, tensor bytes are
    read when asked for. Use it as a context manager or call close()."""

    def __init__(self, path, *, key: Optional[str] = None, format: Optional[str] = None):
        self._h: Optional[_Handle] = None
        self._names: list = []
        self._rows: Dict[str, int] = {}
        self._tensors: Optional[Dict[str, TensorInfo]] = None
        self.path = os.fspath(path)
        p = Path(self.path)
        target = self._weights_path(p)
        self.config: Optional[Dict[str, Any]] = None
        if p.is_dir() and (p / "config.json").is_file():
            with builtins.open(p / "config.json", encoding="utf-8") as f:
                self.config = json.load(f)
        err = lc_error()
        out = C.c_void_p()
        fmt = C.c_char_p()
        hdr = C.c_uint64()
        po = lc_pth_opts(key=opt_bytes(key))
        check(lib.lc_ffi_open(fspath(target), opt_bytes(format), C.byref(po), C.byref(out),
                              C.byref(fmt), C.byref(hdr), C.byref(err)), err)
        self._h = _Handle(out.value)
        self.format: str = fmt.value.decode()
        self.header_size: int = hdr.value
        self._meta: Optional[Tuple[Dict[str, Any], Dict[str, str]]] = None
        self._load_table()

    @staticmethod
    def _weights_path(p: Path) -> Path:
        """A Hugging Face folder without an index holds one weights file: that file."""
        if not p.is_dir():
            return p
        for index in ("model.safetensors.index.json", "pytorch_model.bin.index.json"):
            if (p / index).is_file():
                return p
        for single in ("model.safetensors", "pytorch_model.bin", "consolidated.00.pth"):
            if (p / single).is_file():
                return p / single
        return p

    def _load_table(self) -> None:
        h = self._handle()
        n = lib.lc_model_tensor_count(h.ptr)
        arr = (lc_ffi_tensor * max(n, 1))()
        got = C.c_size_t()
        lib.lc_ffi_tensors(h.ptr, arr, n, C.byref(got))
        need = C.c_size_t()
        lib.lc_ffi_names(h.ptr, None, 0, C.byref(need))
        buf = C.create_string_buffer(need.value + 1)
        lib.lc_ffi_names(h.ptr, buf, need.value, C.byref(need))
        names = buf.raw[:need.value].decode("utf-8", "surrogateescape").split("\0")[:n]
        fields = ["name", "dtype", "ndim", "shape", "nbytes", "data", "file_offset", "t"]
        raw = np.frombuffer(arr, dtype=np.dtype({
            "names": fields,
            "formats": ["<u8", "<i4", "<u4", ("<u8", (MAX_DIMS,)), "<u8", "<u8", "<u8", "<u8"],
            "offsets": [getattr(lc_ffi_tensor, f).offset for f in fields],
            "itemsize": C.sizeof(lc_ffi_tensor)}), count=n)
        # Tensors viewing one mapped file share one read-only uint8 array of it (data -
        # file_offset is the map's start), so a tensor is a slice of it: a few hundred
        # nanoseconds, where an array made per tensor costs microseconds.
        data = raw["data"]
        foff = raw["file_offset"]
        mapped = (data != 0) & (foff != NO_OFFSET)
        base = np.where(mapped, data - np.where(mapped, foff, 0), 0)
        ends = foff + raw["nbytes"]
        spans: Dict[int, np.ndarray] = {0: None}
        for b in np.unique(base[mapped]).tolist():
            spans[b] = _span_array(h, b, int(ends[mapped & (base == b)].max()))
        ndims = raw["ndim"].tolist()
        self._names = names
        self._rows = dict(zip(names, range(n)))
        self._dtype = [_dtypes.BY_CODE[c] for c in raw["dtype"].tolist()]
        self._npdt = [_dtypes.numpy_dtype(d.name) for d in self._dtype]
        self._shape = [tuple(s[:k]) for s, k in zip(raw["shape"].tolist(), ndims)]
        self._nbytes = raw["nbytes"].tolist()
        self._span = [spans[b] for b in base.tolist()]
        self._start = np.where(mapped, foff, 0).tolist()
        self._addr = data.tolist()
        self._t = raw["t"].tolist()
        self._tensors: Optional[Dict[str, TensorInfo]] = None

    @property
    def tensors(self) -> Dict[str, TensorInfo]:
        """name -> TensorInfo(name, dtype, shape, nbytes), in the file's order."""
        if self._tensors is None:
            self._tensors = {k: TensorInfo(k, d.name, s, b) for k, d, s, b in
                             zip(self._names, self._dtype, self._shape, self._nbytes)}
        return self._tensors

    def _handle(self) -> _Handle:
        if self._h is None:
            raise ValueError(f"{self.path}: the model is closed")
        return self._h

    # ---- metadata ----

    def _decode_meta(self):
        if self._meta is None:
            h = self._handle()
            err = lc_error()
            buf, ln, nkv = C.c_void_p(), C.c_size_t(), C.c_uint64()
            check(lib.lc_ffi_meta_encode(h.ptr, C.byref(buf), C.byref(ln), C.byref(nkv),
                                         C.byref(err)), err)
            try:
                data = C.string_at(buf.value, ln.value)
            finally:
                lib.lc_ffi_free(buf)
            self._meta = _meta.decode(data, nkv.value)
        return self._meta

    @property
    def metadata(self) -> Dict[str, Any]:
        """Every metadata key in file order: GGUF's keys with their values (int, float,
        bool, str; arrays as a numpy array of their item type, or a list of str or of
        arrays); safetensors' __metadata__ strings; a checkpoint's top-level scalars."""
        return self._decode_meta()[0]

    @property
    def metadata_types(self) -> Dict[str, str]:
        """Each key's GGUF type: "u32", "string", "array[f32]", "array[array[u8]]"."""
        return self._decode_meta()[1]

    # ---- tensors ----

    def __len__(self) -> int:
        return len(self._names)

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __contains__(self, name: object) -> bool:
        return name in self._rows

    def keys(self):
        return self.tensors.keys()

    def __getitem__(self, name: str) -> np.ndarray:
        return self.tensor(name)

    def tensor(self, name: str, *, dequantize: bool = False) -> np.ndarray:
        """The tensor NAME as a numpy array of its shape.

        Bytes stored as numpy reads them (every plain dtype; bf16 and float8 with
        ml_dtypes) come back as a read-only view of the mapped file: no copy, no read
        until touched. Others are read into a new array: a PyTorch tensor stored
        strided, big-endian, negated or compressed; bf16/float8 without ml_dtypes
        (widened to float32). A block-quantized tensor comes back as its raw blocks,
        uint8 of shape (*shape[:-1], bytes per row), as gguf-py's GGUFReader gives it,
        or with dequantize=True as float32 of its shape (ggml's own dequantizers, bit
        for bit)."""
        try:
            i = self._rows[name]
        except KeyError:
            raise KeyError(f"{self.path}: no tensor {name!r}") from None
        span, npdt, shape = self._span[i], self._npdt[i], self._shape[i]
        if span is not None:
            start = self._start[i]
            raw = span[start:start + self._nbytes[i]]
            if npdt is not None:            # the common case: a view of the file
                return raw.view(npdt).reshape(shape)
        else:
            raw = self._bytes(self._handle(), self._nbytes[i], self._addr[i], self._t[i])
        d = self._dtype[i]
        if d.quantized:
            raw_shape = shape[:-1] + (d.row_bytes(shape[-1]),) if shape else (raw.size,)
            if not dequantize:
                return raw.reshape(raw_shape)
            from ._quant import dequantize_array
            return dequantize_array(raw.reshape(raw_shape), d, shape)
        if npdt is None:    # bf16 / float8 without ml_dtypes: widened to float32
            return _widen(raw, d.name).reshape(shape)
        return raw.view(npdt).reshape(shape)

    def _bytes(self, h: _Handle, nbytes: int, addr: int, tptr: int) -> np.ndarray:
        if addr and nbytes:
            return _span_array(h, addr, nbytes)
        out = np.empty(nbytes, np.uint8)
        if nbytes:
            err = lc_error()
            check(lib.lc_tensor_read(tptr, 0, out.ctypes.data, nbytes, C.byref(err)), err)
        return out

    def info(self, name: str) -> TensorInfo:
        return self.tensors[name]

    # ---- lifetime ----

    def close(self) -> None:
        """Releases the model. Arrays already handed out stay valid: the files they view
        are unmapped when the last of them is gone."""
        self._h = None
        self._rows = {}

    @property
    def closed(self) -> bool:
        return self._h is None

    def __enter__(self) -> "Model":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self.closed else f"{len(self._names)} tensors"
        return f"<libconvert.Model {self.format} {self.path!r} {state}>"


def _widen(raw: np.ndarray, name: str) -> np.ndarray:
    if name == "BF16":
        return (raw.view("<u2").astype(np.uint32) << 16).view(np.float32)
    raise TypeError(f"{name} tensors need ml_dtypes (pip install ml-dtypes)")


def open(path, *, key: Optional[str] = None,  # noqa: A001 - the package's verb
         format: Optional[str] = None) -> Model:
    """Opens a model file of any format the library reads, chosen by its bytes: a
    safetensors file or sharded folder (model.safetensors.index.json), a GGUF (the first
    part of a split one reads every part), a PyTorch checkpoint (.pth/.pt/.bin, zip or
    legacy; a sharded pytorch_model.bin.index.json folder) through the library's
    restricted pickle reader (nothing in it is ever run: a global off its allowlist
    raises ForbiddenError naming it), or a Hugging Face folder (its index, or its one
    weights file; `config` holds its config.json). `key` picks a checkpoint's state
    dict ("model", "state_dict.module"; default: chosen as pth2safetensors does).
    `format` ("safetensors", "gguf", "pth") skips the detection and reads PATH with that
    format's reader, as the tool of that format would (a protocol 0 or 1 pickle has no
    magic to be told by). Raises libconvert.Error (with path, offset and entry) for
    anything it refuses."""
    return Model(path, key=key, format=format)
