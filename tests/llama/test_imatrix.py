"""model-imatrix against llama.cpp's own forward pass: the importance matrix llama-imatrix
would collect, taken from llama.cpp itself through its eval callback (cb_eval, as
tools/imatrix does), on the same GGUF (fixtures/hf-ref, written by convert_hf_to_gguf.py)
and the same chunks of token ids (ours, from model-imatrix --json).

The collector below is the statistic of tools/imatrix/imatrix.cpp, written here in numpy
(sums in float64): every MUL_MAT whose weight is named blk.* (or output.weight) with at
least 16 input rows adds each row's squares per column and counts the rows; every
MUL_MAT_ID adds, per (token, slot), the row of that slot's input to the row of the expert
the router chose and counts it for that expert. Each chunk is decoded alone as one batch
from position 0 with every position's output on (llama-imatrix asks for all logits), the
KV cache in f32 and cleared between chunks.

Asserted for every family (dense, mixtures of experts mixtral and qwen3moe, phi3's fused
matrices, qwen35's recurrent layers and qwen35moe's shared expert), from the f32 GGUF and
from the HF folder: the same tensor list, the same counts (per expert), and per column
|ours - llama.cpp| <= REL * |llama.cpp| + 1e-6 x the entry's largest column. REL = 1e-4;
measured (one thread each) max relative difference 1.5e-5 (mixtral from its folder),
<= 7.6e-6 for the others; gemma3 (GELU, below) 1.0e-3, allowed 5e-3.

And llama.cpp reads what we write: llama_model_quantize given our matrix (GGUF and .dat,
read as llama-quantize reads them) writes gguf-quantize --imatrix's bytes, and runs."""
import ctypes
import json
import subprocess

import gguf
import llama_cpp
import numpy as np
import pytest

from conftest import BIN, HF, ref_path

TOOL = BIN / "model-imatrix"
CTX, CHUNKS = 64, 3
REL = 1e-4
# gemma3's FFN is GELU, which llama.cpp's CPU back end takes from an f16 table on the input
# rounded to f16 (see test_infer.py): ffn_down's input, gelu(gate) * up, differs by that,
# and every product after it.
GELU_MODELS = {"gemma3"}
GELU = 5e-3
MODELS = ["llama-spm", "qwen3moe", "mixtral", "phi3", "qwen2", "qwen3", "gemma3", "qwen35", "qwen35moe", "llama-bpe"]



class GgmlTensor(ctypes.Structure):
    """struct ggml_tensor of the pinned ggml.h (GGML_MAX_DIMS 4, GGML_MAX_SRC 10,
    GGML_MAX_OP_PARAMS 64, GGML_MAX_NAME 64)."""
    _fields_ = [
        ("type", ctypes.c_int),
        ("buffer", ctypes.c_void_p),
        ("ne", ctypes.c_int64 * 4),
        ("nb", ctypes.c_size_t * 4),
        ("op", ctypes.c_int),
        ("op_params", ctypes.c_int32 * 16),
        ("flags", ctypes.c_int32),
        ("src", ctypes.c_void_p * 10),
        ("view_src", ctypes.c_void_p),
        ("view_offs", ctypes.c_size_t),
        ("data", ctypes.c_void_p),
        ("name", ctypes.c_char * 64),
        ("extra", ctypes.c_void_p),
        ("padding", ctypes.c_char * 8),
    ]


def op_names():
    from llama_cpp import _ggml
    lib = _ggml.libggml
    lib.ggml_op_name.restype = ctypes.c_char_p
    lib.ggml_op_name.argtypes = [ctypes.c_int]
    found = {}
    for i in range(100):            # both come early in enum ggml_op: stop there (the
        name = lib.ggml_op_name(i)  # table has no bound check past GGML_OP_COUNT)
        found[name] = i
        if b"MUL_MAT" in found and b"MUL_MAT_ID" in found:
            return {k.decode(): v for k, v in found.items()}
    raise AssertionError("ggml_op_name names no MUL_MAT / MUL_MAT_ID")


def tensor_at(addr):
    return GgmlTensor.from_address(addr)


def as_array(t, dtype, itemsize):
    """t's data as a numpy array of shape (ne3, ne2, ne1, ne0) through its strides."""
    ne, nb = list(t.ne), list(t.nb)
    extent = sum((ne[i] - 1) * nb[i] for i in range(4)) + itemsize
    raw = np.frombuffer((ctypes.c_uint8 * extent).from_address(t.data), dtype=np.uint8)
    return np.lib.stride_tricks.as_strided(raw.view(dtype) if extent % itemsize == 0
                                           else raw[:extent - extent % itemsize].view(dtype),
                                           shape=(ne[3], ne[2], ne[1], ne[0]),
                                           strides=(nb[3], nb[2], nb[1], nb[0]))


class Collector:
    def __init__(self, process_output):
        ops = op_names()
        self.mul_mat, self.mul_mat_id = ops["MUL_MAT"], ops["MUL_MAT_ID"]
        self.process_output = process_output
        self.sums, self.counts = {}, {}

    def wanted(self, name):
        return name.startswith("blk.") or (self.process_output and name == "output.weight")

    def __call__(self, addr, ask, _user):
        t = tensor_at(addr)
        if t.op not in (self.mul_mat, self.mul_mat_id):
            return not ask
        src0, src1 = tensor_at(t.src[0]), tensor_at(t.src[1])
        name = src0.name.decode()
        if t.op == self.mul_mat and (src1.ne[1] < 16 or src1.type != 0 or
                                     not self.wanted(name)):
            return not ask
        if ask:
            return True
        x = as_array(src1, np.float32, 4).astype(np.float64)      # (ne3, ne2, ne1, ne0)
        ne0 = src1.ne[0]
        if t.op == self.mul_mat_id:
            ids = as_array(tensor_at(t.src[2]), np.int32, 4)[0, 0]   # (n_tokens, n_ids)
            n_as = src0.ne[2]
            s = self.sums.setdefault(name, np.zeros((n_as, ne0)))
            c = self.counts.setdefault(name, np.zeros(n_as, dtype=np.int64))
            for idx in range(ids.shape[1]):
                rows = x[0, :, idx % src1.ne[1], :]                # (n_tokens, ne0)
                np.add.at(s, ids[:, idx], rows * rows)
                np.add.at(c, ids[:, idx], 1)
        else:
            assert src0.ne[2] == 1 and src0.ne[3] == 1, name
            s = self.sums.setdefault(name, np.zeros((1, ne0)))
            c = self.counts.setdefault(name, np.zeros(1, dtype=np.int64))
            rows = x.reshape(-1, ne0)
            s[0] += (rows * rows).sum(axis=0)
            c[0] += rows.shape[0]
        return True


@llama_cpp.llama_log_callback
def _quiet(_level, _text, _user):
    pass


def llama_cpp_imatrix(path, chunks, process_output=True):
    llama_cpp.llama_log_set(_quiet, ctypes.c_void_p(0))
    col = Collector(process_output)
    cb = llama_cpp.ggml_backend_sched_eval_callback(col)
    mp = llama_cpp.llama_model_default_params()
    model = llama_cpp.llama_model_load_from_file(str(path).encode(), mp)
    assert model
    cp = llama_cpp.llama_context_default_params()
    cp.n_ctx = cp.n_batch = cp.n_ubatch = CTX
    cp.n_threads = cp.n_threads_batch = 1
    cp.type_k = cp.type_v = 0                   # f32 KV cache
    cp.flash_attn_type = 0
    cp.cb_eval = cb
    ctx = llama_cpp.llama_init_from_model(model, cp)
    assert ctx
    batch = llama_cpp.llama_batch_init(CTX, 0, 1)
    try:
        for ids in chunks:
            llama_cpp.llama_memory_clear(llama_cpp.llama_get_memory(ctx), True)
            batch.n_tokens = len(ids)
            for i, tok in enumerate(ids):
                batch.token[i] = tok
                batch.pos[i] = i
                batch.n_seq_id[i] = 1
                batch.seq_id[i][0] = 0
                batch.logits[i] = 1
            assert llama_cpp.llama_decode(ctx, batch) == 0
    finally:
        llama_cpp.llama_batch_free(batch)
        llama_cpp.llama_free(ctx)
        llama_cpp.llama_model_free(model)
    return col.sums, col.counts


def ours(src, out):
    r = subprocess.run([str(TOOL), "--json", "-q", "-t", "1", "--process-output", "-c", str(CTX),
                        "--chunks", str(CHUNKS), str(src), str(out)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    rep = json.loads(r.stdout)
    rd = gguf.GGUFReader(str(out))
    sums, counts = {}, {}
    for t in rd.tensors:
        base, kind = t.name.rsplit(".", 1)
        a = np.array(t.data, dtype=np.float64)
        if kind == "in_sum2":
            sums[base] = a.reshape(-1, int(t.shape[0]))
        else:
            counts[base] = a.reshape(-1).astype(np.int64)
    return rep, sums, counts


@pytest.mark.parametrize("source", ["gguf", "folder"])
@pytest.mark.parametrize("model", MODELS)
def test_imatrix_equals_llama_cpp(model, source, tmp_path):
    ref = ref_path(model, "f32")
    if not ref.is_file():
        pytest.skip(f"{ref} is missing")
    rep, sums, counts = ours(ref if source == "gguf" else HF / model, tmp_path / "im.gguf")
    assert rep["chunks"] == CHUNKS and rep["chunk_size"] == CTX
    want_s, want_c = llama_cpp_imatrix(ref, rep["tokens"])
    assert sorted(sums) == sorted(want_s)
    worst = gelu = 0.0
    for name, w in want_s.items():
        assert np.array_equal(counts[name], want_c[name]), name
        got = sums[name]
        assert got.shape == w.shape, name
        rel = GELU if model in GELU_MODELS else REL
        bound = rel * np.abs(w) + 1e-6 * np.abs(w).max()
        assert (np.abs(got - w) <= bound).all(), (name, float(np.abs(got - w).max()))
        nz = np.abs(w) > 1e-6 * np.abs(w).max()
        if rel == REL:
            worst = max(worst, float((np.abs(got - w)[nz] / np.abs(w)[nz]).max()))
        else:
            gelu = max(gelu, float((np.abs(got - w)[nz] / np.abs(w)[nz]).max()))
    print(f"{model} {source}: max relative difference {worst:.2e}"
          + (f" (GELU: {gelu:.2e})" if gelu else ""))


@pytest.mark.parametrize("fmt", ["gguf", "dat"])
@pytest.mark.parametrize("ftype", ["Q4_K_M", "IQ4_XS"])
@pytest.mark.parametrize("model", ["llama-spm", "qwen3moe"])
def test_llama_quantize_takes_ours(model, ftype, fmt, tmp_path):
    """Our matrix (both formats), read as llama-quantize reads it, given to
    llama_model_quantize: the same bytes as gguf-quantize --imatrix with it, and
    llama.cpp runs the result (a mixture of experts' .dat included: one flat vector per
    entry, each expert its own columns)."""
    from test_quantize_imatrix import runs, same_bytes_imatrix
    ref = ref_path(model, "f32")
    if not ref.is_file():
        pytest.skip(f"{ref} is missing")
    im = tmp_path / f"im.{fmt}"
    r = subprocess.run([str(TOOL), "-q", "-c", str(CTX), "--output-format", fmt, str(ref),
                        str(im)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    runs(same_bytes_imatrix(tmp_path, ref, ftype, im))
