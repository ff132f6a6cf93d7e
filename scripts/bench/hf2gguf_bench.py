"""Bench: an HF folder -> GGUF, side by side with cp and llama.cpp's converter.

Generates build/bench/hf-llama-1.5g/ once: config.json of a llama-shaped model
(hidden 2048, 15 layers, GQA 32/8 heads, ffn 5632, vocab 32000: ~0.81 G params, ~1.5 GiB
in bf16), one model.safetensors written by the safetensors package from random bf16
bits (fixed seed, exponents kept in a sane range so f16/q8_0 see real numbers), and
the SentencePiece tokenizer files of fixtures/hf/llama-spm (vocab padded by the
converter, so vocab_size 32000 works with its 400 pieces).

Each tool runs as a child of tests/tools/lc-peak; wall time and the child's peak RSS
(wait4's ru_maxrss) are printed as the median of N rounds (BENCH_RUNS, default 3), every
case once per round. cp copies the folder (cp -r), with and without a final sync of the
copy. safetensors2gguf runs with --outtype f16 and q8_0, durable (fsync) and --no-fsync,
plus f16 on one thread, q8_0 on 8 threads (the default's maximum, so the largest
buffers) and bf16 (a kernel copy). llama.cpp's convert_hf_to_gguf.py runs
in every round too, f16 and q8_0, when a python with torch ($LC_REF_PY, default
build/ref-venv) and the script ($LC_REF_CONVERT, default the llama-cpp-python sdist
under build/llama-src) are there; else a line says it was skipped. Targets: f16 <=
1.5x cp, peak RSS <= 128 MiB, >= 20x faster than convert_hf_to_gguf.py."""
import json, os, shutil, statistics, subprocess, sys

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


def run(cmd, quiet=False):
    """Wall seconds and peak RSS (MiB) of one child, forked by lc-peak so that the
    RSS is the tool's own and not this interpreter's (see tests/tools/lc-peak.c)."""
    report = os.path.join(out_dir, "peak.txt")
    p = subprocess.run([PEAK, report] + cmd, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL if quiet else None)
    if p.returncode != 0:
        sys.exit(f"bench: {cmd} failed with status {p.returncode}")
    with open(report) as fh:
        secs, kib = fh.read().split()
    os.unlink(report)
    return float(secs), int(kib) / 1024


if sys.argv[1] == "gen":      # gen FOLDER [JSON of config keys that replace CFG's]
    if len(sys.argv) > 3:
        CFG.update(json.loads(sys.argv[3]))
    generate(sys.argv[2])
    sys.exit(0)
bin_dir, out_dir = sys.argv[1], sys.argv[2]
PEAK = os.path.join(os.environ.get("LC_TEST_BIN", os.path.join(ROOT, "build", "test-bin")),
                    "lc-peak")
folder = os.path.join(out_dir, "hf-llama-1.5g")
out = os.path.join(out_dir, "hf-llama-1.5g.gguf")
copy = os.path.join(out_dir, "hf-llama-1.5g.copy")
if not os.path.exists(os.path.join(folder, "config.json")):
    subprocess.run([sys.executable, __file__, "gen", folder], check=True)
size = sum(os.path.getsize(os.path.join(folder, n)) for n in os.listdir(folder))
runs = int(os.environ.get("BENCH_RUNS", "3"))
# llama.cpp's converter: $LC_REF_PY + $LC_REF_CONVERT, or the ones
# scripts/llama/make-ref-venv.sh and `scripts/make_llama_ref.py --converter-path` leave
# under build/.
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


with open(os.path.join(folder, "model.safetensors"), "rb") as fh:   # warm the cache once
    while fh.read(1 << 24):
        pass
tool = os.path.join(bin_dir, "safetensors2gguf")
# cp copies in the kernel (copy_file_range); dd bs=256K is the same bytes through user
# space (read + write). "+ sync" rows fsync the copy, as our durable default does.
cases = [("cp -r", ["cp", "-r", folder, copy]),
         ("cp -r + sync", ["sh", "-c", 'cp -r "$1" "$2" && sync "$2"/*', "sh", folder, copy]),
         ("dd bs=256K (user-space copy)", ["dd", "if=" + os.path.join(folder, "model.safetensors"),
                                          "of=" + out, "bs=256K", "status=none"])]
for t in ("f16", "q8_0"):
    cases.append((f"safetensors2gguf {t}", [tool, "-q", "--outtype", t, folder, out]))
    cases.append((f"safetensors2gguf {t} --no-fsync", [tool, "-q", "--no-fsync", "--outtype", t, folder, out]))
cases.append(("safetensors2gguf f16 --no-fsync -t 1", [tool, "-q", "--no-fsync", "-t", "1", "--outtype", "f16", folder, out]))
cases.append(("safetensors2gguf bf16 --no-fsync", [tool, "-q", "--no-fsync", "--outtype", "bf16", folder, out]))
# The most threads a run takes by default: its buffers are the largest peak RSS can get.
cases.append(("safetensors2gguf q8_0 --no-fsync -t 8", [tool, "-q", "--no-fsync", "-t", "8", "--outtype", "q8_0", folder, out]))
if have_ref:
    for t in ("f16", "q8_0"):
        cases.append((f"convert_hf_to_gguf.py {t}", [ref_py, ref, folder, "--outtype", t, "--outfile", out]))
res = {name: [] for name, _ in cases}
ref_names = [name for name, _ in cases if name.startswith("convert_hf_to_gguf")]
for name in ref_names:
    res[name + " + sync"] = []
for _ in range(runs):           # rounds interleave every case, so noise hits all alike
    for name, cmd in cases:
        fresh()
        res[name].append(run(cmd, quiet=name in ref_names))
        if name in ref_names:
            # The converter never flushes its file; our default does. Its time plus
            # `sync FILE` (an fsync of the output) is the like-for-like durable figure.
            secs, rss = res[name][-1]
            res[name + " + sync"].append((secs + run(["sync", out])[0], rss))
fresh()
print(f"hf2gguf on a {size / (1 << 30):.2f} GiB bf16 llama folder ({os.cpu_count()} cores, "
      f"median of {runs}, peak RSS the largest):")
med = {}
for name, rs in res.items():
    med[name] = statistics.median(r[0] for r in rs)
    lo, hi = min(r[0] for r in rs), max(r[0] for r in rs)
    print(f"  {name:38s} {med[name]:7.3f} s  ({lo:.3f}-{hi:.3f})   peak RSS {max(r[1] for r in rs):7.1f} MiB")
nf = med["safetensors2gguf f16 --no-fsync"]
print(f"  f16 --no-fsync / cp -r: {nf / med['cp -r']:.2f}x; f16 durable / cp -r + sync: "
      f"{med['safetensors2gguf f16'] / med['cp -r + sync']:.2f}x (target <= 1.5x); "
      f"f16 --no-fsync / dd: {nf / med['dd bs=256K (user-space copy)']:.2f}x")
if not have_ref:
    print("  convert_hf_to_gguf.py: skipped (set LC_REF_PY to a python with torch and "
          "LC_REF_CONVERT to the script, or run scripts/llama/make-ref-venv.sh)")
    sys.exit(0)
for t in ("f16", "q8_0"):
    r, rs = med[f"convert_hf_to_gguf.py {t}"], med[f"convert_hf_to_gguf.py {t} + sync"]
    print(f"  convert_hf_to_gguf.py / ours, {t}: {r / med[f'safetensors2gguf {t} --no-fsync']:.1f}x "
          f"with no fsync on either side, {rs / med[f'safetensors2gguf {t}']:.1f}x with both "
          f"durable (converter + sync vs our default); {r / med[f'safetensors2gguf {t}']:.1f}x "
          "converter vs our default (target >= 20x)")
