"""libconvert.open() against the real producers' readers, fixture by fixture: safetensors'
safe_open, gguf-py's GGUFReader, and for PyTorch checkpoints the sha256 of torch's own
contiguous bytes (fixtures/pth/MANIFEST-tensors.tsv, as test_pth.py checks the reader);
zero-copy views where the bytes are stored as numpy reads them."""
import hashlib
import json
import struct

import numpy as np
import pytest
from gguf import GGUFReader, GGUFValueType
from safetensors import safe_open

from pth_manifest import pth_manifest
from pylc import FIX, libconvert as lc

ST_FILES = sorted(FIX.glob("safetensors/*.safetensors")) + sorted(FIX.glob("gguf/*.safetensors"))
GGUF_FILES = sorted(FIX.glob("gguf/*.gguf")) + sorted(FIX.glob("hf-ref/*.gguf"))
MANIFEST = pth_manifest()


def st_raw(path):
    """name -> (dtype, shape, bytes) straight from the file, by the format's own rules."""
    b = path.read_bytes()
    n = struct.unpack("<Q", b[:8])[0]
    hdr = json.loads(b[8:8 + n])
    hdr.pop("__metadata__", None)
    return {k: (v["dtype"], tuple(v["shape"]), b[8 + n + v["data_offsets"][0]:
                                               8 + n + v["data_offsets"][1]])
            for k, v in hdr.items()}


def assert_view(a):
    """A read-only view of the mapping, not a copy."""
    assert not a.flags.writeable
    assert not a.flags.owndata or a.size == 0


def check_safetensors(m, path_or_files):
    files = path_or_files if isinstance(path_or_files, list) else [path_or_files]
    seen = {}
    meta = {}
    for f in files:
        raw = st_raw(f)
        with safe_open(str(f), framework="np") as s:
            meta.update(s.metadata() or {})
            for k in s.keys():
                dtype, shape, data = raw[k]
                got = m.tensor(k)
                info = m.tensors[k]
                assert (info.dtype, info.shape, info.nbytes) == (dtype, shape, len(data)), k
                assert got.shape == shape and got.tobytes() == data, k
                assert_view(got)
                try:
                    want = s.get_tensor(k)
                except (TypeError, AttributeError):   # bf16, f8: numpy has no such dtype
                    assert got.dtype.name in ("bfloat16", "float8_e4m3fn", "float8_e5m2"), k
                else:
                    assert got.dtype == want.dtype and got.shape == want.shape, k
                    np.testing.assert_array_equal(got, want)
                seen[k] = True
    assert set(seen) == set(m.tensors)
    assert m.metadata == meta


@pytest.mark.parametrize("path", ST_FILES, ids=lambda p: p.name)
def test_safetensors_files_equal_safe_open(path):
    with lc.open(path) as m:
        assert m.format == "safetensors"
        check_safetensors(m, path)


@pytest.mark.parametrize("folder", ["safetensors/sharded", "hf/llama-bpe", "hf/mixtral"])
def test_sharded_folders_equal_safe_open(folder):
    d = FIX / folder
    with lc.open(d) as m:
        assert m.format == "safetensors-sharded"
        check_safetensors(m, sorted(d.glob("*.safetensors")))
        if (d / "config.json").is_file():
            assert m.config == json.loads((d / "config.json").read_text())


def flatten(v):
    """gguf-py's contents() flattens arrays of arrays; so does this, for comparing."""
    if isinstance(v, list) and v and isinstance(v[0], list):
        return [x for i in v for x in flatten(i)]
    return v


def gguf_type_name(types):
    names = {GGUFValueType.UINT8: "u8", GGUFValueType.INT8: "i8", GGUFValueType.UINT16: "u16",
             GGUFValueType.INT16: "i16", GGUFValueType.UINT32: "u32", GGUFValueType.INT32: "i32",
             GGUFValueType.FLOAT32: "f32", GGUFValueType.BOOL: "bool",
             GGUFValueType.STRING: "string", GGUFValueType.UINT64: "u64",
             GGUFValueType.INT64: "i64", GGUFValueType.FLOAT64: "f64"}
    if types[0] == GGUFValueType.ARRAY:
        return f"array[{gguf_type_name(types[1:]) if len(types) > 1 else '?'}]"
    return names[types[0]]


def plain(v):
    if isinstance(v, np.ndarray):
        return v.tolist()
    if isinstance(v, list):
        return [plain(i) for i in v]
    return v


@pytest.mark.parametrize("path", GGUF_FILES, ids=lambda p: p.name)
def test_gguf_equals_gguf_reader(path):
    r = GGUFReader(str(path))
    with lc.open(path) as m:
        assert m.format == "gguf"
        fields = {k: f for k, f in r.fields.items() if not k.startswith("GGUF.")}
        assert list(m.metadata) == list(fields)
        for k, f in fields.items():
            # gguf-py gives an empty array no item type; ours says what the file says.
            ours, theirs = m.metadata_types[k], gguf_type_name(f.types)
            assert ours == theirs or ("?" in theirs and
                                      ours.startswith(theirs.split("?")[0])), k
            got = flatten(plain(m.metadata[k]))
            want = f.contents()
            if isinstance(want, float) or (isinstance(want, list) and want and
                                          isinstance(want[0], float)):
                np.testing.assert_array_equal(np.float64(got), np.float64(want), err_msg=k)
            else:
                assert got == want, k
        assert list(m.tensors) == [t.name for t in r.tensors]
        for t in r.tensors:
            info = m.tensors[t.name]
            assert lc.DType.__name__ and info.shape == tuple(int(x) for x in t.shape[::-1])
            assert lc._dtypes.BY_NAME[info.dtype].gguf_id == int(t.tensor_type), t.name
            got = m.tensor(t.name)
            assert_view(got)
            if info.dtype == "BF16":    # numpy has no bf16: gguf-py gives its bytes
                assert got.dtype.name == "bfloat16" and t.data.dtype == np.uint8
                assert got.shape[:-1] == t.data.shape[:-1]
                assert got.shape[-1] * 2 == t.data.shape[-1]
            else:
                assert got.dtype == t.data.dtype and got.shape == t.data.shape, t.name
            assert got.tobytes() == t.data.tobytes(), t.name


def test_gguf_quantized_raw_and_dequantized():
    from gguf.quants import dequantize
    path = FIX / "hf-ref" / "llama-bpe-q8_0.gguf"
    r = GGUFReader(str(path))
    with lc.open(path) as m:
        for t in r.tensors:
            if t.tensor_type.name != "Q8_0":
                continue
            raw = m.tensor(t.name)
            assert raw.dtype == np.uint8 and raw.tobytes() == t.data.tobytes()
            deq = m.tensor(t.name, dequantize=True)
            assert deq.dtype == np.float32 and deq.shape == m.tensors[t.name].shape
            np.testing.assert_array_equal(deq, dequantize(t.data, t.tensor_type))


def test_gguf_split_reads_every_part(tmp_path):
    """The first part of a gguf-split set opens as the whole model."""
    import subprocess
    from pylc import BIN
    src = FIX / "hf-ref" / "qwen2-f16.gguf"
    r = subprocess.run([str(BIN / "gguf-split"), "--split-max-tensors", "7", str(src),
                        str(tmp_path / "m")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    parts = sorted(tmp_path.glob("m-*.gguf"))
    assert len(parts) > 2
    with lc.open(parts[0]) as split, lc.open(src) as whole:
        assert split.format == "gguf-split"
        assert list(split.tensors) == list(whole.tensors)
        for k in whole.tensors:
            assert split.tensor(k).tobytes() == whole.tensor(k).tobytes()
        for k, v in whole.metadata.items():
            assert k in split.metadata or k.startswith("split.")


def pth_rels():
    return [r for r in MANIFEST if not r.endswith("complex.pth") and "/sharded/" not in r]


def sha(a):
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()


@pytest.mark.parametrize("rel", pth_rels())
def test_pth_equals_torch(rel):
    """Every tensor torch.save wrote: names in pickle order, dtype, shape and the sha256
    of torch's t.contiguous() bytes; stored contiguous storages are views."""
    with lc.open(FIX / rel, key=".") as m:
        assert m.format == "pth"
        want = MANIFEST[rel]
        assert list(m.tensors) == [w["name"] for w in want]
        for w in want:
            info = m.tensors[w["name"]]
            shape = tuple(int(x) for x in w["shape"].split(",")) if w["shape"] else ()
            assert (info.dtype, info.shape) == (w["dtype"], shape), w["name"]
            a = m.tensor(w["name"])
            assert a.shape == shape
            assert sha(a) == w["sha256"], w["name"]


@pytest.mark.parametrize("ver", sorted({r.split("/")[1] for r in MANIFEST}))
def test_pth_sharded_folder_and_views(ver):
    d = FIX / "pth" / ver / "sharded"
    want = {w["name"]: w for r, ws in MANIFEST.items() if r.startswith(f"pth/{ver}/sharded/")
            for w in ws}
    with lc.open(d) as m:
        assert m.format == "pth-sharded"
        assert set(m.tensors) == set(want)
        for k, w in want.items():
            assert sha(m.tensor(k)) == w["sha256"], k
    with lc.open(FIX / "pth" / ver / "mlp.pth") as m:
        for k in m.tensors:
            assert_view(m.tensor(k))          # stored, contiguous, little-endian: a view
    with lc.open(FIX / "pth" / ver / "noncontig.pth", key=".") as m:
        strided = [k for k in m.tensors if m.tensor(k).flags.writeable]
        assert strided, "a strided tensor is gathered into an array of its own"


def test_pth_checkpoint_key_and_scalars():
    with lc.open(FIX / "pth" / "2.15.0" / "checkpoint.pth") as m:
        assert all(not k.startswith("optimizer") for k in m.tensors)
        assert m.metadata == {"epoch": 5, "step": 123, "best": 0.5}
        assert m.metadata_types == {"epoch": "i64", "step": "i64", "best": "f64"}
    with lc.open(FIX / "pth" / "2.15.0" / "checkpoint.pth", key="optimizer.state") as m:
        assert len(m.tensors) > 0


def test_hf_folder_with_one_weights_file():
    d = FIX / "hf" / "llama-pth"
    with lc.open(d) as m:
        assert m.format == "pth" and m.config["model_type"] == "llama"
        assert "model.embed_tokens.weight" in m


def test_views_outlive_close():
    """An array handed out keeps its file mapped after close(); the model refuses new
    reads."""
    path = FIX / "safetensors" / "tiny_llama.safetensors"
    m = lc.open(path)
    name = next(iter(m.tensors))
    a = m.tensor(name)
    copy = a.copy()
    m.close()
    assert m.closed
    import gc
    gc.collect()
    np.testing.assert_array_equal(a, copy)
    with pytest.raises((ValueError, KeyError)):
        m.tensor(name)
    with pytest.raises(ValueError):
        a[...] = 0


def test_missing_tensor_and_file():
    with lc.open(FIX / "safetensors" / "tiny_llama.safetensors") as m:
        with pytest.raises(KeyError):
            m.tensor("nope")
    with pytest.raises(lc.NotFoundError) as e:
        lc.open(FIX / "does-not-exist.safetensors")
    assert e.value.path.endswith("does-not-exist.safetensors")


def rss_kib():
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))


def test_tensor_is_zero_copy_until_touched(tmp_path):
    """open() and tensor() of a 256 MiB file read no tensor bytes: the resident set grows
    only when the array is touched, by the pages touched."""
    from safetensors.numpy import save_file
    path = tmp_path / "big.safetensors"
    save_file({"w": np.ones((64, 1 << 20), np.float32)}, str(path))
    import gc
    gc.collect()
    before = rss_kib()
    with lc.open(path) as m:
        a = m.tensor("w")
        assert a.nbytes == 256 << 20 and not a.flags.writeable
        assert rss_kib() - before < 16 << 10            # < 16 MiB for a 256 MiB tensor
        assert float(a[3, 5]) == 1.0
        assert rss_kib() - before < 16 << 10
        assert float(a[::8].sum(dtype=np.float64)) == 8 * (1 << 20)   # every 8th row
        assert rss_kib() - before > 24 << 10            # now the pages count
