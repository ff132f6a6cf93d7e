"""The C library through ctypes: loading libconvert.so, the structs of jobs/ffi.h and
libconvert/error.h mirrored field for field, the signatures, errors as exceptions.

ctypes releases the GIL around every foreign call (CDLL, not PyDLL), so each loop the
library runs (reading, converting, quantizing, writing) runs while other Python threads
go on. The only calls back into Python are progress callbacks, which take the GIL for
the few microseconds they run.
"""
from __future__ import annotations

import ctypes as C
import os
import threading
from pathlib import Path
from typing import Callable, Optional

# jobs/ffi.h's LC_FFI_ABI: the layouts below are that version's.
ABI = 3
MAX_DIMS = 8        # libconvert/tensor.h LC_MAX_DIMS
NO_OFFSET = (1 << 64) - 1


def _find_library() -> str:
    """The .so beside the modules (an installed wheel), else LIBCONVERT_LIBRARY, else
    the checkout's build/pic/libconvert.so (`make shared`)."""
    env = os.environ.get("LIBCONVERT_LIBRARY")
    if env:
        return env
    here = Path(__file__).resolve().parent
    packaged = here / "libconvert.so"
    if packaged.is_file():
        return str(packaged)
    checkout = here.parent.parent / "build" / "pic" / "libconvert.so"
    if checkout.is_file():
        return str(checkout)
    raise ImportError("libconvert.so not found: install the wheel (make wheel), run "
                      "`make shared` in the checkout, or set LIBCONVERT_LIBRARY")


lib = C.CDLL(_find_library())
if lib.lc_ffi_abi() != ABI:
    raise ImportError(f"libconvert.so speaks ABI {lib.lc_ffi_abi()}, this package {ABI}: "
                      "rebuild one of them")


class lc_error(C.Structure):
    _fields_ = [("code", C.c_int), ("offset", C.c_uint64), ("path", C.c_char * 256),
                ("where", C.c_char * 128), ("msg", C.c_char * 256)]


class lc_dtype_info(C.Structure):
    _fields_ = [("name", C.c_char_p), ("st_name", C.c_char_p), ("gguf_id", C.c_int),
                ("block_size", C.c_uint32), ("type_size", C.c_uint32),
                ("is_float", C.c_bool), ("is_signed", C.c_bool)]


class lc_ffi_tensor(C.Structure):
    _fields_ = [("name", C.c_void_p), ("dtype", C.c_int32), ("ndim", C.c_uint32),
                ("shape", C.c_uint64 * MAX_DIMS), ("nbytes", C.c_uint64),
                ("data", C.c_void_p), ("file_offset", C.c_uint64), ("t", C.c_void_p)]


class lc_pth_opts(C.Structure):
    _fields_ = [("key", C.c_char_p), ("dedupe", C.c_bool), ("zero_copy", C.c_bool),
                ("allow_expand", C.c_bool), ("note", C.c_void_p), ("note_ctx", C.c_void_p)]


class lc_pth_ref(C.Structure):
    _fields_ = [("entry", C.c_char_p), ("offset", C.c_uint64), ("module", C.c_char_p),
                ("name", C.c_char_p), ("allowed", C.c_bool)]


StrArray = C.POINTER(C.c_char_p)


class lc_ffi_to_gguf_args(C.Structure):
    _fields_ = [("in_", C.c_char_p), ("out", C.c_char_p), ("outtype", C.c_char_p),
                ("pre", C.c_char_p), ("overrides", StrArray), ("n_overrides", C.c_size_t),
                ("vocab_only", C.c_int32), ("dry_run", C.c_int32), ("threads", C.c_int32)]


class lc_ffi_pth_args(C.Structure):
    _fields_ = [("in_", C.c_char_p), ("out", C.c_char_p), ("key", C.c_char_p),
                ("dedupe", C.c_int32), ("allow_expand", C.c_int32), ("cast", C.c_int32),
                ("threads", C.c_int32)]


class lc_ffi_quantize_args(C.Structure):
    _fields_ = [("in_", C.c_char_p), ("out", C.c_char_p), ("ftype", C.c_char_p),
                ("output_type", C.c_char_p), ("token_embd_type", C.c_char_p),
                ("tensor_types", StrArray), ("n_tensor_types", C.c_size_t),
                ("overrides", StrArray), ("n_overrides", C.c_size_t),
                ("imatrix", C.c_char_p), ("include_weights", StrArray),
                ("n_include", C.c_size_t), ("exclude_weights", StrArray),
                ("n_exclude", C.c_size_t),
                ("pure", C.c_int32), ("leave_output", C.c_int32),
                ("allow_requantize", C.c_int32), ("keep_split", C.c_int32),
                ("dry_run", C.c_int32), ("threads", C.c_int32)]


class lc_ffi_verify_args(C.Structure):
    _fields_ = [("src", C.c_char_p), ("dst", C.c_char_p), ("tokens", C.c_char_p),
                ("text", C.c_char_p), ("file", C.c_char_p), ("max_tokens", C.c_uint64),
                ("layers", C.c_int32), ("threads", C.c_int32), ("report_html", C.c_char_p),
                ("imatrix", C.c_char_p)]


PROGRESS_FN = C.CFUNCTYPE(None, C.c_void_p, C.c_char_p, C.c_uint64, C.c_uint64)
SCAN_FN = C.CFUNCTYPE(None, C.c_void_p, C.POINTER(lc_pth_ref))

E = C.POINTER(lc_error)
VP = C.c_void_p


def _sig(name, res, *args):
    f = getattr(lib, name)
    f.restype, f.argtypes = res, list(args)


_sig("lc_ffi_free", None, VP)
_sig("lc_err_format", None, E, C.c_char_p, C.c_size_t)
_sig("lc_code_name", C.c_char_p, C.c_int)
_sig("lc_dtype_get", C.POINTER(lc_dtype_info), C.c_int)
_sig("lc_model_free", None, VP)
_sig("lc_ffi_open", C.c_int, C.c_char_p, C.c_char_p, C.POINTER(lc_pth_opts), C.POINTER(VP),
     C.POINTER(C.c_char_p), C.POINTER(C.c_uint64), E)
_sig("lc_model_tensor_count", C.c_size_t, VP)
_sig("lc_ffi_tensors", None, VP, C.POINTER(lc_ffi_tensor), C.c_size_t,
     C.POINTER(C.c_size_t))
_sig("lc_ffi_names", None, VP, C.c_char_p, C.c_size_t, C.POINTER(C.c_size_t))
_sig("lc_ffi_meta_encode", C.c_int, VP, C.POINTER(VP), C.POINTER(C.c_size_t),
     C.POINTER(C.c_uint64), E)
_sig("lc_tensor_read", C.c_int, VP, C.c_uint64, VP, C.c_size_t, E)
_sig("lc_ffi_model_from_meta", C.c_int, C.c_char_p, C.c_size_t, C.c_uint64, C.POINTER(VP), E)
_sig("lc_model_new", VP)
_sig("lc_ffi_model_set_str", C.c_int, VP, C.c_char_p, C.c_char_p, C.c_size_t, E)
_sig("lc_ffi_add_tensor", C.c_int, VP, C.c_char_p, C.c_int32, C.c_uint32,
     C.POINTER(C.c_uint64), VP, C.c_uint64, E)
_sig("lc_ffi_write_gguf", C.c_int, VP, C.c_char_p, C.c_int, VP, E)
_sig("lc_ffi_write_safetensors", C.c_int, VP, C.c_char_p, C.c_bool, C.c_int, VP, E)
_sig("lc_ffi_quantize_rows", C.c_int, C.c_int32, VP, VP, C.c_uint64, C.c_uint64, VP, C.c_int, E)
_sig("lc_ffi_dequantize_rows", C.c_int, C.c_int32, VP, VP, C.c_uint64, C.c_uint64, C.c_int, E)
_sig("lc_quant_supported", C.c_bool, C.c_int)
_sig("lc_quant_writable", C.c_bool, C.c_int)
_sig("lc_quant_imatrix_use", C.c_int, C.c_int)
_sig("lc_dequant_supported", C.c_bool, C.c_int)
_sig("lc_progress_new_fn", VP, PROGRESS_FN, VP)
_sig("lc_progress_free", None, VP)
_sig("lc_ffi_to_gguf", C.c_int, C.POINTER(lc_ffi_to_gguf_args), VP, C.POINTER(VP), E)
_sig("lc_ffi_gguf_to_safetensors", C.c_int, C.c_char_p, C.c_char_p, C.c_int32, C.c_int, VP, E)
_sig("lc_ffi_safetensors_rewrite", C.c_int, C.c_char_p, C.c_char_p, C.c_int32, C.c_bool,
     C.c_int, VP, E)
_sig("lc_ffi_pth_to_safetensors", C.c_int, C.POINTER(lc_ffi_pth_args), VP, E)
_sig("lc_ffi_quantize", C.c_int, C.POINTER(lc_ffi_quantize_args), VP, C.POINTER(VP), E)
_sig("lc_ffi_verify", C.c_int, C.POINTER(lc_ffi_verify_args), VP, C.POINTER(C.c_bool),
     C.POINTER(VP), E)
_sig("lc_pth_scan", C.c_int, C.c_char_p, SCAN_FN, VP, E)


# ---- errors ----

class Error(Exception):
    """A failure the library reported: `code` (its stable name: "truncated",
    "malformed", "forbidden", ...), `message` (one sentence), `path` (the file being
    read or written), `where` (a tensor, key or zip entry) and `offset` (the byte in
    `path` where reading went wrong), each None when the library did not say.
    str() is the line the tools print after their name."""

    code: str = "error"

    def __init__(self, line: str, message: str = "", path: Optional[str] = None,
                 where: Optional[str] = None, offset: Optional[int] = None):
        super().__init__(line)
        self.message = message or line
        self.path = path
        self.where = where
        self.offset = offset


class FileError(Error):
    """The OS refused a read, write, map or rename (code "io")."""
    code = "io"


class OutOfMemoryError(Error, MemoryError):
    code = "nomem"


class TruncatedError(Error):
    """A field or payload runs past the end of its container."""
    code = "truncated"


class MalformedError(Error, ValueError):
    """Bad magic, bad JSON, an impossible or inconsistent value."""
    code = "malformed"


class LimitError(Error):
    """A declared size, count or offset overflows or passes a limit (code "overflow")."""
    code = "overflow"


class UnsupportedError(Error):
    """Valid input the library does not handle (a dtype, a zip method, an opcode)."""
    code = "unsupported"


class ForbiddenError(Error):
    """A pickle names a global that is not on the allowlist; `where`/message name it.
    Nothing was run."""
    code = "forbidden"


class NotFoundError(Error, LookupError):
    """A named file, tensor or key is absent."""
    code = "notfound"


class MismatchError(Error):
    """Two things that must agree do not (shards and their index, model-verify's sides)."""
    code = "mismatch"


class ArgumentError(Error, ValueError):
    """The caller asked for something invalid (what a tool calls a usage error)."""
    code = "arg"


_BY_CODE = {1: FileError, 2: OutOfMemoryError, 3: TruncatedError, 4: MalformedError,
            5: LimitError, 6: UnsupportedError, 7: ForbiddenError, 8: NotFoundError,
            9: MismatchError, 10: ArgumentError}


def _text(b: bytes) -> str:
    return b.decode("utf-8", "backslashreplace")


def error_from(err: lc_error) -> Error:
    buf = C.create_string_buffer(1024)
    lib.lc_err_format(C.byref(err), buf, len(buf))
    cls = _BY_CODE.get(err.code, Error)
    return cls(_text(buf.value), _text(err.msg), _text(err.path) or None,
               _text(err.where) or None, None if err.offset == NO_OFFSET else err.offset)


def check(rc: int, err: lc_error) -> None:
    if rc != 0:
        raise error_from(err)


# ---- small helpers ----

def fspath(p) -> bytes:
    return os.fsencode(os.fspath(p))


def opt_bytes(s) -> Optional[bytes]:
    if s is None:
        return None
    return os.fsencode(s) if isinstance(s, os.PathLike) else str(s).encode()


def str_array(items) -> tuple:
    """A C array of char * for a list of str; returns (array, count, keepalive)."""
    enc = [str(i).encode() for i in items]
    arr = (C.c_char_p * max(len(enc), 1))(*enc)
    return arr, len(enc), enc


def take_text(ptr: C.c_void_p) -> str:
    """A string the library allocated for us, read and freed."""
    if not ptr.value:
        return ""
    try:
        return _text(C.string_at(ptr.value))
    finally:
        lib.lc_ffi_free(ptr)


ProgressFn = Callable[[str, int, int], None]


class Progress:
    """An lc_progress calling `fn(label, done, total)` (bytes), or none when fn is None.
    An exception the callback raises is kept and raised again when the call ends (the
    library cannot be stopped from a callback)."""

    def __init__(self, fn: Optional[ProgressFn]):
        self.fn = fn
        self.exc: Optional[BaseException] = None
        self.handle = None
        if fn is not None:
            self._cb = PROGRESS_FN(self._call)
            self.handle = lib.lc_progress_new_fn(self._cb, None)

    def _call(self, _ctx, label, done, total):
        if self.exc is not None:
            return
        try:
            self.fn(_text(label or b""), int(done), int(total))
        except BaseException as e:  # noqa: BLE001 - raised again after the call
            self.exc = e

    def __enter__(self):
        return self.handle

    def __exit__(self, *a):
        if self.handle:
            lib.lc_progress_free(self.handle)
            self.handle = None
        if self.exc is not None and a[0] is None:
            raise self.exc
        return False


# The library keeps a process-wide list of the files a job reads, so that no job writes
# over its own input (libconvert/input.h). Each job of the package starts that list
# afresh; jobs and writers therefore run one at a time, under this lock (each one uses
# every core it is given anyway). Reading (open, tensor, quantize_array) never waits.
job_lock = threading.Lock()
