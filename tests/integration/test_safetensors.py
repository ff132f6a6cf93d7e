"""Oracle tests: our safetensors reader and writer against the reference
implementation (safetensors, the Rust library behind safetensors.numpy.save_file).

- every fixture the reference wrote reads back with identical names, dtypes,
  shapes, bytes and metadata (tests/tools/st-dump prints what we read);
- model-inspect --json agrees with the header as Python's json reads it;
- our rewrite of a reference file is byte-identical and loads in safe_open;
- a file whose header lists tensors in any order, with data in any order, is
  rewritten exactly as save_file writes the same tensors;
- every bad input fails with the code its name says, and the reference refuses it
  too, except the documented cases where we are stricter;
- sharded checkpoints: good, a missing tensor, an extra tensor.
"""
import glob, json, os, random, shutil, struct, subprocess

import numpy as np
import pytest
import safetensors
from safetensors import TensorSpec, serialize_file, safe_open
from safetensors.numpy import save_file

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIX = os.path.join(ROOT, "fixtures", "safetensors")
BAD = os.path.join(ROOT, "fixtures", "bad", "safetensors")
BIN = os.environ.get("LC_BIN", os.path.join(ROOT, "build", "bin"))
TBIN = os.environ.get("LC_TEST_BIN", os.path.join(ROOT, "build", "test-bin"))
FIXTURES = sorted(glob.glob(os.path.join(FIX, "*.safetensors")))
# Inputs the reference accepts and we refuse, on purpose (see formats/safetensors.h).
STRICTER = {"malformed-meta-duplicate-key", "malformed-meta-null", "malformed-unknown-field",
            "unsupported-dtype-f4", "unsupported-rank-9",
            # the README's MUSTs: the header begins with '{', is padded with 0x20 only
            "malformed-header-leading-space", "malformed-header-leading-newline",
            "malformed-header-tab-padding", "malformed-header-newline-padding"}


def run(*args, check=True):
    p = subprocess.run(list(args), capture_output=True, text=True)
    if check and p.returncode != 0:
        raise AssertionError(f"{args} failed ({p.returncode}): {p.stderr}{p.stdout}")
    return p


def our_dump(path):
    lines = run(os.path.join(TBIN, "st-dump"), path).stdout.splitlines()
    meta = json.loads(lines[0])["metadata"]
    tensors = {}
    for line in lines[1:]:
        t = json.loads(line)
        tensors[t["name"]] = (t["dtype"], list(t["shape"]), bytes.fromhex(t["hex"]))
    return meta, tensors


def reference(path):
    with open(path, "rb") as f:
        blob = f.read()
    tensors = {name: (d["dtype"], list(d["shape"]), bytes(d["data"]))
               for name, d in safetensors.deserialize(blob)}
    with safe_open(path, framework="numpy") as f:
        meta = f.metadata() or {}
    return meta, tensors


def header(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        return n, json.loads(f.read(n))


def test_fixtures_exist():
    assert len(FIXTURES) >= 5


@pytest.mark.parametrize("path", FIXTURES, ids=os.path.basename)
def test_readback_matches_reference(path):
    assert our_dump(path) == reference(path)


@pytest.mark.parametrize("path", FIXTURES, ids=os.path.basename)
def test_inspect_json_matches_header(path):
    d = json.loads(run(os.path.join(BIN, "model-inspect"), "--json", path).stdout)
    n, h = header(path)
    meta = h.pop("__metadata__", {})
    assert d["format"] == "safetensors"
    assert d["header_size"] == n and d["file_size"] == os.path.getsize(path)
    assert d["metadata"] == meta and list(d["metadata"]) == list(meta)
    assert [t["name"] for t in d["tensors"]] == list(h)  # header order kept
    for t in d["tensors"]:
        e = h[t["name"]]
        assert t["dtype"] == e["dtype"] and t["shape"] == e["shape"]
        assert t["offset"] == 8 + n + e["data_offsets"][0]
        assert t["nbytes"] == e["data_offsets"][1] - e["data_offsets"][0]


@pytest.mark.parametrize("path", FIXTURES, ids=os.path.basename)
def test_rewrite_is_identical_and_loads(path, tmp_path):
    out = str(tmp_path / "out.safetensors")
    run(os.path.join(BIN, "safetensors-rewrite"), "-q", path, out)
    with open(path, "rb") as a, open(out, "rb") as b:
        assert a.read() == b.read()
    assert reference(out) == reference(path)
    assert sorted(os.listdir(tmp_path)) == ["out.safetensors"]


DTYPES = [("float64", 8), ("float32", 4), ("float16", 2), ("bfloat16", 2), ("int64", 8),
          ("uint64", 8), ("int32", 4), ("uint32", 4), ("int16", 2), ("uint16", 2), ("int8", 1),
          ("uint8", 1), ("bool", 1), ("float8_e4m3fn", 1), ("float8_e5m2", 1),
          ("float8_e8m0fnu", 1), ("float8_e4m3fnuz", 1), ("float8_e5m2fnuz", 1)]
ST_NAME = {"float64": "F64", "float32": "F32", "float16": "F16", "bfloat16": "BF16",
           "int64": "I64", "uint64": "U64", "int32": "I32", "uint32": "U32", "int16": "I16",
           "uint16": "U16", "int8": "I8", "uint8": "U8", "bool": "BOOL",
           "float8_e4m3fn": "F8_E4M3", "float8_e5m2": "F8_E5M2", "float8_e8m0fnu": "F8_E8M0",
           "float8_e4m3fnuz": "F8_E4M3FNUZ", "float8_e5m2fnuz": "F8_E5M2FNUZ"}


def random_model(rng):
    alphabet = "abcXYZ._/09\u00e9\u6f22\"\\\n"
    tensors = {}
    while len(tensors) < rng.randint(1, 12):
        name = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 8)))
        dt, size = rng.choice(DTYPES)
        shape = [rng.randint(0, 3) for _ in range(rng.randint(0, 4))]
        numel = int(np.prod(shape)) if shape else 1
        data = bytes(rng.randint(0, 1) if dt == "bool" else rng.randint(0, 255)
                     for _ in range(numel * size))
        tensors[name] = (dt, shape, data)
    meta = rng.choice([None, {"format": "pt"}, {"k\u00e9y\n": "v\"al\\ue"}])
    return tensors, meta


def scrambled_file(path, tensors, meta, rng):
    """A valid file with the header in a random order and data in another order."""
    names = list(tensors)
    rng.shuffle(names)
    data_order = list(tensors)
    rng.shuffle(data_order)
    offs, pos, blob = {}, 0, b""
    for name in data_order:
        d = tensors[name][2]
        offs[name] = [pos, pos + len(d)]
        pos += len(d)
        blob += d
    h = {}
    if meta is not None and rng.random() < 0.5:
        h["__metadata__"] = meta
    for name in names:
        h[name] = {"data_offsets": offs[name], "shape": tensors[name][1],
                   "dtype": ST_NAME[tensors[name][0]]}
    if meta is not None and "__metadata__" not in h:
        h["__metadata__"] = meta  # metadata last: still one key, order-independent
    text = json.dumps(h, ensure_ascii=rng.random() < 0.5, indent=rng.choice([None, 1])).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + blob)


@pytest.mark.parametrize("seed", range(12))
def test_any_order_rewrites_like_save_file(seed, tmp_path):
    rng = random.Random(seed)
    tensors, meta = random_model(rng)
    want = str(tmp_path / "want.safetensors")
    keep = []
    specs = {}
    for name, (dt, shape, data) in tensors.items():
        buf = np.frombuffer(data, dtype=np.uint8).copy() if data else np.zeros(1, np.uint8)
        keep.append(buf)
        specs[name] = TensorSpec(dtype=dt, shape=shape, data_ptr=buf.ctypes.data,
                                 data_len=len(data))
    serialize_file(specs, want, metadata=meta)
    src = str(tmp_path / "src.safetensors")
    scrambled_file(src, tensors, meta, rng)
    out = str(tmp_path / "out.safetensors")
    run(os.path.join(BIN, "safetensors-rewrite"), "-q", src, out)
    with open(want, "rb") as a, open(out, "rb") as b:
        assert a.read() == b.read()


BAD_FILES = sorted(glob.glob(os.path.join(BAD, "*.bin")))


def test_bad_corpus_exists():
    assert len(BAD_FILES) >= 40


@pytest.mark.parametrize("path", BAD_FILES, ids=os.path.basename)
def test_bad_input_code(path):
    name = os.path.basename(path)[:-4]
    p = run(os.path.join(TBIN, "st-dump"), path, check=False)
    assert p.returncode == 1
    word, code, offset = p.stdout.split()
    assert word == "error" and code == name.split("-")[0], p.stdout
    assert offset != "-" and int(offset) <= max(os.path.getsize(path), 8)
    with open(path, "rb") as f:
        blob = f.read()
    if name in STRICTER:
        safetensors.deserialize(blob)  # the reference takes it; we refuse on purpose
    else:
        with pytest.raises(Exception):
            safetensors.deserialize(blob)


def sharded_copy(tmp_path):
    d = tmp_path / "sharded"
    shutil.copytree(os.path.join(FIX, "sharded"), d)
    with open(d / "model.safetensors.index.json") as f:
        return d, json.load(f)


def test_sharded_reads_union_of_shards(tmp_path):
    meta, tensors = our_dump(os.path.join(FIX, "sharded"))
    union = {}
    for shard in sorted(glob.glob(os.path.join(FIX, "sharded", "*.safetensors"))):
        union.update(reference(shard)[1])
    assert tensors == union and meta == {"format": "pt"}
    out = str(tmp_path / "merged.safetensors")
    run(os.path.join(BIN, "safetensors-rewrite"), "-q", os.path.join(FIX, "sharded"), out)
    assert reference(out)[1] == union


@pytest.mark.parametrize("case", ["missing", "extra"])
def test_sharded_mismatch(case, tmp_path):
    d, index = sharded_copy(tmp_path)
    if case == "missing":
        index["weight_map"]["model.layers.9.w"] = "model-00002-of-00002.safetensors"
        culprit = "model.layers.9.w"
    else:
        del index["weight_map"]["model.layers.1.w"]
        culprit = "model.layers.1.w"
    with open(d / "model.safetensors.index.json", "w") as f:
        json.dump(index, f)
    p = run(os.path.join(TBIN, "st-dump"), str(d), check=False)
    assert p.returncode == 1 and p.stdout.split()[1] == "mismatch"
    out = str(tmp_path / "out.safetensors")
    p = run(os.path.join(BIN, "safetensors-rewrite"), "-q", str(d), out, check=False)
    assert p.returncode == 1 and culprit in p.stderr and len(p.stderr.splitlines()) == 1
    assert not os.path.exists(out)
    assert not [n for n in os.listdir(tmp_path) if n.endswith(".tmp")], os.listdir(tmp_path)


def test_big_tensors_take_the_kernel_copy_path(tmp_path):
    """Runs of 256 KiB and more go through copy_file_range; both paths must agree."""
    rng = np.random.default_rng(5)
    t = {"big.a": rng.standard_normal((300, 1024)).astype(np.float32),   # 1.2 MB
         "big.b": rng.standard_normal((200, 1024)).astype(np.float16),
         "small": rng.standard_normal((7,)).astype(np.float32)}
    src = str(tmp_path / "src.safetensors")
    save_file(t, src, metadata={"format": "pt"})
    out = str(tmp_path / "out.safetensors")
    run(os.path.join(BIN, "safetensors-rewrite"), "-q", src, out)
    with open(src, "rb") as a, open(out, "rb") as b:
        assert a.read() == b.read()
    # the same tensors with the header and the data in another order
    scr = str(tmp_path / "scr.safetensors")
    spec = {k: ({"float32": "float32", "float16": "float16"}[v.dtype.name], list(v.shape),
                v.tobytes()) for k, v in t.items()}
    scrambled_file(scr, spec, {"format": "pt"}, random.Random(1))
    out2 = str(tmp_path / "out2.safetensors")
    run(os.path.join(BIN, "safetensors-rewrite"), "-q", scr, out2)
    with open(src, "rb") as a, open(out2, "rb") as b:
        assert a.read() == b.read()


@pytest.mark.parametrize("dtype", ["f32", "f16", "bf16"])
def test_rewrite_dtype_matches_numpy_cast(dtype, tmp_path):
    """--dtype casts float tensors as numpy / ml_dtypes do; the file is what save_file
    writes for the cast arrays (integers untouched)."""
    ml_dtypes = pytest.importorskip("ml_dtypes")
    src = os.path.join(FIX, "tiny_llama.safetensors")
    with safe_open(src, framework="numpy") as f:
        arrays = {k: f.get_tensor(k) for k in f.keys()}
        meta = f.metadata()
    target = {"f32": np.float32, "f16": np.float16, "bf16": ml_dtypes.bfloat16}[dtype]
    want = str(tmp_path / "want.safetensors")
    keep, specs = [], {}
    for k, a in arrays.items():
        c = np.ascontiguousarray(a.astype(target))
        keep.append(c)
        specs[k] = TensorSpec(dtype={"f32": "float32", "f16": "float16", "bf16": "bfloat16"}[dtype],
                              shape=list(c.shape), data_ptr=c.ctypes.data, data_len=c.nbytes)
    serialize_file(specs, want, metadata=meta)
    out = str(tmp_path / "out.safetensors")
    run(os.path.join(BIN, "safetensors-rewrite"), "-q", "--dtype", dtype, src, out)
    with open(want, "rb") as a, open(out, "rb") as b:
        assert a.read() == b.read()
