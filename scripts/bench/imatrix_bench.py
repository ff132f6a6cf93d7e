"""Bench: importance matrices on a whole model, ours next to llama.cpp's (issue 20).

The model: a llama-shaped folder generated once as hf2gguf_bench.py generates its own,
smaller (hidden 1024, 8 layers, 16/4 heads, ffn 2816, vocab 32000: ~0.16 G parameters,
random bf16 weights, llama-spm's tokenizer), build/bench/hf-llama-im/, converted once by our
safetensors2gguf to an f16 GGUF. Every case is a child of tests/tools/lc-peak (wall time,
the child's own peak RSS); T threads (BENCH_THREADS, default 1: a per-thread figure, and
the machine these figures come from is often shared); median of BENCH_RUNS rounds
(default 1), every case once per round.

  model-imatrix     model-imatrix -t T -c 512 --chunks K (K = BENCH_IMATRIX_CHUNKS,
                    default 2) over the bundled text: tokens per second of the whole run
                    (load, forward passes, writing the matrix);
  llama.cpp         llama-cpp-python ships no llama-imatrix, so its side is llama_decode
                    of the same K chunks of token ids (ours, from --json), each one batch
                    of 512 from position 0 with every position's logits, T threads: the
                    forward pass llama-imatrix runs, without its collection callback (so
                    a floor of llama-imatrix's time; tokens per second of the decodes);
  gguf-quantize     --imatrix (our matrix) -t T, IQ2_XS and IQ4_XS (BENCH_IMATRIX_FTYPES);
  llama_model_quantize  the same file type with the same matrix (read as llama-quantize
                    reads it) and nthread T; the tensors of the two files are compared,
                    and a difference fails the bench (the keys differ: the matrix's
                    quantize.imatrix.* are llama-quantize's tool's, not given here).
Targets: peak RSS <= 128 MiB for quantization; model-imatrix tokens/s near llama.cpp's."""
import json, os, shutil, statistics, subprocess, sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CFG = {"architectures": ["LlamaForCausalLM"], "hidden_size": 1024, "intermediate_size": 2816,
       "num_hidden_layers": 8, "num_attention_heads": 16, "num_key_value_heads": 4,
       "vocab_size": 32000, "max_position_embeddings": 4096, "rms_norm_eps": 1e-5,
       "rope_theta": 10000.0, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
       "model_type": "llama", "bos_token_id": 1, "eos_token_id": 2}

bin_dir, out_dir = sys.argv[1], sys.argv[2]
TEST_BIN = os.environ.get("LC_TEST_BIN", os.path.join(ROOT, "build", "test-bin"))
PEAK = os.path.join(TEST_BIN, "lc-peak")
LLAMA_PY = os.environ.get("LC_LLAMA_PY") or os.path.join(ROOT, "build", "llama-venv", "bin",
                                                         "python")
threads = int(os.environ.get("BENCH_THREADS") or 1)
runs = int(os.environ.get("BENCH_RUNS", "1"))
chunks = int(os.environ.get("BENCH_IMATRIX_CHUNKS", "2"))
ftypes = os.environ.get("BENCH_IMATRIX_FTYPES", "IQ2_XS,IQ4_XS").split(",")
FTYPE_ID = {"IQ2_XXS": 19, "IQ2_XS": 20, "IQ3_XXS": 23, "IQ3_S": 26, "IQ2_S": 28,
            "IQ4_XS": 30, "IQ1_M": 31, "Q4_K_M": 15}
CTX = 512
folder = os.path.join(out_dir, "hf-llama-im")
src = os.path.join(out_dir, "hf-llama-im-f16.gguf")
im = os.path.join(out_dir, "im-ours.gguf")
q_ours, q_ref = os.path.join(out_dir, "im-q-ours.gguf"), os.path.join(out_dir, "im-q-ref.gguf")

QUANTIZE = r"""
import ctypes, sys, numpy as np, gguf, llama_cpp
inp, out, ftype, nthread, path = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
llama_cpp.llama_backend_init()
cb = llama_cpp.llama_log_callback(lambda l, t, u: None)
llama_cpp.llama_log_set(cb, ctypes.c_void_p())
t = {x.name: np.array(x.data, dtype=np.float32).reshape(-1) for x in gguf.GGUFReader(path).tensors}
entries = {}
for n in t:                          # common/imatrix-loader.cpp: sums / counts per matrix
    if n.endswith(".in_sum2"):
        name = n[:-len(".in_sum2")]
        s, c = t[n], t[name + ".counts"]
        ne0 = s.size // c.size
        e = np.empty_like(s)
        for j, cj in enumerate(c):
            cj = np.float32(np.floor(cj + 0.5))
            e[j * ne0:(j + 1) * ne0] = s[j * ne0:(j + 1) * ne0] / cj if cj > 0 else 1
        entries[name] = e
arr = (llama_cpp.llama_model_imatrix_data * (len(entries) + 1))()
keep = []
for i, (name, v) in enumerate(entries.items()):
    keep += [name.encode(), v]
    arr[i].name, arr[i].size = keep[-2], v.size
    arr[i].data = v.ctypes.data_as(ctypes.POINTER(ctypes.c_float))
arr[len(entries)].name = None
p = llama_cpp.llama_model_quantize_default_params()
p.ftype, p.nthread = ftype, nthread
p.imatrix = ctypes.cast(arr, ctypes.POINTER(llama_cpp.llama_model_imatrix_data))
sys.exit(llama_cpp.llama_model_quantize(inp.encode(), out.encode(), ctypes.byref(p)))
"""

DECODE = r"""
import json, sys, time, llama_cpp
path, threads, chunks = sys.argv[1], int(sys.argv[2]), json.load(open(sys.argv[3]))
n = len(chunks[0])
m = llama_cpp.Llama(model_path=path, n_ctx=n, n_batch=n, n_ubatch=n, logits_all=True,
                    n_threads=threads, n_threads_batch=threads, verbose=False)
t0 = time.perf_counter()
for ids in chunks:
    m.reset()
    m.eval(ids)
print(time.perf_counter() - t0, sum(len(c) for c in chunks))
"""


def run(cmd, capture=False):
    report = os.path.join(out_dir, "peak-im.txt")
    p = subprocess.run([PEAK, report] + cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"bench imatrix: {cmd} failed with status {p.returncode}: {p.stderr[-500:]}")
    with open(report) as fh:
        secs, kib = fh.read().split()
    os.unlink(report)
    return float(secs), int(kib) / 1024, p.stdout


def generate(folder):
    """Random bf16 weights, normal with the spread of a trained model's (std 0.02), so
    that the i-quants' searches see ordinary blocks."""
    import numpy as np
    from safetensors import TensorSpec, serialize_file
    rng = np.random.default_rng(0)
    h, f, v = CFG["hidden_size"], CFG["intermediate_size"], CFG["vocab_size"]
    kv = h // CFG["num_attention_heads"] * CFG["num_key_value_heads"]
    shapes = {"model.embed_tokens.weight": (v, h), "model.norm.weight": (h,),
              "lm_head.weight": (v, h)}
    for i in range(CFG["num_hidden_layers"]):
        p = f"model.layers.{i}."
        shapes.update({p + "input_layernorm.weight": (h,),
                       p + "post_attention_layernorm.weight": (h,),
                       p + "self_attn.q_proj.weight": (h, h), p + "self_attn.k_proj.weight": (kv, h),
                       p + "self_attn.v_proj.weight": (kv, h), p + "self_attn.o_proj.weight": (h, h),
                       p + "mlp.gate_proj.weight": (f, h), p + "mlp.up_proj.weight": (f, h),
                       p + "mlp.down_proj.weight": (h, f)})
    keep, specs = [], {}
    for name, shape in shapes.items():
        x = (1.0 + 0.1 * rng.standard_normal(shape) if len(shape) == 1
             else 0.02 * rng.standard_normal(shape)).astype(np.float32)
        bits = (x.view(np.uint32) >> 16).astype(np.uint16)          # bf16, truncated
        keep.append(bits)
        specs[name] = TensorSpec(dtype="bfloat16", shape=list(shape), data_ptr=bits.ctypes.data,
                                 data_len=2 * bits.size)
    os.makedirs(folder, exist_ok=True)
    serialize_file(specs, os.path.join(folder, "model.safetensors"), metadata={"format": "pt"})
    with open(os.path.join(folder, "config.json"), "w") as fh:
        json.dump(CFG, fh, indent=2)
    spm = os.path.join(ROOT, "fixtures", "hf", "llama-spm")
    for name in ("tokenizer.model", "tokenizer_config.json", "special_tokens_map.json"):
        shutil.copy(os.path.join(spm, name), folder)


def tensors(path):
    import gguf
    return [(t.name, t.tensor_type, bytes(t.data.tobytes())) for t in gguf.GGUFReader(path).tensors]


if not os.path.exists(os.path.join(folder, "config.json")):
    generate(folder)
if not os.path.exists(src):
    subprocess.run([os.path.join(bin_dir, "safetensors2gguf"), "-q", "--outtype", "f16", folder,
                    src + ".part"], check=True)
    os.rename(src + ".part", src)
have_llama = os.path.isfile(LLAMA_PY)
tool_im, tool_q = os.path.join(bin_dir, "model-imatrix"), os.path.join(bin_dir, "gguf-quantize")
toks = os.path.join(out_dir, "im-chunks.json")

res = {}
for _ in range(runs):
    secs, mib, out = run([tool_im, "--json", "-q", "--no-fsync", "-t", str(threads), "-c", str(CTX),
                          "--chunks", str(chunks), src, im])
    rep = json.loads(out)
    with open(toks, "w") as fh:
        json.dump(rep["tokens"], fh)
    ntok = sum(len(c) for c in rep["tokens"])
    res.setdefault("model-imatrix", []).append((secs, mib, ntok / secs))
    if have_llama:
        secs, mib, out = run([LLAMA_PY, "-c", DECODE, src, str(threads), toks])
        dsecs, n = out.split()
        res.setdefault("llama.cpp decode", []).append((secs, mib, int(n) / float(dsecs)))
    for t in ftypes:
        for p in (q_ours, q_ref):
            if os.path.exists(p):
                os.unlink(p)
        secs, mib, _ = run([tool_q, "-q", "--no-fsync", "-t", str(threads), "--imatrix", im,
                            src, q_ours, t])
        res.setdefault(f"gguf-quantize {t}", []).append((secs, mib, None))
        if have_llama:
            secs, mib, _ = run([LLAMA_PY, "-c", QUANTIZE, src, q_ref, str(FTYPE_ID[t]),
                                str(threads), im])
            res.setdefault(f"llama_model_quantize {t}", []).append((secs, mib, None))
            if tensors(q_ours) != tensors(q_ref):
                sys.exit(f"bench imatrix: {t}: gguf-quantize and llama_model_quantize differ")
for p in (q_ours, q_ref, toks):
    if os.path.exists(p):
        os.unlink(p)

size = os.path.getsize(src)
print(f"== importance matrix on a whole model: {size / (1 << 20):.0f} MiB f16 GGUF, {threads} "
      f"thread(s) of {os.cpu_count()} cores, {chunks} chunks of {CTX}, median of {runs} ==")
med = {}
for name, rs in res.items():
    med[name] = statistics.median(r[0] for r in rs)
    extra = ""
    if rs[0][2] is not None:
        extra = f"  {statistics.median(r[2] for r in rs):8.1f} tok/s"
    print(f"  {name:30s} {med[name]:8.2f} s{extra}   peak RSS {max(r[1] for r in rs):7.1f} MiB")
if not have_llama:
    print("  llama.cpp: skipped (no build/llama-venv: make check-llama builds it)")
    sys.exit(0)
ours_tps = statistics.median(r[2] for r in res["model-imatrix"])
ref_tps = statistics.median(r[2] for r in res["llama.cpp decode"])
print(f"  model-imatrix / llama.cpp's forward pass: {ours_tps / ref_tps:.2f}x the tokens/s")
for t in ftypes:
    print(f"  llama_model_quantize / gguf-quantize, {t} with the matrix: "
          f"{med[f'llama_model_quantize {t}'] / med[f'gguf-quantize {t}']:.2f}x faster; "
          f"tensors byte-identical")
