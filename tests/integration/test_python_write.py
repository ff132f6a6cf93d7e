"""save_gguf and save_safetensors, byte for byte against gguf-py's GGUFWriter and
safetensors' save_file on the same input."""
import ml_dtypes
import numpy as np
import pytest
from gguf import GGMLQuantizationType as Q
from gguf import GGUFValueType as V
from gguf import GGUFWriter
from safetensors.numpy import save_file

from pylc import FIX, libconvert as lc


def gguf_py(path, arch, kvs, tensors, raw=None):
    """GGUFWriter with the keys in order: (key, value, GGUFValueType or None, sub)."""
    w = GGUFWriter(str(path), arch)
    for key, val, vt, sub in kvs:
        if vt is None:
            w.add_key_value(key, val, V.get_type(val))
        else:
            w.add_key_value(key, val, vt, sub)
    for name, a in tensors.items():
        if raw and name in raw:
            w.add_tensor(name, a, raw_dtype=raw[name])
        else:
            w.add_tensor(name, a)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path.read_bytes()


def test_save_gguf_equals_gguf_writer_values_and_tensors(tmp_path):
    rng = np.random.default_rng(0)
    tensors = {
        "f32": rng.standard_normal((3, 5)).astype(np.float32),
        "f16": rng.standard_normal((7,)).astype(np.float16),
        "i8": rng.integers(-128, 127, (2, 3, 4), dtype=np.int8),
        "i16": rng.integers(-999, 999, (4,), dtype=np.int16),
        "i32": rng.integers(-999, 999, (2, 2), dtype=np.int32),
        "i64": rng.integers(-999, 999, (3,), dtype=np.int64),
        "f64": rng.standard_normal((1, 2, 3, 4)).astype(np.float64),
        "scalar_row": np.array([1.5], np.float32),
    }
    kvs = [
        ("t.int", 7, None, None), ("t.float", 0.25, None, None), ("t.bool", True, None, None),
        ("t.str", "héllo", None, None), ("t.list_int", [1, 2, 3], None, None),
        ("t.list_str", ["a", "bc", ""], None, None), ("t.list_float", [0.5, -1.0], None, None),
        ("t.nested", [[1, 2], [3]], None, None),
        ("t.u8", 200, V.UINT8, None), ("t.i8", -5, V.INT8, None), ("t.u16", 65535, V.UINT16, None),
        ("t.i16", -3, V.INT16, None), ("t.u32", 4000000000, V.UINT32, None),
        ("t.u64", 2**63 + 5, V.UINT64, None), ("t.i64", -2**40, V.INT64, None),
        ("t.f64", 1 / 3, V.FLOAT64, None), ("t.arr_u64", [1, 2**40], V.ARRAY, V.UINT64),
    ]
    want = gguf_py(tmp_path / "want.gguf", "llama", kvs, tensors)
    meta = {"general.architecture": "llama"}
    for key, val, vt, sub in kvs:
        meta[key] = val if vt is None else lc.Typed(val, int(vt), None if sub is None else int(sub))
    lc.save_gguf(tmp_path / "got.gguf", tensors, meta)
    assert (tmp_path / "got.gguf").read_bytes() == want


def test_save_gguf_numpy_types_and_names(tmp_path):
    """numpy scalars and arrays keep their type; type names may be spelled out."""
    kvs = [("a.u32", np.uint32(3), V.UINT32, None), ("a.f64", np.float64(2.5), V.FLOAT64, None),
           ("a.arr", [1, 2], V.ARRAY, V.INT16)]
    want = gguf_py(tmp_path / "want.gguf", "x", kvs, {})
    lc.save_gguf(tmp_path / "got.gguf", {}, {"general.architecture": "x",
                                             "a.u32": np.uint32(3), "a.f64": np.float64(2.5),
                                             "a.arr": np.array([1, 2], np.int16)})
    assert (tmp_path / "got.gguf").read_bytes() == want
    lc.save_gguf(tmp_path / "got2.gguf", {}, {"general.architecture": "x",
                                              "a.u32": lc.Typed(3, "u32"),
                                              "a.f64": lc.Typed(2.5, "f64"),
                                              "a.arr": lc.Typed([1, 2], "array", "i16")})
    assert (tmp_path / "got2.gguf").read_bytes() == want


@pytest.mark.parametrize("qtype", ["Q8_0", "Q4_0", "Q4_K", "Q6_K", "Q2_K"])
def test_save_gguf_quantized_equals_gguf_writer(tmp_path, qtype):
    x = np.random.default_rng(1).standard_normal((4, 512)).astype(np.float32)
    b = lc.quantize_array(x, qtype)
    tensors = {"norm": np.ones(512, np.float32), "w": b}
    want = gguf_py(tmp_path / "want.gguf", "llama", [], tensors, {"w": getattr(Q, qtype)})
    lc.save_gguf(tmp_path / "got.gguf", tensors, {"general.architecture": "llama"},
                 raw_dtypes={"w": qtype})
    assert (tmp_path / "got.gguf").read_bytes() == want


def test_save_gguf_round_trips_a_fixture(tmp_path):
    """What open() reads, save_gguf writes back: the same file, byte for byte."""
    src = FIX / "hf-ref" / "qwen2-q8_0.gguf"
    with lc.open(src) as m:
        raw = {k: i.dtype for k, i in m.tensors.items() if lc._dtypes.BY_NAME[i.dtype].quantized}
        meta = {k: lc.Typed(v, *_type_of(m.metadata_types[k])) for k, v in m.metadata.items()}
        lc.save_gguf(tmp_path / "back.gguf", {k: m.tensor(k) for k in m.tensors}, meta,
                     raw_dtypes=raw)
    assert (tmp_path / "back.gguf").read_bytes() == src.read_bytes()


def _type_of(name):
    if name.startswith("array["):
        return ("array", name[6:-1] if "[" not in name[6:-1] else "array")
    return (name,)


def test_save_gguf_refuses_bad_keys_and_shapes(tmp_path):
    with pytest.raises(lc.MalformedError):
        lc.save_gguf(tmp_path / "x.gguf", {}, {"": 1})
    with pytest.raises(ValueError, match="whole 18-byte blocks"):
        lc.save_gguf(tmp_path / "x.gguf", {"w": np.zeros((4, 40), np.uint8)}, {},
                     raw_dtypes={"w": "Q4_0"})
    with pytest.raises(lc.UnsupportedError) as e:     # the writer's own refusal
        lc.save_gguf(tmp_path / "x.gguf", {"w" * 64: np.zeros(4, np.float32)}, {})
    assert e.value.where == "w" * 64
    assert not (tmp_path / "x.gguf").exists()


def test_save_safetensors_equals_save_file(tmp_path):
    rng = np.random.default_rng(2)
    tensors = {
        "b.f32": rng.standard_normal((3, 4)).astype(np.float32),
        "a.f32": rng.standard_normal((2,)).astype(np.float32),
        "f16": rng.standard_normal((5, 1)).astype(np.float16),
        "bf16": rng.standard_normal((6,)).astype(ml_dtypes.bfloat16),
        "f8": rng.standard_normal((6,)).astype(ml_dtypes.float8_e4m3fn),
        "i64": rng.integers(-9, 9, (2, 2)),
        "u8": rng.integers(0, 255, (3,), dtype=np.uint8),
        "bool": np.array([True, False, True]),
        "f64": np.array(2.5),                              # rank 0
        "empty": np.zeros((0, 3), np.float32),
        "noncontig": rng.standard_normal((4, 6)).astype(np.float32)[:, ::2],
        "big_endian": np.arange(5, dtype=">i4"),
    }
    meta = {"format": "np", "who": "me"}
    for md in (None, {"format": "np"}):
        # save_file wants C-contiguous little-endian arrays (ascontiguousarray would
        # make the rank-0 tensor rank 1)
        save_file({k: v.astype(v.dtype.newbyteorder("<"), order="C")
                   for k, v in tensors.items()}, str(tmp_path / "want.st"), metadata=md)
        lc.save_safetensors(tmp_path / "got.st", tensors, md)
        assert (tmp_path / "got.st").read_bytes() == (tmp_path / "want.st").read_bytes()
    lc.save_safetensors(tmp_path / "two.st", tensors, meta)
    with lc.open(tmp_path / "two.st") as m:
        assert m.metadata == meta
        for k, v in tensors.items():
            np.testing.assert_array_equal(m.tensor(k), v)


def test_save_safetensors_round_trips_fixtures(tmp_path):
    for src in sorted((FIX / "safetensors").glob("*.safetensors")):
        with lc.open(src) as m:
            if len(m.metadata) > 1:
                continue    # the reference orders several keys as a HashMap does
            lc.save_safetensors(tmp_path / "back.st", {k: m.tensor(k) for k in m.tensors},
                                m.metadata)
        assert (tmp_path / "back.st").read_bytes() == src.read_bytes(), src.name


def test_progress_callback(tmp_path):
    calls = []
    x = np.zeros((1024, 1024), np.float32)
    lc.save_safetensors(tmp_path / "p.st", {"x": x},
                        progress=lambda label, done, total: calls.append((label, done, total)))
    assert calls and calls[-1][1] == calls[-1][2] > 0
    assert "p.st" in calls[0][0]

    def boom(*a):
        raise RuntimeError("stop")
    with pytest.raises(RuntimeError, match="stop"):
        lc.save_safetensors(tmp_path / "q.st", {"x": x}, progress=boom)
