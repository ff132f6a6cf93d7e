#!/usr/bin/env python3
"""Writes the PyTorch checkpoint fixtures with the real producer (torch.save).

Run once per torch version; each run fills fixtures/pth/<torch version>/ and
rewrites that version's rows in fixtures/pth/MANIFEST-tensors.tsv and
fixtures/MANIFEST.tsv. `make check` never runs this: the files are committed.

    build/torch-venv/bin/python scripts/make_torch_fixtures.py   # torch 2.x (PyPI,
                                                   # scripts/torch-requirements.txt)
    /usr/bin/python3 scripts/make_torch_fixtures.py              # torch 1.13 (Debian)
    ... --hostile                                                # also fixtures/bad/pth/

MANIFEST-tensors.tsv has one row per tensor: file (relative to fixtures/), name,
dtype (safetensors spelling), shape (comma-separated, empty for rank 0),
sha256 of torch's t.contiguous() bytes (little-endian), storage (tensors of one
file with the same number share one storage), torch version. Names are the
path from the saved object's root joined by '.': 'model.fc1.weight',
'optimizer.state.0.exp_avg'. For the sharded folder the file column names the
shard that holds the tensor.

Every seed is fixed; torch's zip writer still stamps a per-file serialization
id in newer versions, so regenerated files can differ in bytes but never in
tensors.
"""
import argparse
import collections
import hashlib
import io
import json
import os
import struct
import subprocess
import sys
import tempfile
import zipfile
import zlib

import torch

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
FIX = os.path.join(ROOT, "fixtures")
VERSION = torch.__version__.split("+")[0]
OUTDIR = os.path.join(FIX, "pth", VERSION)
PRODUCER = "torch.save (scripts/make_torch_fixtures.py)"
PRODUCER_VERSION = f"torch={VERSION}"

ST_NAMES = {
    torch.float64: "F64", torch.float32: "F32", torch.float16: "F16",
    torch.bfloat16: "BF16", torch.int64: "I64", torch.int32: "I32",
    torch.int16: "I16", torch.int8: "I8", torch.uint8: "U8", torch.bool: "BOOL",
    torch.complex64: "C64",
}
for _attr, _name in (("float8_e4m3fn", "F8_E4M3"), ("float8_e5m2", "F8_E5M2"),
                     ("uint16", "U16"), ("uint32", "U32"), ("uint64", "U64"),
                     ("float8_e4m3fnuz", "F8_E4M3FNUZ"), ("float8_e5m2fnuz", "F8_E5M2FNUZ"),
                     ("float8_e8m0fnu", "F8_E8M0")):
    if hasattr(torch, _attr):
        ST_NAMES[getattr(torch, _attr)] = _name


def tensor_bytes(t):
    """Little-endian row-major bytes of t, whatever its strides (this host is LE)."""
    c = t.detach().resolve_conj().resolve_neg().contiguous().reshape(-1)
    if c.numel() == 0:
        return b""
    size = c.element_size()
    # Reinterpret as plain integers of the same width: numpy lacks bf16/f8/bool
    # quirks this way, and the bytes are exactly torch's.
    as_int = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[size]
    if c.dtype != as_int:
        c = c.view(as_int)
    return c.numpy().tobytes()


def storage_id(t):
    s = t.untyped_storage() if hasattr(t, "untyped_storage") else t.storage()
    return s.data_ptr()


def walk(obj, prefix, out):
    """Collects (name, tensor) pairs in the order torch pickles them."""
    if isinstance(obj, torch.Tensor):
        out.append((prefix, obj))
    elif isinstance(obj, dict):
        for k, v in obj.items():
            walk(v, f"{prefix}.{k}" if prefix else str(k), out)
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            walk(v, f"{prefix}.{i}" if prefix else str(i), out)


class Manifest:
    def __init__(self):
        self.tensor_rows = []
        self.file_rows = []

    def add_file(self, rel, producer=PRODUCER):
        self.file_rows.append((rel, producer, PRODUCER_VERSION, sha256_file(os.path.join(FIX, rel))))

    def add_tensors(self, rel, obj):
        pairs = []
        walk(obj, "", pairs)
        ids = {}
        for name, t in pairs:
            key = storage_id(t) if t.numel() else ("empty", name)
            sid = ids.setdefault(key, len(ids))
            shape = ",".join(str(d) for d in t.shape)
            digest = hashlib.sha256(tensor_bytes(t)).hexdigest()
            self.tensor_rows.append((rel, name, ST_NAMES[t.dtype], shape, digest, str(sid), VERSION))


def sha256_file(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def rel(path):
    return os.path.relpath(path, FIX)


def save(man, name, obj, check=True, **kw):
    """torch.save, then prove torch loads back the same tensors (weights_only where it can)."""
    path = os.path.join(OUTDIR, name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    torch.save(obj, path, **kw)
    if check:
        verify_roundtrip(path, obj)
    man.add_file(rel(path))
    man.add_tensors(rel(path), obj)
    return path


def load(path):
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:
        # torch 1.13's weights_only unpickler lacks opcodes it writes itself
        # (BINFLOAT); these are our own files, so the full unpickler is safe.
        print(f"note: {os.path.relpath(path, FIX)}: weights_only load failed ({str(e)[-40:]!r})")
        return torch.load(path, map_location="cpu", weights_only=False)


def verify_roundtrip(path, obj):
    want, got = [], []
    walk(obj, "", want)
    walk(load(path), "", got)
    assert [n for n, _ in want] == [n for n, _ in got], path
    for (n, a), (_, b) in zip(want, got):
        assert a.dtype == b.dtype and a.shape == b.shape, (path, n)
        assert tensor_bytes(a) == tensor_bytes(b), (path, n)


# ---- the checkpoints ----

def make_dtypes(man, g):
    d = collections.OrderedDict()
    d["f32"] = torch.randn(3, 5, generator=g)
    d["f64"] = torch.randn(4, 2, generator=g, dtype=torch.float64)
    d["f16"] = torch.randn(2, 3, 4, generator=g).half()
    d["bf16"] = torch.randn(7, generator=g).bfloat16()
    d["i64"] = torch.tensor([-(2 ** 62), -1, 0, 1, 2 ** 62 + 5], dtype=torch.int64)
    d["i32"] = torch.tensor([[-(2 ** 31), 7], [2 ** 31 - 1, -3]], dtype=torch.int32)
    d["i16"] = torch.tensor([-32768, -2, 300, 32767], dtype=torch.int16)
    d["i8"] = torch.tensor([-128, -1, 0, 127], dtype=torch.int8)
    d["u8"] = torch.tensor([0, 1, 128, 255], dtype=torch.uint8)
    d["bool"] = torch.tensor([[True, False, True], [False, False, True]])
    # Special floats: the bits must pass through untouched.
    d["f32_special"] = torch.tensor([float("inf"), float("-inf"), float("nan"), -0.0, 1e-45])
    save(man, "dtypes.pth", d)
    # Types only newer torch has; a separate file so every version has dtypes.pth.
    extra = collections.OrderedDict()
    for attr in ("float8_e4m3fn", "float8_e5m2"):
        if hasattr(torch, attr):
            extra[attr] = torch.tensor([0.5, -1.0, 2.0, 448.0 if attr.endswith("fn") else 57344.0,
                                        0.0]).to(getattr(torch, attr))
    for attr, vals in (("uint16", [0, 1, 65535]), ("uint32", [0, 7, 2 ** 32 - 1]),
                       ("uint64", [0, 9, 2 ** 62 + 3])):
        if hasattr(torch, attr):
            extra[attr] = torch.tensor(vals, dtype=torch.int64).to(getattr(torch, attr))
    if extra:
        save(man, "dtypes_extra.pth", extra)


def make_float8_more(man, g):
    """The 8-bit floats safetensors added after E4M3/E5M2 (its F8_E4M3FNUZ, F8_E5M2FNUZ,
    F8_E8M0), in a file of their own: the FNUZ pair with their largest values and the one
    NaN (0x80), and E8M0 MX scales from 2^-127 to 2^127 with its NaN (0xff)."""
    d = collections.OrderedDict()
    for attr, top in (("float8_e4m3fnuz", 240.0), ("float8_e5m2fnuz", 57344.0)):
        if hasattr(torch, attr):
            v = torch.cat([torch.tensor([0.5, -1.0, 2.0, top, -top, 0.0]),
                           torch.randn(10, generator=g)]).to(getattr(torch, attr))
            v.view(torch.uint8)[5] = 0x80                        # NaN, the only one
            d[attr] = v
    if hasattr(torch, "float8_e8m0fnu"):
        d["float8_e8m0fnu"] = torch.tensor([0, 1, 126, 127, 128, 254, 255, 131],
                                           dtype=torch.uint8).view(torch.float8_e8m0fnu)
    if d:
        save(man, "float8_more.pth", d)


def make_unusual(man, g):
    """Tensors a plain reader gets wrong: a negated view (torch stores the
    original bytes plus metadata {'neg': True}; loading negates) and complex."""
    x = torch.randn(2, 3, generator=g)
    if hasattr(torch, "_neg_view"):
        d = collections.OrderedDict([("plain", x), ("neg", torch._neg_view(x))])
        try:
            save(man, "neg_view.pth", d)
        except AssertionError:
            # torch 1.13 drops the neg bit when saving: its own load gives +x.
            os.unlink(os.path.join(OUTDIR, "neg_view.pth"))
            print(f"skip neg_view.pth: torch {VERSION} does not round-trip a negated view")
    save(man, "complex.pth", collections.OrderedDict(
        [("c64", torch.complex(torch.randn(3, generator=g), torch.randn(3, generator=g)))]))


def make_nocrc(man, g):
    """torch.save with torch.utils.serialization.config.save.compute_crc32 = False (torch
    2.7 and later): every entry's CRC-32 is written as 0, and torch.load accepts the
    file. A contiguous tensor (read by a plain copy) and a transposed view of it (read
    element by element) take both of a reader's paths."""
    try:
        from torch.utils.serialization import config as cfg
    except ImportError:
        cfg = None
    if cfg is None or not hasattr(cfg.save, "compute_crc32"):
        print(f"skip nocrc.pth: torch {VERSION} always writes the CRC-32")
        return
    old = cfg.save.compute_crc32
    cfg.save.compute_crc32 = False
    try:
        w = torch.randn(4, 6, generator=g)
        d = collections.OrderedDict([("w", w), ("w_t", w.t()),
                                     ("b", torch.randn(6, generator=g).bfloat16())])
        path = save(man, "nocrc.pth", d)
    finally:
        cfg.save.compute_crc32 = old
    with zipfile.ZipFile(path) as z:
        assert all(i.CRC == 0 for i in z.infolist() if i.file_size), path


def make_shared(man, g):
    base = torch.randn(64, generator=g)
    emb = torch.randn(10, 4, generator=g)
    d = collections.OrderedDict()
    d["head"] = base[0:16]                 # offset 0
    d["tail"] = base[16:48]                # same storage, offset 16
    d["grid"] = base.view(8, 8)            # the whole storage, 2-D
    d["odd"] = base[40:64:3]               # strided, offset 40
    d["embed.weight"] = emb                # tied weights: one tensor, two names
    d["lm_head.weight"] = emb
    d["lone"] = torch.arange(6, dtype=torch.int32)
    save(man, "shared.pth", d)


def make_noncontig(man, g):
    d = collections.OrderedDict()
    d["transposed"] = torch.randn(5, 7, generator=g).t()
    d["sliced"] = torch.randn(6, 8, generator=g)[:, 1:7:2]
    d["permuted"] = torch.randn(2, 3, 4, generator=g).permute(2, 0, 1)
    d["expanded"] = torch.randn(3, 1, generator=g).expand(3, 4)         # stride 0
    d["channels_last"] = torch.randn(2, 3, 4, 5, generator=g).to(memory_format=torch.channels_last)
    d["bf16_t"] = torch.randn(4, 6, generator=g).bfloat16().t()
    d["i16_rows"] = torch.arange(40, dtype=torch.int16).view(8, 5)[1::2]
    save(man, "noncontig.pth", d)


class TinyBlock(torch.nn.Module):
    """A llama-shaped toy: embedding, one attention + gated MLP block, norm, tied head."""

    def __init__(self, vocab=32, dim=16, ffn=24):
        super().__init__()
        self.embed_tokens = torch.nn.Embedding(vocab, dim)
        self.q_proj = torch.nn.Linear(dim, dim, bias=False)
        self.k_proj = torch.nn.Linear(dim, dim // 2, bias=False)
        self.v_proj = torch.nn.Linear(dim, dim // 2, bias=False)
        self.o_proj = torch.nn.Linear(dim, dim, bias=False)
        self.gate_proj = torch.nn.Linear(dim, ffn, bias=False)
        self.up_proj = torch.nn.Linear(dim, ffn, bias=False)
        self.down_proj = torch.nn.Linear(ffn, dim, bias=False)
        self.norm = torch.nn.LayerNorm(dim)
        self.lm_head = torch.nn.Linear(dim, vocab, bias=False)
        self.lm_head.weight = self.embed_tokens.weight
        self.register_buffer("inv_freq", 1.0 / (10000 ** (torch.arange(0, dim, 2).float() / dim)))


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(6, 12)
        self.fc2 = torch.nn.Linear(12, 3)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


def make_modules(man):
    torch.manual_seed(1)
    mlp = MLP()
    save(man, "mlp.pth", mlp.state_dict())
    torch.manual_seed(2)
    blk = TinyBlock()
    save(man, "tiny_llama.pth", blk.state_dict())
    # nn.Parameter objects (REDUCE _rebuild_parameter), one carrying Python state
    # (_rebuild_parameter_with_state).
    params = collections.OrderedDict(mlp.named_parameters())
    params["fc1.weight"].lc_note = "tagged"
    if check_params_roundtrip(params):
        save(man, "params.pth", params)
    # A training checkpoint: the state dict nested next to an optimizer and scalars.
    opt = torch.optim.Adam(mlp.parameters(), lr=1e-3)
    mlp(torch.randn(4, 6)).sum().backward()
    opt.step()
    ckpt = {"model": mlp.state_dict(), "optimizer": opt.state_dict(),
            "epoch": 5, "step": 123, "best": 0.5}
    save(man, "checkpoint.pth", ckpt)
    return mlp


def check_params_roundtrip(params):
    buf = io.BytesIO()
    try:
        torch.save(params, buf)
    except Exception as e:  # an old torch may not pickle parameter state
        print(f"skip params.pth: {e}")
        return False
    return True


def make_scalars(man):
    d = collections.OrderedDict()
    d["f32_scalar"] = torch.tensor(3.5)
    d["i64_scalar"] = torch.tensor(-7)
    d["bool_scalar"] = torch.tensor(True)
    d["empty"] = torch.zeros(0)
    d["empty_rows"] = torch.zeros(0, 4, dtype=torch.float16)
    d["empty_cols"] = torch.zeros(3, 0, dtype=torch.int32)
    save(man, "scalars_empty.pth", d)


def make_legacy(man, g):
    base = torch.randn(12, generator=g)
    d = collections.OrderedDict()
    d["w"] = torch.randn(4, 3, generator=g)
    d["h"] = torch.randn(2, 5, generator=g).half()
    d["b"] = torch.randn(3, generator=g).bfloat16()
    d["i"] = torch.arange(5, dtype=torch.int64)
    d["view_a"] = base[:6]
    d["view_b"] = base[6:].view(2, 3)
    d["t"] = torch.randn(3, 4, generator=g).t()
    save(man, "legacy.pth", d, _use_new_zipfile_serialization=False)


def rezip(src, dst, method):
    """Copies a torch zip entry by entry into a plain Python zipfile archive."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", method) as zout:
        for info in zin.infolist():
            data = zin.read(info.filename)
            zi = zipfile.ZipInfo(info.filename, date_time=(2020, 1, 1, 0, 0, 0))
            zi.compress_type = method
            zout.writestr(zi, data)


def make_deflated(man):
    src = os.path.join(OUTDIR, "tiny_llama.pth")
    dst = os.path.join(OUTDIR, "tiny_llama_deflate.pth")
    rezip(src, dst, zipfile.ZIP_DEFLATED)
    obj = load(src)
    verify_roundtrip(dst, obj)
    man.add_file(rel(dst), "torch.save + zipfile.ZIP_DEFLATED (scripts/make_torch_fixtures.py)")
    man.add_tensors(rel(dst), obj)


def make_big_endian(man, g):
    """torch.save output re-packed the way a big-endian host writes it.

    No big-endian host here, so: take torch's own file, byte-swap every storage
    by its element size, set byteorder to 'big', and accept the result only if
    torch.load (which byte-swaps 'big' storages on a little-endian host) returns
    exactly the original tensors."""
    d = collections.OrderedDict()
    d["f32"] = torch.randn(3, 4, generator=g)
    d["f16"] = torch.randn(5, generator=g).half()
    d["bf16"] = torch.randn(2, 3, generator=g).bfloat16()
    d["f64"] = torch.randn(2, generator=g, dtype=torch.float64)
    d["i64"] = torch.tensor([1, -2, 2 ** 40])
    d["i32_t"] = torch.arange(6, dtype=torch.int32).view(2, 3).t()
    d["u8"] = torch.tensor([1, 2, 254], dtype=torch.uint8)
    src_buf = io.BytesIO()
    torch.save(d, src_buf)
    sizes = storage_sizes(d)
    dst = os.path.join(OUTDIR, "big_endian.pth")
    with zipfile.ZipFile(io.BytesIO(src_buf.getvalue())) as zin:
        names = zin.namelist()
    if not any(n.endswith("/byteorder") for n in names):
        # Such a torch also ignores the record when loading, so no faithful copy exists.
        print("skip big_endian.pth: this torch writes no byteorder record")
        return
    with zipfile.ZipFile(io.BytesIO(src_buf.getvalue())) as zin, \
            zipfile.ZipFile(dst, "w", zipfile.ZIP_STORED) as zout:
        for n in names:
            data = zin.read(n)
            leaf = n.split("/", 1)[1]
            if leaf == "byteorder":
                data = b"big"
            elif leaf.startswith("data/"):
                data = byteswap(data, sizes[leaf[5:]])
            zi = zipfile.ZipInfo(n, date_time=(2020, 1, 1, 0, 0, 0))
            zout.writestr(zi, data)
    try:
        verify_roundtrip(dst, d)
    except Exception as e:
        os.unlink(dst)
        print(f"skip big_endian.pth: torch {VERSION} does not load it back faithfully ({e!r})")
        return
    man.add_file(rel(dst), "torch.save + byte swap to byteorder big (scripts/make_torch_fixtures.py)")
    man.add_tensors(rel(dst), d)


def storage_sizes(obj):
    """storage key -> element size, from torch's own pickle of obj."""
    sizes = {}

    buf = io.BytesIO()
    torch.save(obj, buf)
    with zipfile.ZipFile(io.BytesIO(buf.getvalue())) as z:
        pkl = [n for n in z.namelist() if n.endswith("/data.pkl")][0]
        data = z.read(pkl)
    import pickle

    class U(pickle.Unpickler):
        def find_class(self, mod, name):
            if mod == "torch" and name.endswith("Storage"):
                return getattr(torch, name)
            if mod == "torch._utils":
                return lambda *a, **k: None
            if mod == "collections" and name == "OrderedDict":
                return collections.OrderedDict
            raise pickle.UnpicklingError(f"{mod}.{name}")

        def persistent_load(self, pid):
            _, cls, key, _, _ = pid
            sizes[key] = cls(0).element_size() if cls is not torch.UntypedStorage else 1
            return None
    U(io.BytesIO(data)).load()
    return sizes


def byteswap(data, size):
    if size == 1:
        return data
    fmt = {2: "H", 4: "I", 8: "Q"}[size]
    n = len(data) // size
    return struct.pack(">" + fmt * n, *struct.unpack("<" + fmt * n, data))


def make_sharded(man, g):
    folder = os.path.join(OUTDIR, "sharded")
    os.makedirs(folder, exist_ok=True)
    torch.manual_seed(3)
    sd = TinyBlock().state_dict()
    names = list(sd)
    shards = [names[: len(names) // 2], names[len(names) // 2:]]
    weight_map, total = {}, 0
    for i, part in enumerate(shards, 1):
        fname = f"pytorch_model-{i:05d}-of-{len(shards):05d}.bin"
        piece = collections.OrderedDict((n, sd[n]) for n in part)
        save(man, os.path.join("sharded", fname), piece)
        for n in part:
            weight_map[n] = fname
            total += sd[n].numel() * sd[n].element_size()
    index = {"metadata": {"total_size": total}, "weight_map": weight_map}
    path = os.path.join(folder, "pytorch_model.bin.index.json")
    with open(path, "w") as f:
        json.dump(index, f, indent=2, sort_keys=True)
        f.write("\n")
    man.add_file(rel(path), "scripts/make_torch_fixtures.py")


def make_meta(man, g):
    """Meta's consolidated.00.pth layout (llama reference repo names), bf16."""
    dim, layers, heads, vocab, ffn = 16, 2, 4, 32, 48
    sd = collections.OrderedDict()
    sd["tok_embeddings.weight"] = torch.randn(vocab, dim, generator=g).bfloat16()
    for i in range(layers):
        p = f"layers.{i}."
        for w in ("wq", "wk", "wv", "wo"):
            sd[p + f"attention.{w}.weight"] = torch.randn(dim, dim, generator=g).bfloat16()
        sd[p + "feed_forward.w1.weight"] = torch.randn(ffn, dim, generator=g).bfloat16()
        sd[p + "feed_forward.w2.weight"] = torch.randn(dim, ffn, generator=g).bfloat16()
        sd[p + "feed_forward.w3.weight"] = torch.randn(ffn, dim, generator=g).bfloat16()
        sd[p + "attention_norm.weight"] = torch.ones(dim).bfloat16()
        sd[p + "ffn_norm.weight"] = torch.ones(dim).bfloat16()
    sd["norm.weight"] = torch.ones(dim).bfloat16()
    sd["output.weight"] = torch.randn(vocab, dim, generator=g).bfloat16()
    save(man, os.path.join("meta", "consolidated.00.pth"), sd)
    params = {"dim": dim, "multiple_of": 16, "n_heads": heads, "n_layers": layers,
              "norm_eps": 1e-05, "vocab_size": vocab}
    path = os.path.join(OUTDIR, "meta", "params.json")
    with open(path, "w") as f:
        json.dump(params, f)
    man.add_file(rel(path), "scripts/make_torch_fixtures.py")


# ---- hostile checkpoints (fixtures/bad/pth) ----

MARKER = "LC_PWNED_"


def pkl_str(s):
    b = s.encode()
    return b"X" + struct.pack("<I", len(b)) + b           # BINUNICODE


def hostile_pickle(module, name, args_pickle):
    """A protocol-2 pickle of {'weight': <real tensor>, 'x': module.name(*args)}.

    The tensor part uses torch's own rebuild call so the file looks like any
    checkpoint to a loader; the dict entry calls the hostile global."""
    p = b"\x80\x02}q\x00("                                   # PROTO 2, EMPTY_DICT, MARK
    p += pkl_str("weight")
    p += b"ctorch._utils\n_rebuild_tensor_v2\n"
    p += b"(" + b"(" + pkl_str("storage") + b"ctorch\nFloatStorage\n" + pkl_str("0") + \
        pkl_str("cpu") + b"K\x04tQ"                           # BINPERSID of the tuple
    p += b"K\x00" + b"K\x04\x85" + b"K\x01\x85" + b"\x89" + b"ccollections\nOrderedDict\n)R"
    p += b"tR"                                               # args tuple, REDUCE
    p += pkl_str("x")
    p += f"c{module}\n{name}\n".encode() + args_pickle + b"R"
    p += b"u."                                               # SETITEMS, STOP
    return p


def torch_zip(path, pkl, local_name=None):
    """Writes archive/{data.pkl,data/0,byteorder,version} like torch does (stored).

    local_name: if given, the local header of data.pkl says this name while the
    central directory says archive/data.pkl."""
    entries = [("archive/data.pkl", pkl),
               ("archive/byteorder", b"little"),
               ("archive/data/0", struct.pack("<4f", 1.0, 2.0, 3.0, 4.0)),
               ("archive/version", b"3\n")]
    out = bytearray()
    central = bytearray()
    for name, data in entries:
        crc = zlib.crc32(data) & 0xFFFFFFFF
        cname = name.encode()
        lname = local_name.encode() if (local_name and name.endswith("data.pkl")) else cname
        off = len(out)
        out += struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, 0, 0, 0x21,
                           crc, len(data), len(data), len(lname), 0) + lname + data
        central += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, 0, 0, 0, 0x21,
                               crc, len(data), len(data), len(cname), 0, 0, 0, 0, 0, off) + cname
    cd_off = len(out)
    out += central
    out += struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(entries), len(entries),
                       len(central), cd_off, 0)
    with open(path, "wb") as f:
        f.write(out)


def make_hostile(man):
    bad = os.path.join(FIX, "bad", "pth")
    os.makedirs(bad, exist_ok=True)
    cases = {
        "forbidden-os_system.bin":
            hostile_pickle("os", "system", b"(" + pkl_str(f"touch {MARKER}os_system") + b"t"),
        "forbidden-builtins_eval.bin":
            hostile_pickle("builtins", "eval",
                           b"(" + pkl_str(f"open('{MARKER}builtins_eval','w').close()") + b"t"),
        "forbidden-subprocess_popen.bin":
            hostile_pickle("subprocess", "Popen",
                           b"((" + pkl_str("touch") + pkl_str(f"{MARKER}subprocess_popen") + b"lt"),
    }
    for fname, pkl in cases.items():
        torch_zip(os.path.join(bad, fname), pkl)
    # Central directory says archive/data.pkl, the local header says another name.
    # Python's zipfile refuses this; torch's miniz reader does not look.
    fname = "malformed-zip_name_mismatch.bin"
    torch_zip(os.path.join(bad, fname),
              hostile_pickle("os", "system", b"(" + pkl_str(f"touch {MARKER}name_mismatch") + b"t"),
              local_name="archive/notes.txt")
    for fname in list(cases) + [fname]:
        path = os.path.join(bad, fname)
        man.add_file(rel(path), "scripts/make_torch_fixtures.py (hand-built pickle)")
        print(f"{fname}: {prove_live(path)}")


def prove_live(path):
    """Loads the file with torch.load(weights_only=False) in a scratch dir: the
    payload must run there (so the fixture is a real threat), and weights_only
    must refuse it."""
    code = ("import sys,torch\n"
            "try:\n torch.load(sys.argv[1], weights_only=True); print('wo-loaded')\n"
            "except Exception as e: print('wo-refused')\n"
            "try:\n torch.load(sys.argv[1], weights_only=False); print('loaded')\n"
            "except Exception as e: print('error', type(e).__name__)\n")
    with tempfile.TemporaryDirectory() as d:
        r = subprocess.run([sys.executable, "-c", code, os.path.abspath(path)], cwd=d,
                           capture_output=True, text=True, timeout=120)
        import time
        time.sleep(0.3)  # Popen's child may still be running
        made = [f for f in os.listdir(d) if f.startswith(MARKER)]
    return f"torch {VERSION}: {' '.join(r.stdout.split())}; marker {'CREATED' if made else 'absent'}"


# ---- manifests ----

def write_tsv(path, header, rows, keep):
    old = []
    if os.path.exists(path):
        with open(path) as f:
            lines = f.read().splitlines()
        if lines and lines[0].split("\t") == header:
            old = [ln.split("\t") for ln in lines[1:] if ln]
    rows = [r for r in old if keep(r)] + [list(r) for r in rows]
    rows.sort(key=lambda r: r[0])
    with open(path, "w") as f:
        f.write("\t".join(header) + "\n")
        for r in rows:
            f.write("\t".join(r) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--hostile", action="store_true", help="also write fixtures/bad/pth/")
    a = ap.parse_args()
    man = Manifest()
    g = torch.Generator().manual_seed(20260101)
    os.makedirs(OUTDIR, exist_ok=True)
    make_dtypes(man, g)
    make_shared(man, g)
    make_noncontig(man, g)
    make_modules(man)
    make_scalars(man)
    make_unusual(man, g)
    make_legacy(man, g)
    make_deflated(man)
    make_big_endian(man, g)
    make_sharded(man, g)
    make_meta(man, g)
    make_nocrc(man, torch.Generator().manual_seed(20261124))
    make_float8_more(man, torch.Generator().manual_seed(20261125))
    if a.hostile:
        make_hostile(man)
    mine = f"pth/{VERSION}/"
    tensors_tsv = os.path.join(FIX, "pth", "MANIFEST-tensors.tsv")
    write_tsv(tensors_tsv, ["file", "name", "dtype", "shape", "sha256", "storage", "torch_version"],
              man.tensor_rows, lambda r: not r[0].startswith(mine))
    # The tensor manifest is a fixture too: listed with every torch version it covers.
    with open(tensors_tsv) as f:
        versions = sorted({ln.split("\t")[6] for ln in f.read().splitlines()[1:] if ln})
    man.file_rows.append((rel(tensors_tsv), "scripts/make_torch_fixtures.py",
                          ",".join(f"torch={v}" for v in versions), sha256_file(tensors_tsv)))
    redo_bad = a.hostile
    write_tsv(os.path.join(FIX, "MANIFEST.tsv"), ["file", "producer", "producer_version", "sha256"],
              man.file_rows,
              lambda r: not r[0].startswith(mine) and r[0] != rel(tensors_tsv)
              # bad/pth/ is shared with scripts/make_hostile_pickles.py: only our rows
              and not (redo_bad and r[0].startswith("bad/pth/")
                       and r[1].startswith("scripts/make_torch_fixtures.py")))
    total = sum(os.path.getsize(os.path.join(dp, f)) for dp, _, fs in os.walk(OUTDIR) for f in fs)
    print(f"torch {VERSION}: {len(man.tensor_rows)} tensors in {OUTDIR} ({total} bytes)")


if __name__ == "__main__":
    main()
