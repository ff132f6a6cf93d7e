"""The tools' jobs as functions: convert, quantize, verify, pth_to_safetensors, scan."""
from __future__ import annotations

import ctypes as C
import json
import os
from pathlib import Path
from typing import Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from . import _dtypes
from ._lib import (SCAN_FN, Progress, ProgressFn, check, error_from, fspath, job_lock,
                   lc_error, lc_ffi_pth_args, lc_ffi_quantize_args, lc_ffi_to_gguf_args,
                   lc_ffi_verify_args, lib, opt_bytes, str_array, take_text)
from ._results import Global, QuantizeResult, ScanResult, VerifyResult

PathLike = Union[str, os.PathLike]


def _cast(dtype) -> int:
    """F32, F16, BF16 (any case) or None -> the library's dtype code (0: keep)."""
    if dtype is None:
        return 0
    name = str(dtype).upper()
    if name not in ("F32", "F16", "BF16"):
        raise ValueError(f"dtype must be f32, f16 or bf16, not {dtype!r}")
    return _dtypes.BY_NAME[name].code


def _magic(path: Path) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read(9)
    except OSError:
        return b""


def _is_pth(path: Path) -> bool:
    if path.is_dir():
        return (path / "pytorch_model.bin.index.json").is_file() and \
            not (path / "model.safetensors.index.json").is_file()
    if path.name.endswith(".bin.index.json"):
        return True
    m = _magic(path)
    return m[:4] == b"PK\x03\x04" or (len(m) == 9 and m[0] == 0x80 and m[1] <= 5 and
                                      m[8:9] != b"{")


def _overrides(kv: Optional[Mapping[str, object]]) -> List[str]:
    """{key: value} or {key: (type, value)} -> "KEY=TYPE:VALUE" (int, float, bool, str)."""
    out = []
    for k, v in (kv or {}).items():
        if isinstance(v, tuple):
            t, v = v
        elif isinstance(v, bool):
            t = "bool"
        elif isinstance(v, int):
            t = "int"
        elif isinstance(v, float):
            t = "float"
        else:
            t = "str"
        if t == "bool":
            v = "true" if v else "false"
        out.append(f"{k}={t}:{v}")
    return out


def convert(src: PathLike, out: Optional[PathLike] = None, outtype: Optional[str] = None, *,
            vocab_only: bool = False, pre: Optional[str] = None,
            metadata: Optional[Mapping[str, object]] = None, dry_run: bool = False,
            threads: int = 0, progress: Optional[ProgressFn] = None) -> Optional[str]:
    """Converts SRC into OUT as the tools do, chosen by OUT's name and SRC's format:

    - OUT ending in .gguf (or None, for a folder: Name-SizeLabel-TYPE.gguf in it): a
      Hugging Face or Meta folder, or a bare .safetensors file, to GGUF, as
      safetensors2gguf (`outtype` f32, f16, bf16, q8_0, auto, or any llama-quantize TYPE
      such as q4_k_m, quantized in the same pass; `vocab_only`, `pre`, `metadata`
      {key: value} overrides as --metadata KEY=TYPE:VALUE);
    - a GGUF to .safetensors: gguf2safetensors (`outtype` f32, f16, bf16 or None);
    - a PyTorch checkpoint to .safetensors (a sharded one to a folder): pth2safetensors;
    - safetensors (a file or a sharded folder) to one .safetensors: safetensors-rewrite
      (`outtype` f32, f16, bf16 casts floating tensors).
    OUT appears atomically. With dry_run (to GGUF only) nothing is written and the plan
    the tool prints is returned; otherwise None."""
    s = Path(os.fspath(src))
    o = None if out is None else os.fspath(out)
    err = lc_error()
    with job_lock, Progress(progress) as p:
        if o is None or o.endswith(".gguf"):
            ov, n, keep = str_array(_overrides(metadata))
            a = lc_ffi_to_gguf_args(in_=fspath(s), out=opt_bytes(o),
                                    outtype=opt_bytes(outtype), pre=opt_bytes(pre),
                                    overrides=ov, n_overrides=n, vocab_only=vocab_only,
                                    dry_run=dry_run, threads=threads)
            plan = C.c_void_p()
            check(lib.lc_ffi_to_gguf(C.byref(a), p, C.byref(plan), C.byref(err)), err)
            text = take_text(plan)
            return text if dry_run else None
        if dry_run:
            raise ValueError("dry_run is for conversions to GGUF")
        if _magic(s)[:4] == b"GGUF":
            check(lib.lc_ffi_gguf_to_safetensors(fspath(s), fspath(o), _cast(outtype),
                                                 threads, p, C.byref(err)), err)
        elif _is_pth(s):
            a = lc_ffi_pth_args(in_=fspath(s), out=fspath(o), cast=_cast(outtype),
                                threads=threads)
            check(lib.lc_ffi_pth_to_safetensors(C.byref(a), p, C.byref(err)), err)
        else:
            check(lib.lc_ffi_safetensors_rewrite(fspath(s), fspath(o), _cast(outtype), False,
                                                 threads, p, C.byref(err)), err)
    return None


def pth_to_safetensors(src: PathLike, out: PathLike, *, key: Optional[str] = None,
                       dedupe: bool = False, allow_expand: bool = False,
                       dtype: Optional[str] = None, threads: int = 0,
                       progress: Optional[ProgressFn] = None) -> None:
    """A PyTorch checkpoint (zip or legacy .pth/.pt/.bin; a sharded folder or its
    pytorch_model.bin.index.json, then OUT is a folder of shards plus an index) to
    safetensors, as pth2safetensors, without running its pickle: a global off the
    allowlist raises ForbiddenError naming it. `key` picks the state dict, `dedupe`
    drops aliases of shared storages as safetensors' convert script does,
    `allow_expand` admits stride-0 views beyond 16x their storage, `dtype` casts
    floating tensors (f32, f16, bf16)."""
    err = lc_error()
    a = lc_ffi_pth_args(in_=fspath(src), out=fspath(out), key=opt_bytes(key), dedupe=dedupe,
                        allow_expand=allow_expand, cast=_cast(dtype), threads=threads)
    with job_lock, Progress(progress) as p:
        check(lib.lc_ffi_pth_to_safetensors(C.byref(a), p, C.byref(err)), err)


TensorTypes = Union[Mapping[str, str], Iterable[Tuple[str, str]]]


def quantize(inp: PathLike, out: Optional[PathLike], ftype: Union[str, int], *,
             imatrix: Optional[PathLike] = None,
             include_weights: Sequence[str] = (), exclude_weights: Sequence[str] = (),
             tensor_types: Optional[TensorTypes] = None,
             output_tensor_type: Optional[str] = None,
             token_embedding_type: Optional[str] = None, pure: bool = False,
             leave_output_tensor: bool = False, allow_requantize: bool = False,
             keep_split: bool = False, dry_run: bool = False,
             override_kv: Optional[Mapping[str, object]] = None,
             threads: Optional[int] = None,
             progress: Optional[ProgressFn] = None) -> QuantizeResult:
    """gguf-quantize: the file llama.cpp's llama_model_quantize writes for FTYPE
    ("Q4_K_M", or its numeric id), byte for byte. INP is a GGUF model (the first part of
    a split one) or a Hugging Face folder (converted in the same pass); OUT None names it
    ggml-model-TYPE.gguf beside INP. The keywords mirror llama_model_quantize_params:
    tensor_types {regex: type} (first match wins), output_tensor_type,
    token_embedding_type, pure, allow_requantize, keep_split, dry_run (nthread is
    `threads`; 0 or None: one per core, at most 8), plus leave_output_tensor and
    override_kv {key: value or (type, value)}. `imatrix` is llama-imatrix's file (its
    GGUF or the legacy .dat), as --imatrix, filtered by include_weights /
    exclude_weights (names containing any of these); the types that need one (IQ1_S,
    IQ2_XXS, ...) refuse to run without it. Returns the plan and summary
    (gguf-quantize --json's figures)."""
    if isinstance(tensor_types, Mapping):
        tt = [f"{k}={v}" for k, v in tensor_types.items()]
    else:
        tt = [f"{k}={v}" for k, v in (tensor_types or [])]
    tta, ttn, k1 = str_array(tt)
    ova, ovn, k2 = str_array(_overrides(override_kv))
    inca, incn, k3 = str_array(include_weights)
    exca, excn, k4 = str_array(exclude_weights)
    a = lc_ffi_quantize_args(
        in_=fspath(inp), out=opt_bytes(out), ftype=str(ftype).encode(),
        output_type=opt_bytes(output_tensor_type),
        token_embd_type=opt_bytes(token_embedding_type), tensor_types=tta,
        n_tensor_types=ttn, overrides=ova, n_overrides=ovn, imatrix=opt_bytes(imatrix),
        include_weights=inca, n_include=incn, exclude_weights=exca, n_exclude=excn, pure=pure,
        leave_output=leave_output_tensor, allow_requantize=allow_requantize,
        keep_split=keep_split, dry_run=dry_run, threads=threads or 0)
    err = lc_error()
    report = C.c_void_p()
    with job_lock, Progress(progress) as p:
        check(lib.lc_ffi_quantize(C.byref(a), p, C.byref(report), C.byref(err)), err)
    return QuantizeResult.from_dict(json.loads(take_text(report)))


def verify(src: PathLike, dst: PathLike, *, tokens: Optional[Sequence[int]] = None,
           text: Optional[str] = None, file: Optional[PathLike] = None,
           max_tokens: int = 0, layers: bool = False, report: Optional[PathLike] = None,
           imatrix: Optional[PathLike] = None, threads: int = 0,
           progress: Optional[ProgressFn] = None) -> VerifyResult:
    """model-verify: did converting SRC into DST keep the model? Metadata key by key,
    every tensor pair against what DST's type may change, both models' logits on the
    same tokens (`tokens` ids, `text`, or a `file`'s text; default the bundled text; at
    most `max_tokens`), with `layers` the hidden state after every layer; `report`
    writes the HTML page too; `imatrix` is the importance matrix DST was quantized with
    (as --imatrix: the reproduction weighs by it, so such a DST can be proven). Returns the figures `model-verify --json` prints (its
    verdict in .passed); raises for models that cannot be compared."""
    err = lc_error()
    a = lc_ffi_verify_args(
        src=fspath(src), dst=fspath(dst),
        tokens=None if tokens is None else ",".join(str(int(t)) for t in tokens).encode(),
        text=None if text is None else text.encode("utf-8"),
        file=opt_bytes(file), max_tokens=max_tokens, layers=layers, threads=threads,
        report_html=opt_bytes(report), imatrix=opt_bytes(imatrix))
    passed = C.c_bool()
    out = C.c_void_p()
    with job_lock, Progress(progress) as p:
        check(lib.lc_ffi_verify(C.byref(a), p, C.byref(passed), C.byref(out), C.byref(err)),
              err)
    return VerifyResult.from_dict(json.loads(take_text(out)))


def scan(path: PathLike) -> ScanResult:
    """Every global a PyTorch checkpoint's pickles name, without running anything (as
    pth2safetensors --scan): each with its entry, offset and whether the allowlist
    admits it. `safe` is False when any is refused; a file that cannot be read at all
    raises."""
    found: List[Global] = []

    def on_ref(_ctx, ref):
        r = ref.contents
        found.append(Global(r.entry.decode("utf-8", "backslashreplace"), int(r.offset),
                            r.module.decode("utf-8", "backslashreplace"),
                            r.name.decode("utf-8", "backslashreplace"), bool(r.allowed)))

    cb = SCAN_FN(on_ref)
    err = lc_error()
    rc = lib.lc_pth_scan(fspath(path), cb, None, C.byref(err))
    if rc == 7:   # forbidden: the answer, not a failure
        return ScanResult(os.fspath(path), found, False)
    if rc != 0:
        raise error_from(err)
    return ScanResult(os.fspath(path), found, True)
