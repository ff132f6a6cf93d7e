"""What the jobs return: dataclasses read from the JSON the tools print with --json, so
that a figure here is the tool's own (to_dict() gives that JSON object back, key for
key). Keys named like Python keywords get a trailing underscore-free spelling: "class"
is `cls`, "from" is `from_`."""
from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

_RENAME = {"class": "cls", "from": "from_"}
_BACK = {v: k for k, v in _RENAME.items()}


class _Figures:
    """from_dict / to_dict over the dataclass's fields; fields listed in _OPTIONAL are
    keys the tool writes only sometimes (None here when absent). Keys a newer tool writes
    that no field names yet are kept (`unknown_keys`) and written back by to_dict."""
    _OPTIONAL: typing.ClassVar[frozenset] = frozenset()

    @classmethod
    def from_dict(cls, d: Dict[str, Any]):
        hints = typing.get_type_hints(cls)
        kw = {}
        known = set()
        for f in dataclasses.fields(cls):
            key = _BACK.get(f.name, f.name)
            known.add(key)
            if key not in d:
                continue
            kw[f.name] = _build(hints[f.name], d[key])
        obj = cls(**kw)
        obj.unknown_keys = {k: v for k, v in d.items() if k not in known}
        return obj

    def to_dict(self) -> Dict[str, Any]:
        out = {}
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if v is None and f.name in self._OPTIONAL:
                continue
            out[_BACK.get(f.name, f.name)] = _unbuild(v)
        out.update(getattr(self, "unknown_keys", None) or {})
        return out


def _build(tp, v):
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is typing.Union:          # Optional[X]
        if v is None:
            return None
        tp = next(a for a in args if a is not type(None))
        return _build(tp, v)
    if origin in (list, List) and args and isinstance(v, list):
        return [_build(args[0], i) for i in v]
    if isinstance(tp, type) and issubclass(tp, _Figures) and isinstance(v, dict):
        return tp.from_dict(v)
    return v


def _unbuild(v):
    if isinstance(v, _Figures):
        return v.to_dict()
    if isinstance(v, list):
        return [_unbuild(i) for i in v]
    return v


# ---- model-verify ----

@dataclass
class VerifySide(_Figures):
    path: str = ""
    kind: str = ""
    format: str = ""
    arch: Optional[str] = None
    spelling: str = ""
    layers: Optional[int] = None
    _OPTIONAL = frozenset({"layers"})


@dataclass
class MetaDifference(_Figures):
    key: str = ""
    src: str = ""
    dst: str = ""


@dataclass
class MetaFigures(_Figures):
    compared: bool = False
    note: str = ""
    keys: int = 0
    differences: int = 0
    items: List[MetaDifference] = field(default_factory=list)


@dataclass
class Expectation(_Figures):
    """What converting to DST's type may change: a per-element or per-block bound
    (rel * |x| + abs), the SNR range such a type gives, tensor-level floors."""
    cls: str = ""
    block: int = 1
    rel: Optional[float] = None
    abs: Optional[float] = None
    snr_lo: Optional[float] = None
    snr_hi: Optional[float] = None
    cos_min: Optional[float] = None
    rel_rmse_max: Optional[float] = None


@dataclass
class TensorFigures(_Figures):
    """One tensor pair: DST's name and SRC's, the error statistics and the verdict."""
    name: str = ""
    src_name: str = ""
    layer: Optional[int] = None
    src_type: str = ""
    dst_type: str = ""
    shape: List[int] = field(default_factory=list)
    shape_ok: bool = True
    permuted: bool = False
    expected: Optional[Expectation] = None
    elements: int = 0
    rmse: Optional[float] = None
    max_abs: Optional[float] = None
    max_at: int = 0
    cosine: Optional[float] = None
    snr_db: Optional[float] = None
    rel_rmse: Optional[float] = None
    below_floor: bool = False
    reproduced: str = ""            # DST against SRC quantized by our own kernels:
    repro_type: str = ""            # "same" (byte-identical: proven), ...
    repro_rows_differ: int = 0
    imatrix_weighted: bool = False  # reproduced with an --imatrix vector
    dst_weighted: bool = False      # DST records a matrix and its type weighs by one
    repro_rel_rmse: Optional[float] = None  # the reproduction's own (a weighted DST's limit)
    worst: Optional[float] = None
    worst_row: int = 0
    worst_col: int = 0
    nonfinite: int = 0
    ok: bool = True
    snr_low: bool = False
    diagnosis: str = ""


@dataclass
class TensorsFigures(_Figures):
    compared: int = 0
    outside: int = 0
    skipped: str = ""
    extra: str = ""
    cls: str = ""
    proven: int = 0                 # DST's tensors byte-identical to the reproduction
    repro_differ: int = 0
    proxied: int = 0
    items: List[TensorFigures] = field(default_factory=list)


@dataclass
class TokenizerDifference(_Figures):
    position: int = 0
    src: int = 0
    dst: int = 0


@dataclass
class KLFigures(_Figures):
    mean: Optional[float] = None
    median: Optional[float] = None
    p99: Optional[float] = None
    max: Optional[float] = None


@dataclass
class DeltaPFigures(_Figures):
    rms: Optional[float] = None
    min: Optional[float] = None
    p01: Optional[float] = None
    p05: Optional[float] = None
    median: Optional[float] = None
    p95: Optional[float] = None
    p99: Optional[float] = None
    max: Optional[float] = None


@dataclass
class LogitFigures(_Figures):
    """Both forward passes on the same tokens: NMSE, KL divergence, delta-p of the next
    token, top-1/top-5 agreement, perplexities, KL per scored position."""
    ran: bool = False
    note: str = ""
    source: Optional[str] = None
    tokenizer_agrees: bool = True
    tokenizer_difference: Optional[TokenizerDifference] = None
    tokens: int = 0
    scored: int = 0
    vocab: int = 0
    nmse: Optional[float] = None
    max_abs: Optional[float] = None
    max_logit: Optional[float] = None
    kl: Optional[KLFigures] = None
    delta_p: Optional[DeltaPFigures] = None
    same_top1: Optional[float] = None
    same_top5: Optional[float] = None
    ppl_src: Optional[float] = None
    ppl_dst: Optional[float] = None
    token_ids: Optional[List[int]] = None
    reproduction: Optional[Dict[str, Any]] = None   # the reproduction's own figures
    kl_per_position: Optional[List[Optional[float]]] = None
    _OPTIONAL = frozenset({"tokenizer_difference", "nmse", "max_abs", "max_logit", "kl",
                           "delta_p", "same_top1", "same_top5", "ppl_src", "ppl_dst",
                           "token_ids", "reproduction", "kl_per_position"})


@dataclass
class LayerFigures(_Figures):
    """The hidden state after every layer (verify(..., layers=True))."""
    compared: bool = False
    relative: Optional[List[Optional[float]]] = None
    cosine: Optional[List[Optional[float]]] = None
    reproduction_relative: Optional[List[Optional[float]]] = None
    first_divergent: Optional[int] = None
    first_past_limit: Optional[int] = None
    _OPTIONAL = frozenset({"relative", "cosine", "reproduction_relative", "first_divergent",
                           "first_past_limit"})

    def to_dict(self) -> Dict[str, Any]:
        d = super().to_dict()
        if self.compared:   # the tool writes both keys, null or not, once it compared
            d.setdefault("first_divergent", None)
            d.setdefault("first_past_limit", None)
        return d


@dataclass
class Limits(_Figures):
    kl_mean: Optional[float] = None
    kl_p99: Optional[float] = None
    hidden: Optional[float] = None
    nmse: Optional[float] = None


@dataclass
class VerifyImatrix(_Figures):
    """The importance matrix: the one given (`imatrix=`, --imatrix) and what DST's
    quantize.imatrix.* keys record; `lacking`: DST was weighted by a matrix the
    reproduction did not get, so its tensors could not be proven."""
    given: Optional[str] = None
    weighted: int = 0
    dst_records: bool = False
    dst_file: Optional[str] = None
    dst_entries: Optional[int] = None
    lacking: bool = False


@dataclass
class VerifyResult(_Figures):
    """model-verify's figures (`model-verify --json`, key for key: to_dict()). `passed`
    is the verdict; `why` names the failing parts."""
    verdict: str = ""
    judged: str = ""                # how: "proven", or against the reproduction, ...
    why: str = ""
    cls: str = ""
    limits: Optional[Limits] = None
    imatrix: Optional[VerifyImatrix] = None
    src: Optional[VerifySide] = None
    dst: Optional[VerifySide] = None
    metadata: Optional[MetaFigures] = None
    tensors: Optional[TensorsFigures] = None
    logits: Optional[LogitFigures] = None
    layers: Optional[LayerFigures] = None

    @property
    def passed(self) -> bool:
        return self.verdict == "pass"

    def __bool__(self) -> bool:
        return self.passed


# ---- gguf-quantize ----

@dataclass
class QuantizeTensor(_Figures):
    """One tensor of the plan: its type before (`from_`) and after (`to`), the type its
    rules wanted and why it got another (a fallback), bytes in and out, and its part."""
    name: str = ""
    shape: List[int] = field(default_factory=list)
    from_: str = ""
    to: str = ""
    wanted: str = ""
    why: str = ""
    bytes_in: int = 0
    bytes_out: int = 0
    part: Optional[int] = None
    _OPTIONAL = frozenset({"part"})


@dataclass
class QuantizePart(_Figures):
    path: str = ""
    tensors: int = 0
    bytes: int = 0


@dataclass
class QuantizeResult(_Figures):
    """gguf-quantize's plan and summary (`gguf-quantize --json`, key for key)."""
    in_: str = ""
    out: str = ""
    type: str = ""
    file_type: int = 0
    dry_run: bool = False
    in_parts: Optional[int] = None
    parts: Optional[List[QuantizePart]] = None
    tensors: List[QuantizeTensor] = field(default_factory=list)
    bytes_in: int = 0
    bytes_out: int = 0
    elements: int = 0
    bpw_in: float = 0.0
    bpw_out: float = 0.0
    fallbacks: int = 0
    seconds: float = 0.0
    _OPTIONAL = frozenset({"in_parts", "parts"})


_RENAME["in"] = "in_"
_BACK["in_"] = "in"


@dataclass
class Global:
    """One global a pickle names: the zip entry (or "pickle"), the opcode's file
    offset, module and name, and whether the library's allowlist admits it."""
    entry: str
    offset: int
    module: str
    name: str
    allowed: bool

    def __str__(self) -> str:
        return f"{self.module}.{self.name}"


@dataclass
class ScanResult:
    """Every global the checkpoint's pickles name (scan()): `safe` when every one is
    on the allowlist and the checkpoint loads."""
    path: str
    globals: List[Global]
    safe: bool

    @property
    def forbidden(self) -> List[Global]:
        return [g for g in self.globals if not g.allowed]
