"""llama.cpp's own quantizer judges gguf-quantize.

The oracle is llama_model_quantize (what llama-quantize runs) of the llama.cpp that
llama-cpp-python 0.3.36 vendors, called through llama-cpp-python's low-level API, without
an importance matrix, one thread. What must hold, on every input model below:

  - for every TYPE of issue 9 that gguf-quantize offers (its --help list), the file it
    writes is byte-identical to llama_model_quantize's, and llama.cpp loads and runs it;
  - for every TYPE, offered or not (Q2_K, Q3_K_*, Q4_K_S, Q5_K_* wait for their
    kernels), gguf-quantize --dry-run --json gives every tensor the type llama.cpp's own
    dry run reports: the mixes' rules are right before their kernels exist; and a TYPE it
    does not offer is refused with exit 2;
  - the options (--pure, --leave-output-tensor, --output-tensor-type,
    --token-embedding-type, --tensor-type, --override-kv, --allow-requantize) give the
    bytes llama_model_quantize gives with the same parameters;
  - an HF folder quantized in one pass equals converting it (safetensors2gguf, its default
    out type) and quantizing the GGUF with llama.cpp.

Inputs: GGUFs llama.cpp's convert_hf_to_gguf.py wrote (fixtures/hf-ref: hidden size 64,
so every K-type row falls back, and llama-bpe has tied embeddings) and what
safetensors2gguf writes from fixtures/hf/llama-q9 (10 layers, tied, GQA 6, attn_output
rows of 48 values: F16 fallbacks) and fixtures/hf/qwen2-k (rows of 256: real K blocks,
GQA 4, untied).
"""
import ctypes
import json
import re
import subprocess

import gguf
import llama_cpp
import numpy as np
import pytest

from conftest import BIN, HF, REF, llama

QUANTIZE = BIN / "gguf-quantize"
CONVERT = BIN / "safetensors2gguf"

# Issue 9's TYPEs and their llama.h ids.
FTYPES = {"F32": 0, "F16": 1, "BF16": 32, "Q4_0": 2, "Q4_1": 3, "Q8_0": 7, "Q5_0": 8,
          "Q5_1": 9, "Q2_K": 10, "Q3_K_S": 11, "Q3_K_M": 12, "Q3_K_L": 13, "Q4_K_S": 14,
          "Q4_K_M": 15, "Q5_K_S": 16, "Q5_K_M": 17, "Q6_K": 18,
          # issue 20's MXFP4_MOE: the stacks of experts MXFP4 (qwen3moe, mixtral and
          # qwen35moe have them), every other matrix Q8_0
          "MXFP4_MOE": 38}
REF_INPUTS = ["llama-spm-bf16", "llama-bpe-f16", "qwen2-f32", "llama-tf-bf16",
              "qwen3-bf16", "qwen3moe-bf16", "gemma3-bf16", "mixtral-bf16", "phi3-bf16",
              "qwen35-bf16", "qwen35moe-bf16", "gemma4-bf16",
              "gemma4moe-bf16"]
HF_INPUTS = ["llama-q9", "qwen2-k"]
INPUTS = REF_INPUTS + HF_INPUTS


def offered():
    """The TYPEs gguf-quantize --help lists (the ones it can write today)."""
    text = subprocess.run([str(QUANTIZE), "--help"], capture_output=True, text=True).stdout
    m = re.search(r"numeric id\):(.*?);", text, re.S)
    assert m, text
    return set(m.group(1).split())


OFFERED = offered() if QUANTIZE.is_file() else set()


@pytest.fixture(scope="session")
def inputs(tmp_path_factory):
    """name -> GGUF path: fixtures/hf-ref files as they are, the HF folders converted by
    safetensors2gguf with its default out type (their own bf16 / f16)."""
    d = tmp_path_factory.mktemp("qin")
    paths = {m: REF / f"{m}.gguf" for m in REF_INPUTS}
    for m in HF_INPUTS:
        out = d / f"{m}.gguf"
        r = subprocess.run([str(CONVERT), "-q", str(HF / m), str(out)], capture_output=True,
                           text=True)
        assert r.returncode == 0, r.stderr
        paths[m] = out
    return paths


# ---- llama.cpp's quantizer ----

_log = []       # llama.cpp's log lines while llama_quantize runs; dropped otherwise
_capture = [False]
_log_cb = llama_cpp.llama_log_callback(
    lambda level, text, user: _log.append(text) if _capture[0] else None)


def ggml_type(name):
    return int(gguf.GGMLQuantizationType[name.upper()])


def llama_quantize(inp, out, ftype, *, dry_run=False, pure=False, leave_output=False,
                   allow_requantize=False, output_type=None, token_type=None,
                   tensor_types=(), overrides=(), keep_split=False, imatrix=None):
    """llama_model_quantize(inp, out) with these parameters; returns (rc, log text).
    keep_split: out is the prefix of the parts' names (llama-quantize strips ".gguf").
    tensor_types: (pattern, type name) pairs, patterns lower-cased as llama-quantize's
    parser does; overrides: (key, "int"|"float"|"bool"|"str", value); imatrix: {tensor
    name: float32 weights}, what llama-quantize's tool hands it (test_quantize_imatrix.py
    makes it, and the keys the tool adds, from a file)."""
    llama_cpp.llama_backend_init()
    llama_cpp.llama_log_set(_log_cb, ctypes.c_void_p())
    p = llama_cpp.llama_model_quantize_default_params()
    p.nthread = 1
    p.ftype = FTYPES[ftype]
    p.dry_run = dry_run
    p.pure = pure
    p.quantize_output_tensor = not leave_output
    p.allow_requantize = allow_requantize
    p.keep_split = keep_split
    if output_type:
        p.output_tensor_type = ggml_type(output_type)
    if token_type:
        p.token_embedding_type = ggml_type(token_type)
    keep = []
    if tensor_types:
        arr = (llama_cpp.llama_model_tensor_override * (len(tensor_types) + 1))()
        for i, (pat, t) in enumerate(tensor_types):
            keep.append(pat.lower().encode())
            arr[i].pattern, arr[i].type = keep[-1], ggml_type(t)
        arr[len(tensor_types)].pattern = None               # the list's end
        p.tt_overrides = ctypes.cast(arr, ctypes.POINTER(llama_cpp.llama_model_tensor_override))
        keep.append(arr)
    if overrides:
        arr = (llama_cpp.llama_model_kv_override * (len(overrides) + 1))()
        tags = {"int": llama_cpp.LLAMA_KV_OVERRIDE_TYPE_INT,
                "float": llama_cpp.LLAMA_KV_OVERRIDE_TYPE_FLOAT,
                "bool": llama_cpp.LLAMA_KV_OVERRIDE_TYPE_BOOL,
                "str": llama_cpp.LLAMA_KV_OVERRIDE_TYPE_STR}
        for i, (k, t, v) in enumerate(overrides):
            arr[i].tag, arr[i].key = tags[t], k.encode()
            if t == "int":
                arr[i].value.val_i64 = int(v)
            elif t == "float":
                arr[i].value.val_f64 = float(v)
            elif t == "bool":
                arr[i].value.val_bool = v == "true"
            else:
                arr[i].value.val_str = v if isinstance(v, bytes) else v.encode()
        p.kv_overrides = ctypes.cast(arr, ctypes.POINTER(llama_cpp.llama_model_kv_override))
        keep.append(arr)
    if imatrix:
        arr = (llama_cpp.llama_model_imatrix_data * (len(imatrix) + 1))()
        for i, (name, v) in enumerate(imatrix.items()):
            v = np.ascontiguousarray(v, dtype=np.float32)
            keep += [name.encode(), v]
            arr[i].name = keep[-2]
            arr[i].data = v.ctypes.data_as(ctypes.POINTER(ctypes.c_float))
            arr[i].size = v.size
        arr[len(imatrix)].name = None
        p.imatrix = ctypes.cast(arr, ctypes.POINTER(llama_cpp.llama_model_imatrix_data))
        keep.append(arr)
    _log.clear()
    _capture[0] = True
    try:
        rc = llama_cpp.llama_model_quantize(str(inp).encode(), str(out).encode(),
                                            ctypes.byref(p))
    finally:
        _capture[0] = False
    return rc, b"".join(_log).decode("utf-8", "replace")


def llama_plan(inp, ftype, **kw):
    """{tensor: type name} from llama.cpp's own dry run (its per-tensor log lines)."""
    rc, text = llama_quantize(inp, "/nonexistent/unused.gguf", ftype, dry_run=True, **kw)
    assert rc == 0, text[-2000:]
    plan = {}
    for m in re.finditer(r"\]\s+(\S+)\s+- \[[^\]]*\], type =\s+(\S+), size =\s+[\d.]+ MiB"
                         r"(?: ->\s+[\d.]+ MiB \((\S+)\))?", text):
        plan[m.group(1)] = (m.group(3) or m.group(2)).upper()
    return plan


def ours(args, check=True):
    r = subprocess.run([str(QUANTIZE)] + [str(a) for a in args], capture_output=True,
                       text=True)
    if check:
        assert r.returncode == 0, r.stderr
    return r


def options_args(pure=False, leave_output=False, allow_requantize=False, output_type=None,
                 token_type=None, tensor_types=(), overrides=()):
    a = []
    a += ["--pure"] if pure else []
    a += ["--leave-output-tensor"] if leave_output else []
    a += ["--allow-requantize"] if allow_requantize else []
    a += ["--output-tensor-type", output_type] if output_type else []
    a += ["--token-embedding-type", token_type] if token_type else []
    for pat, t in tensor_types:
        a += ["--tensor-type", f"{pat}={t}"]
    for k, t, v in overrides:
        a += ["--override-kv", f"{k}={t}:{v}"]
    return a


def same_bytes(tmp_path, inp, ftype, **kw):
    """Both quantizers on inp; asserts identical files; returns ours."""
    ref, mine = tmp_path / "ref.gguf", tmp_path / "ours.gguf"
    rc, text = llama_quantize(inp, ref, ftype, **kw)
    assert rc == 0, text[-2000:]
    ours(["-q", "-t", "2", *options_args(**kw), inp, mine, ftype])
    a, b = ref.read_bytes(), mine.read_bytes()
    if a != b:
        ra, rb = gguf.GGUFReader(ref), gguf.GGUFReader(mine)
        diff = [f"{x.name}: {x.tensor_type.name} vs {y.tensor_type.name}"
                for x, y in zip(ra.tensors, rb.tensors)
                if x.name != y.name or x.tensor_type != y.tensor_type or
                bytes(x.data.tobytes()) != bytes(y.data.tobytes())]
        keys = [f"{x}" for x, y in zip(ra.fields, rb.fields) if x != y]
        pytest.fail(f"{ftype}: {len(a)} vs {len(b)} bytes; tensors differ: {diff[:8]}; "
                    f"keys in another order: {keys[:8]}")
    return mine


# ---- every TYPE, every input ----

@pytest.mark.parametrize("model", INPUTS)
@pytest.mark.parametrize("ftype", list(FTYPES))
def test_file_is_llama_quantize_s(inputs, tmp_path, model, ftype):
    if ftype not in OFFERED:
        r = ours(["-q", inputs[model], tmp_path / "x.gguf", ftype], check=False)
        assert r.returncode == 2, r.stderr
        assert "not available yet" in r.stderr
        assert not (tmp_path / "x.gguf").exists()
        return
    out = same_bytes(tmp_path, inputs[model], ftype)
    # llama.cpp loads and runs it: finite logits for a few tokens.
    m = llama(out)
    m.reset()
    m.eval([1, 2, 3, 4, 5])
    scores = np.array(m.scores[:m.n_tokens], dtype=np.float32)
    assert scores.shape[0] == 5 and np.isfinite(scores).all()


@pytest.mark.parametrize("model", INPUTS)
@pytest.mark.parametrize("ftype", list(FTYPES))
def test_plan_is_llama_quantize_s(inputs, model, ftype):
    want = llama_plan(inputs[model], ftype)
    r = ours(["--dry-run", "--json", inputs[model], ftype])
    got = {t["name"]: t["to"] for t in json.loads(r.stdout)["tensors"]}
    assert list(got) == list(want), "tensor order"
    assert got == want


# ---- options ----

OPTION_CASES = {
    "pure": dict(pure=True),
    "leave-output": dict(leave_output=True),
    "output-q8_0": dict(output_type="q8_0"),
    "token-embd-q8_0": dict(token_type="q8_0"),
    "token-embd-f16-output-q4_0": dict(token_type="f16", output_type="q4_0"),
    "tensor-types": dict(tensor_types=[("attn_v", "q8_0"), (r"blk\.1\.ffn_(up|gate)", "q5_1"),
                                       ("ATTN_Q", "f16")]),
    # The ECMAScript patterns libconvert/regex.c matches, judged by std::regex in
    # llama-quantize: anchors, classes, counted repetition, \d and \w, alternation.
    "tensor-types-ecma": dict(tensor_types=[(r"^blk\.[0-9]\.attn_(q|k)\.weight$", "q8_0"),
                                            (r"blk\.\d{1,2}\.ffn_[dg]\w+", "q5_0"),
                                            (r"^(?:output|token_embd)\.w", "q8_0"),
                                            (r"[^a-z]up\.", "q4_1")]),
    "override-kv": dict(overrides=[("general.name", "str", "Judged"),
                                   ("general.file_type", "int", "-15"),
                                   ("test.flag", "bool", "true"),
                                   ("test.scale", "float", "0.1")]),
}


@pytest.mark.parametrize("model", ["qwen2-k", "llama-q9", "llama-bpe-f16"])
@pytest.mark.parametrize("case", list(OPTION_CASES))
def test_options(inputs, tmp_path, model, case):
    kw = OPTION_CASES[case]
    ftype = "Q4_K_M" if "Q4_K_M" in OFFERED else "Q8_0"
    same_bytes(tmp_path, inputs[model], ftype, **kw)


@pytest.mark.parametrize("ftype", ["Q4_0", "Q4_K_M", "F16", "Q8_0"])
def test_requantize(inputs, tmp_path, ftype):
    src = REF / "llama-spm-q8_0.gguf"
    r = ours(["-q", src, tmp_path / "x.gguf", "Q4_0"], check=False)
    assert r.returncode == 1 and "--allow-requantize" in r.stderr
    assert not (tmp_path / "x.gguf").exists()
    rc, _ = llama_quantize(src, tmp_path / "r.gguf", "Q4_0")
    assert rc != 0, "llama.cpp refuses it too"
    same_bytes(tmp_path, src, ftype, allow_requantize=True)


def test_threads_do_not_change_the_file(inputs, tmp_path):
    ftype = "Q4_K_M" if "Q4_K_M" in OFFERED else "Q8_0"
    ours(["-q", "-t", "1", inputs["qwen2-k"], tmp_path / "a.gguf", ftype])
    ours(["-q", inputs["qwen2-k"], tmp_path / "b.gguf", ftype, "7"])
    assert (tmp_path / "a.gguf").read_bytes() == (tmp_path / "b.gguf").read_bytes()


# The families of issues 18 and 21 too: stacks of experts, gemma's + 1, phi3's fused
# tensors, qwen35's recurrent layers quantized in the same pass as they are made.
FAMILY_FOLDERS = ["qwen3", "qwen3moe", "qwen3moe-fused", "gemma3", "mixtral", "phi3", "qwen35",
                  "qwen35moe", "gemma4", "gemma4moe"]


@pytest.mark.parametrize("model", HF_INPUTS + ["llama-spm", "qwen2"] + FAMILY_FOLDERS)
def test_hf_folder_in_one_pass(inputs, tmp_path, model):
    """HF -> TYPE in one pass == safetensors2gguf (default out type) then llama.cpp."""
    ftype = "Q4_K_M" if "Q4_K_M" in OFFERED else "Q8_0"
    conv = tmp_path / "conv.gguf"
    r = subprocess.run([str(CONVERT), "-q", str(HF / model), str(conv)], capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr
    rc, text = llama_quantize(conv, tmp_path / "ref.gguf", ftype)
    assert rc == 0, text[-2000:]
    ours(["-q", HF / model, tmp_path / "one.gguf", ftype])
    assert (tmp_path / "one.gguf").read_bytes() == (tmp_path / "ref.gguf").read_bytes()


@pytest.mark.parametrize("ftype", ["Q4_K_M", "Q4_0", "Q5_K_S", "Q6_K"])
@pytest.mark.parametrize("model", HF_INPUTS + ["llama-spm", "qwen2"] + FAMILY_FOLDERS)
def test_safetensors2gguf_outtype_in_one_pass(inputs, tmp_path, model, ftype):
    """Issue 9 item 6: safetensors2gguf --outtype TYPE (one command, one streaming pass,
    no intermediate file) == safetensors2gguf (default out type) then llama.cpp's
    quantizer, byte for byte."""
    if ftype not in OFFERED:
        pytest.fail(f"{ftype} is not offered by gguf-quantize")
    conv = tmp_path / "conv.gguf"
    r = subprocess.run([str(CONVERT), "-q", str(HF / model), str(conv)], capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr
    rc, text = llama_quantize(conv, tmp_path / "ref.gguf", ftype)
    assert rc == 0, text[-2000:]
    one = tmp_path / "one.gguf"
    r = subprocess.run([str(CONVERT), "-q", "--outtype", ftype.lower(), str(HF / model),
                        str(one)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert one.read_bytes() == (tmp_path / "ref.gguf").read_bytes()
    # The default name says the TYPE, as the naming convention does.
    d = tmp_path / "named"
    d.mkdir()
    r = subprocess.run([str(CONVERT), "-q", "--outtype", ftype, str(HF / model), str(d)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert [p.name.endswith(f"-{ftype}.gguf") for p in d.iterdir()] == [True]


# ---- llama.cpp's "70B" model type ----

def synthetic_llama(path, n_layer, n_head, n_head_kv, poison=None, dtype=np.float16):
    """A llama GGUF (gguf-py's writer) with n_layer layers of hidden 256, head_dim 4 and
    intermediate 32, zero f16 weights: big enough in layers, small in bytes, for the rules
    that read the model type (80 layers with n_head != n_head_kv is llama.cpp's 70B)."""
    h, hd, ff, vocab = 256, 4, 32, 32
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_context_length(64)
    w.add_embedding_length(h)
    w.add_block_count(n_layer)
    w.add_feed_forward_length(ff)
    w.add_head_count(n_head)
    w.add_head_count_kv(n_head_kv)
    w.add_key_length(hd)
    w.add_value_length(hd)
    w.add_rope_dimension_count(hd)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_vocab_size(vocab)
    w.add_file_type(1)

    def add(name, *shape):
        a = np.zeros(shape, dtype=np.float32)
        if poison and poison[0] == name:
            a[poison[1]] = poison[2]
        w.add_tensor(name, a if len(shape) == 1 else a.astype(dtype))

    add("token_embd.weight", vocab, h)
    add("output_norm.weight", h)
    add("output.weight", vocab, h)
    for i in range(n_layer):
        p = f"blk.{i}."
        add(p + "attn_norm.weight", h)
        add(p + "attn_q.weight", n_head * hd, h)
        add(p + "attn_k.weight", n_head_kv * hd, h)
        add(p + "attn_v.weight", n_head_kv * hd, h)
        add(p + "attn_output.weight", h, n_head * hd)
        add(p + "ffn_norm.weight", h)
        add(p + "ffn_gate.weight", ff, h)
        add(p + "ffn_up.weight", ff, h)
        add(p + "ffn_down.weight", h, ff)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


@pytest.mark.parametrize("kv", [8, 64], ids=["70B", "65B"])
@pytest.mark.parametrize("ftype", ["Q2_K", "Q3_K_S", "Q3_K_M", "Q4_K_S", "Q4_K_M", "Q5_K_M",
                                   "Q6_K", "Q8_0"])
def test_plan_of_an_80_layer_llama(tmp_path_factory, ftype, kv):
    path = tmp_path_factory.getbasetemp() / f"llama80-{kv}.gguf"
    if not path.exists():
        synthetic_llama(path, 80, 64, kv)
    want = llama_plan(path, ftype)
    r = ours(["--dry-run", "--json", path, ftype])
    got = {t["name"]: t["to"] for t in json.loads(r.stdout)["tensors"]}
    assert list(got) == list(want), "tensor order"
    assert got == want


@pytest.mark.parametrize("name,at,value,ftype,dtype,refused", [
    ("blk.1.ffn_up.weight", (5, 7), np.nan, "Q8_0", np.float16, True),
    ("blk.0.attn_norm.weight", (3,), np.inf, "Q4_0", np.float16, True),    # copied as is
    ("blk.1.attn_q.weight", (2, 9), 65504.0, "Q4_1", np.float16, False),   # fits f16 scales
    ("blk.1.attn_q.weight", (2, 9), 1e38, "Q8_0", np.float32, True),       # d overflows f16
    ("blk.1.attn_q.weight", (2, 9), 1e38, "F16", np.float32, True),        # so does the value
])
def test_bad_data_is_refused_by_both(tmp_path, name, at, value, ftype, dtype, refused):
    """NaN or infinity anywhere in the input, or a value whose scale overflows f16:
    llama.cpp refuses the file (ggml_validate_row_data), and so do we, naming the tensor
    and the row. Large values that fit are quantized alike."""
    src = synthetic_llama(tmp_path / "in.gguf", 2, 8, 8, poison=(name, at, value), dtype=dtype)
    rc, _ = llama_quantize(src, tmp_path / "ref.gguf", ftype)
    r = ours(["-q", src, tmp_path / "ours.gguf", ftype], check=False)
    if not refused:
        assert rc == 0 and r.returncode == 0, r.stderr
        assert (tmp_path / "ref.gguf").read_bytes() == (tmp_path / "ours.gguf").read_bytes()
        return
    assert rc != 0
    assert r.returncode == 1 and name in r.stderr and f"row {at[0] if len(at) > 1 else 0}," \
        in r.stderr, r.stderr
    assert not (tmp_path / "ours.gguf").exists()
