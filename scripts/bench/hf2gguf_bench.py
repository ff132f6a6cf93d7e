"""Bench: an HF folder -> GGUF, side by side with cp and llama.cpp's converter.

Generates build/bench/hf-llama-1.5g/ once: config.json of a llama-shaped model
(hidden 2048, 15 layers, GQA 32/8 heads, ffn 5632, vocab 32000: ~0.81 G params, ~1.5 GiB
in bf16), one model.safetensors written by the safetensors package from random bf16
bits (fixed seed, exponents kept in a sane range so f16/q8_0 see real numbers), and
the SentencePiece tokenizer files of fixtures/hf/llama-spm (vocab padded by the
converter, so vocab_size 32000 works with its 400 pieces).

Each tool runs as a child; wall time and the child's peak RSS (wait4's ru_maxrss) are
printed as the median of N runs (BENCH_RUNS, default 3). cp copies the folder (cp -r).
safetensors2gguf runs with --outtype f16 and q8_0, durable (fsync) and --no-fsync.
convert_hf_to_gguf.py runs once per outtype when LC_REF_PY and LC_REF_CONVERT are set,
else a line says it was skipped. Targets: f16 <= 1.5x cp, peak RSS <= 128 MiB,
>= 20x faster than convert_hf_to_gguf.py."""
import json, os, shutil, statistics, subprocess, sys, time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CFG = {"architectures": ["LlamaForCausalLM"], "hidden_size": 2048, "intermediate_size": 5632,
       "num_hidden_layers": 15, "num_attention_heads": 32, "num_key_value_heads": 8,
       "vocab_size": 32000, "max_position_embeddings": 4096, "rms_norm_eps": 1e-5,
       "rope_theta": 10000.0, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
       "model_type": "llama", "bos_token_id": 1, "eos_token_id": 2}


def generate(folder):
    import numpy as np
    from safetensors import TensorSpec, serialize_file
    rng = np.random.default_rng(0)
    h, f, v, L = CFG["hidden_size"], CFG["intermediate_size"], CFG["vocab_size"], CFG["num_hidden_layers"]
    kv = h // CFG["num_attention_heads"] * CFG["num_key_value_heads"]
    shapes = {"model.embed_tokens.weight": (v, h), "model.norm.weight": (h,), "lm_head.weight": (v, h)}
    for i in range(L):
        p = f"model.layers.{i}."
        shapes.update({p + "input_layernorm.weight": (h,), p + "post_attention_layernorm.weight": (h,),
                       p + "self_attn.q_proj.weight": (h, h), p + "self_attn.k_proj.weight": (kv, h),
                       p + "self_attn.v_proj.weight": (kv, h), p + "self_attn.o_proj.weight": (h, h),
                       p + "mlp.gate_proj.weight": (f, h), p + "mlp.up_proj.weight": (f, h),
                       p + "mlp.down_proj.weight": (h, f)})
    keep, specs = [], {}
    for name, shape in shapes.items():
        n = int(np.prod(shape))
        bits = rng.integers(0, 1 << 16, size=n, dtype=np.uint16)
        bits = (bits & 0x807f) | 0x3c00      # sign, mantissa random; |x| in [2^-7, 2^-6)
        keep.append(bits)
        specs[name] = TensorSpec(dtype="bfloat16", shape=list(shape), data_ptr=bits.ctypes.data,
                                 data_len=2 * n)
    os.makedirs(folder, exist_ok=True)
    serialize_file(specs, os.path.join(folder, "model.safetensors"), metadata={"format": "pt"})
    with open(os.path.join(folder, "config.json"), "w") as fh:
        json.dump(CFG, fh, indent=2)
    spm = os.path.join(ROOT, "fixtures", "hf", "llama-spm")
    for name in ("tokenizer.model", "tokenizer_config.json", "special_tokens_map.json"):
        shutil.copy(os.path.join(spm, name), folder)


def run(cmd, env=None):
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, env=env)
    _, status, ru = os.wait4(p.pid, 0)
    if status != 0:
        sys.exit(f"bench: {cmd} failed with status {status}")
    return time.perf_counter() - t0, ru.ru_maxrss / 1024


if sys.argv[1] == "gen":
    generate(sys.argv[2])
    sys.exit(0)
bin_dir, out_dir = sys.argv[1], sys.argv[2]
folder = os.path.join(out_dir, "hf-llama-1.5g")
out = os.path.join(out_dir, "hf-llama-1.5g.gguf")
copy = os.path.join(out_dir, "hf-llama-1.5g.copy")
if not os.path.exists(os.path.join(folder, "config.json")):
    subprocess.run([sys.executable, __file__, "gen", folder], check=True)
size = sum(os.path.getsize(os.path.join(folder, n)) for n in os.listdir(folder))
runs = int(os.environ.get("BENCH_RUNS", "3"))


def fresh():
    for p in (out, copy):
        if os.path.isdir(p):
            shutil.rmtree(p)
        elif os.path.exists(p):
            os.unlink(p)
    subprocess.run(["sync"], check=True)


with open(os.path.join(folder, "model.safetensors"), "rb") as fh:   # warm the cache once
    while fh.read(1 << 24):
        pass
tool = os.path.join(bin_dir, "safetensors2gguf")
# cp copies in the kernel (copy_file_range); dd bs=256K is the same bytes through user
# space (read + write), the floor for anything that looks at the data.
cases = [("cp -r", ["cp", "-r", folder, copy]),
         ("dd bs=256K (user-space copy)", ["dd", "if=" + os.path.join(folder, "model.safetensors"),
                                          "of=" + out, "bs=256K", "status=none"])]
for t in ("f16", "q8_0"):
    cases.append((f"safetensors2gguf {t}", [tool, "-q", "--outtype", t, folder, out]))
    cases.append((f"safetensors2gguf {t} --no-fsync", [tool, "-q", "--no-fsync", "--outtype", t, folder, out]))
res = {name: [] for name, _ in cases}
for _ in range(runs):
    for name, cmd in cases:
        fresh()
        res[name].append(run(cmd))
fresh()
print(f"hf2gguf on a {size / (1 << 30):.2f} GiB bf16 llama folder (median of {runs}):")
med = {}
for name, rs in res.items():
    med[name] = statistics.median(r[0] for r in rs)
    print(f"  {name:34s} {med[name]:7.3f} s   peak RSS {max(r[1] for r in rs):7.1f} MiB")
print(f"  f16 / cp: {med['safetensors2gguf f16 --no-fsync'] / med['cp -r']:.2f}x with --no-fsync, "
      f"{med['safetensors2gguf f16'] / med['cp -r']:.2f}x durable (target <= 1.5x); "
      f"f16 --no-fsync / dd: {med['safetensors2gguf f16 --no-fsync'] / med['dd bs=256K (user-space copy)']:.2f}x")
ref_py, ref = os.environ.get("LC_REF_PY"), os.environ.get("LC_REF_CONVERT")
if not ref_py or not ref:
    print("  convert_hf_to_gguf.py: skipped (set LC_REF_PY to a python with torch and "
          "LC_REF_CONVERT to the script)")
    sys.exit(0)
for t in ("f16", "q8_0"):
    fresh()
    secs, rss = run([ref_py, ref, folder, "--outtype", t, "--outfile", out])
    ours = med[f"safetensors2gguf {t}"]
    print(f"  convert_hf_to_gguf.py {t:5s} {secs:7.3f} s   peak RSS {rss:7.1f} MiB   "
          f"ours is {secs / ours:.1f}x faster (target >= 20x)")
fresh()
