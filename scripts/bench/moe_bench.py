"""Bench: a mixture-of-experts HF folder -> GGUF, side by side with cp and llama.cpp's
converter, and the forward pass on it against llama.cpp.

Generates build/bench/hf-mixtral-2g/ once: a Qwen3MoeForCausalLM config (hidden 1024,
10 layers, 16/4 heads of 64, 64 experts of width 512, top-4, vocab 32000: ~1.05 G
params, ~2.0 GiB in bf16) and its weights in the Hub's layout, one tensor per expert
(mlp.experts.N.gate_proj ...), in 4 shards with an index, written by the safetensors
package from random bf16 bits (fixed seed, exponents kept in a sane range), plus the
SentencePiece tokenizer files of fixtures/hf/llama-spm (the converter's Qwen2Model tries
SentencePiece first). Each tool runs as a child of tests/tools/lc-peak (wall time, the
child's peak RSS), every case once per round, median of BENCH_RUNS rounds (default 3;
the converter, which takes minutes, once).

Cases: cp -r of the folder (and + sync); safetensors2gguf --outtype f16 (durable and
--no-fsync); gguf-quantize Q4_K_M straight from the folder (one pass); llama.cpp's
convert_hf_to_gguf.py --outtype f16 when $LC_REF_PY (a python with torch) and the
script are there. Then the forward pass over 128 tokens on the f16 GGUF: ours
(tests/tools/lc-infer) and llama.cpp's (llama-cpp-python in build/llama-venv, when made)
at the same thread count. Targets (issue 18): f16 <= 1.5x cp, peak RSS <= 128 MiB for
f16 and Q4_K_M, >= 20x faster than convert_hf_to_gguf.py; the forward pass ratio is
reported."""
import json, os, shutil, statistics, subprocess, sys, time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CFG = {"architectures": ["MixtralForCausalLM"], "model_type": "mixtral",
       "hidden_size": 1024, "intermediate_size": 512, "num_hidden_layers": 10,
       "num_attention_heads": 16, "num_key_value_heads": 4, "num_local_experts": 64,
       "num_experts_per_tok": 4, "vocab_size": 32000, "max_position_embeddings": 4096,
       "rms_norm_eps": 1e-5, "rope_theta": 1000000.0, "tie_word_embeddings": False,
       "torch_dtype": "bfloat16", "bos_token_id": 1, "eos_token_id": 2}
SHARDS = 4


def shapes():
    h, v, L = CFG["hidden_size"], CFG["vocab_size"], CFG["num_hidden_layers"]
    f, E = CFG["intermediate_size"], CFG["num_local_experts"]
    kv = h // CFG["num_attention_heads"] * CFG["num_key_value_heads"]
    out = {"model.embed_tokens.weight": (v, h), "model.norm.weight": (h,), "lm_head.weight": (v, h)}
    for i in range(L):
        p = f"model.layers.{i}."
        out.update({p + "input_layernorm.weight": (h,), p + "post_attention_layernorm.weight": (h,),
                    p + "self_attn.q_proj.weight": (h, h), p + "self_attn.k_proj.weight": (kv, h),
                    p + "self_attn.v_proj.weight": (kv, h), p + "self_attn.o_proj.weight": (h, h),
                    p + "block_sparse_moe.gate.weight": (E, h)})
        for e in range(E):
            q = p + f"block_sparse_moe.experts.{e}."
            out.update({q + "w1.weight": (f, h), q + "w3.weight": (f, h), q + "w2.weight": (h, f)})
    return out


def generate(folder):
    import numpy as np
    from safetensors import TensorSpec, serialize_file
    rng = np.random.default_rng(0)
    names = sorted(shapes().items())
    per = (len(names) + SHARDS - 1) // SHARDS
    os.makedirs(folder, exist_ok=True)
    weight_map, total = {}, 0
    for k in range(SHARDS):
        part = names[k * per:(k + 1) * per]
        fname = f"model-{k + 1:05d}-of-{SHARDS:05d}.safetensors"
        keep, specs = [], {}
        for name, shape in part:
            n = int(np.prod(shape))
            bits = rng.integers(0, 1 << 16, size=n, dtype=np.uint16)
            bits = (bits & 0x807f) | 0x3c00      # sign, mantissa random; |x| in [2^-7, 2^-6)
            keep.append(bits)
            specs[name] = TensorSpec(dtype="bfloat16", shape=list(shape),
                                     data_ptr=bits.ctypes.data, data_len=2 * n)
            weight_map[name] = fname
            total += 2 * n
        serialize_file(specs, os.path.join(folder, fname), metadata={"format": "pt"})
    with open(os.path.join(folder, "model.safetensors.index.json"), "w") as fh:
        json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, fh, indent=2)
    with open(os.path.join(folder, "config.json"), "w") as fh:
        json.dump(CFG, fh, indent=2)
    spm = os.path.join(ROOT, "fixtures", "hf", "llama-spm")
    for name in ("tokenizer.model", "tokenizer_config.json", "special_tokens_map.json"):
        shutil.copy(os.path.join(spm, name), folder)


def run(cmd, quiet=False):
    report = os.path.join(out_dir, "peak.txt")
    p = subprocess.run([PEAK, report] + cmd, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL if quiet else None)
    if p.returncode != 0:
        sys.exit(f"bench: {cmd} failed with status {p.returncode}")
    with open(report) as fh:
        secs, kib = fh.read().split()
    os.unlink(report)
    return float(secs), int(kib) / 1024


if sys.argv[1] == "gen":
    generate(sys.argv[2])
    sys.exit(0)
bin_dir, out_dir = sys.argv[1], sys.argv[2]
test_bin = os.environ.get("LC_TEST_BIN", os.path.join(ROOT, "build", "test-bin"))
PEAK = os.path.join(test_bin, "lc-peak")
folder = os.path.join(out_dir, "hf-mixtral-2g")
out = os.path.join(out_dir, "hf-mixtral-2g.gguf")
copy = os.path.join(out_dir, "hf-mixtral-2g.copy")
if not os.path.exists(os.path.join(folder, "config.json")):
    subprocess.run([sys.executable, __file__, "gen", folder], check=True)
size = sum(os.path.getsize(os.path.join(folder, n)) for n in os.listdir(folder))
runs = int(os.environ.get("BENCH_RUNS", "3"))
ref_py = os.environ.get("LC_REF_PY") or os.path.join(ROOT, "build", "ref-venv", "bin", "python")
ref = os.environ.get("LC_REF_CONVERT") or os.path.join(
    ROOT, "build", "llama-src", "llama_cpp_python-0.3.36", "vendor", "llama.cpp",
    "convert_hf_to_gguf.py")
have_ref = os.path.isfile(ref_py) and os.path.isfile(ref)


def fresh():
    for p in (out, copy):
        if os.path.isdir(p):
            shutil.rmtree(p)
        elif os.path.exists(p):
            os.unlink(p)
    subprocess.run(["sync"], check=True)


for n in os.listdir(folder):                                        # warm the cache once
    with open(os.path.join(folder, n), "rb") as fh:
        while fh.read(1 << 24):
            pass
s2g = os.path.join(bin_dir, "safetensors2gguf")
gq = os.path.join(bin_dir, "gguf-quantize")
cases = [("cp -r", ["cp", "-r", folder, copy]),
         ("cp -r + sync", ["sh", "-c", 'cp -r "$1" "$2" && sync "$2"/*', "sh", folder, copy]),
         ("safetensors2gguf f16", [s2g, "-q", "--outtype", "f16", folder, out]),
         ("safetensors2gguf f16 --no-fsync", [s2g, "-q", "--no-fsync", "--outtype", "f16", folder, out]),
         ("gguf-quantize HF -> Q4_K_M --no-fsync", [gq, "-q", "--no-fsync", folder, out, "Q4_K_M"])]
res = {name: [] for name, _ in cases}
for _ in range(runs):
    for name, cmd in cases:
        fresh()
        res[name].append(run(cmd))
if have_ref:
    fresh()
    res["convert_hf_to_gguf.py f16"] = [run([ref_py, ref, folder, "--outtype", "f16",
                                             "--outfile", out], quiet=True)]
fresh()
print(f"MoE hf2gguf on a {size / (1 << 30):.2f} GiB bf16 mixtral folder, 64 experts as one "
      f"tensor each ({os.cpu_count()} cores, median of {runs}, peak RSS the largest):")
med = {}
for name, rs in res.items():
    med[name] = statistics.median(r[0] for r in rs)
    lo, hi = min(r[0] for r in rs), max(r[0] for r in rs)
    print(f"  {name:38s} {med[name]:7.3f} s  ({lo:.3f}-{hi:.3f})   peak RSS "
          f"{max(r[1] for r in rs):7.1f} MiB")
print(f"  f16 --no-fsync / cp -r: {med['safetensors2gguf f16 --no-fsync'] / med['cp -r']:.2f}x; "
      f"f16 durable / cp -r + sync: {med['safetensors2gguf f16'] / med['cp -r + sync']:.2f}x "
      "(target <= 1.5x)")
if have_ref:
    r = med["convert_hf_to_gguf.py f16"]
    print(f"  convert_hf_to_gguf.py / ours, f16: {r / med['safetensors2gguf f16 --no-fsync']:.1f}x "
          f"(no fsync either side), {r / med['safetensors2gguf f16']:.1f}x vs our durable "
          "default (target >= 20x)")
else:
    print("  convert_hf_to_gguf.py: skipped (set LC_REF_PY to a python with torch and "
          "LC_REF_CONVERT to the script, or run scripts/llama/make-ref-venv.sh)")

# ---- the forward pass, ours against llama.cpp's, same threads ----
threads = min(os.cpu_count() or 1, 8)
run([s2g, "-q", "--no-fsync", "--outtype", "f16", folder, out])
ntok = 128
tokens = ",".join(str(3 + (i * 37) % 397) for i in range(ntok))
t0 = time.monotonic()
subprocess.run([os.path.join(test_bin, "lc-infer"), "-t", str(threads), out, tokens,
                os.path.join(out_dir, "moe-logits.f32")], check=True, stdout=subprocess.DEVNULL)
ours = time.monotonic() - t0
llama_py = os.path.join(ROOT, "build", "llama-venv", "bin", "python")
if os.path.isfile(llama_py):
    code = ("import sys, time, llama_cpp\n"
            "m = llama_cpp.Llama(model_path=sys.argv[1], n_ctx=256, n_batch=256, n_threads=int(sys.argv[2]),"
            " verbose=False, logits_all=True)\n"
            "toks = [int(x) for x in sys.argv[3].split(',')]\n"
            "t = time.monotonic(); m.eval(toks); print(time.monotonic() - t)\n")
    r = subprocess.run([llama_py, "-c", code, out, str(threads), tokens], capture_output=True,
                       text=True, check=True)
    theirs = float(r.stdout.split()[-1])
    print(f"  forward pass, {ntok} tokens, {threads} threads, f16: ours {ours:.2f} s "
          f"({ntok / ours:.1f} tok/s), llama.cpp {theirs:.2f} s ({ntok / theirs:.1f} tok/s): "
          f"ours / llama.cpp speed {theirs / ours:.2f}x")
else:
    print(f"  forward pass, {ntok} tokens, {threads} threads, f16: ours {ours:.2f} s; llama.cpp "
          "skipped (make check-llama makes build/llama-venv)")
fresh()
os.unlink(os.path.join(out_dir, "moe-logits.f32"))
