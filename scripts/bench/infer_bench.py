"""Bench: tokens per second of infer/'s forward pass against llama.cpp's, at several
sequence lengths.

The model is a generated 0.2 G-parameter llama, build/bench/hf-llama-200m/ (made once by
hf2gguf_bench.py's generator with hidden 1024, 12 layers, 16/4 heads, ffn 2816, vocab
32000), converted once by our safetensors2gguf to build/bench/infer-f16.gguf and
infer-q8_0.gguf, and by our gguf-quantize from the f16 file to infer-q4_k_m.gguf: the size
of model an importance matrix is computed with in 100-200 chunks of 512 tokens. For each
length N in BENCH_TOKENS (default 64,512,2048) both engines run the same N token ids as
one batch from position 0 and compute the logits of every position, on the same number
of threads (BENCH_THREADS, default one per core):
  ours       tests/tools/lc-infer -t T --repeat 2 (the faster of two forward calls in one
             process, so the second runs with the mapped file's pages in place), under
             lc-peak for the process's peak RSS (the mapped GGUF's resident pages count in
             it: the figure less the file size is the forward pass's own memory);
  llama.cpp  llama_cpp.Llama(n_batch = n_ubatch = N, logits_all=True, T threads for
             batches) in build/llama-venv's python: one warm-up eval, then the faster of
             two timed evals (llama.cpp's defaults otherwise: f16 KV cache, its own
             kernels for each type, which round the activations to f16 / Q8_0 / Q8_K).
Each round runs every case once; the figures are medians over BENCH_RUNS rounds
(default 3): tokens per wall second, and tokens per CPU second (the process's CPU time
during the forward call, every thread's). On a shared machine wall time measures the
load as much as the code; CPU time is the steadier figure of the work done. Target:
ours >= 0.5x llama.cpp at 512 tokens for every type, and ours flat from 64 to 2048
tokens (the last column: tok/s at N over tok/s at the first N). No assertion: the script
reports and never fails on a figure."""
import json, os, statistics, subprocess, sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TEST_BIN = os.environ.get("LC_TEST_BIN", os.path.join(ROOT, "build", "test-bin"))
LLAMA_PY = os.path.join(ROOT, "build", "llama-venv", "bin", "python")
SHAPE = {"hidden_size": 1024, "intermediate_size": 2816, "num_hidden_layers": 12,
         "num_attention_heads": 16, "num_key_value_heads": 4}
LLAMA_CODE = r"""
import sys, time, llama_cpp
path, threads, toks = sys.argv[1], int(sys.argv[2]), [int(x) for x in sys.argv[3].split(",")]
m = llama_cpp.Llama(model_path=path, n_ctx=2 * len(toks), n_batch=len(toks), n_ubatch=len(toks),
                    logits_all=True, n_threads=threads, n_threads_batch=threads, verbose=False)
best = None
for i in range(3):
    m.reset()
    t0, c0 = time.perf_counter(), time.process_time()
    m.eval(toks)
    dt, dc = time.perf_counter() - t0, time.process_time() - c0
    if i and (best is None or dt < best[0]):
        best = (dt, dc)
print(*best)
"""


def ours(model, tokens, threads, out_dir):
    report, out = os.path.join(out_dir, "peak.txt"), os.path.join(out_dir, "infer-logits.f32")
    p = subprocess.run([os.path.join(TEST_BIN, "lc-peak"), report,
                        os.path.join(TEST_BIN, "lc-infer"), "-t", str(threads), "--repeat", "2",
                        model, tokens, out], capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"bench: lc-infer {model} failed: {p.stderr}")
    with open(report) as fh:
        _, kib = fh.read().split()
    os.unlink(report)
    os.unlink(out)
    wall, cpu = map(float, p.stdout.split()[2:4])
    return wall, cpu, int(kib) / 1024


def llama(model, tokens, threads):
    p = subprocess.run([LLAMA_PY, "-c", LLAMA_CODE, model, str(threads), tokens],
                       capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"bench: llama.cpp on {model} failed: {p.stderr[-2000:]}")
    wall, cpu = map(float, p.stdout.split()[-2:])
    return wall, cpu, 0.0


def make_models(bin_dir, out_dir):
    folder = os.path.join(out_dir, "hf-llama-200m")
    if not os.path.exists(os.path.join(folder, "config.json")):
        subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "bench", "hf2gguf_bench.py"),
                        "gen", folder, json.dumps(SHAPE)], check=True)
    models = {t: os.path.join(out_dir, f"infer-200m-{t}.gguf") for t in ("f16", "q8_0", "q4_k_m")}
    for t in ("f16", "q8_0"):
        if not os.path.exists(models[t]):
            subprocess.run([os.path.join(bin_dir, "safetensors2gguf"), "-q", "--no-fsync",
                            "--outtype", t, folder, models[t]], check=True)
    if not os.path.exists(models["q4_k_m"]):
        subprocess.run([os.path.join(bin_dir, "gguf-quantize"), models["f16"], models["q4_k_m"],
                        "Q4_K_M"], check=True, stdout=subprocess.DEVNULL)
    return models


def main():
    bin_dir, out_dir = sys.argv[1], sys.argv[2]
    os.makedirs(out_dir, exist_ok=True)
    models = make_models(bin_dir, out_dir)
    threads = int(os.environ.get("BENCH_THREADS", os.cpu_count() or 1))
    runs = int(os.environ.get("BENCH_RUNS", "3"))
    lengths = [int(x) for x in os.environ.get("BENCH_TOKENS", "64,512,2048").split(",")]
    have_llama = os.path.isfile(LLAMA_PY)
    res = {}
    for _ in range(runs):
        for n in lengths:
            # Fixed ids spread over the vocabulary (the generated model has 32000).
            tokens = ",".join(str((i * 7919 + 13) % 32000) for i in range(n))
            tok_file = os.path.join(out_dir, f"infer-tokens-{n}.txt")
            with open(tok_file, "w") as fh:
                fh.write(tokens + "\n")
            for t, path in models.items():
                res.setdefault(("ours", t, n), []).append(ours(path, "@" + tok_file, threads,
                                                               out_dir))
                if have_llama:
                    res.setdefault(("llama.cpp", t, n), []).append(llama(path, tokens, threads))
    print(f"infer: forward pass of N tokens (logits at every position) on a generated "
          f"0.2 G-param llama, {threads} threads, median of {runs} (tok/s wall, tok/CPU-s):")
    for t, path in models.items():
        size = os.path.getsize(path) / (1 << 20)
        base = None
        for n in lengths:
            med = lambda who, i: statistics.median(r[i] for r in res[(who, t, n)])
            ow, oc = med("ours", 0), med("ours", 1)
            rss = max(r[2] for r in res[("ours", t, n)])
            base = base or n / ow
            line = (f"  {t:6s} N={n:5d} ours {n / ow:7.1f} wall {n / oc:7.1f} CPU, peak RSS "
                    f"{rss:5.0f} MiB (file {size:.0f} MiB), flat {n / ow / base:4.2f}")
            if have_llama:
                lw, lc = med("llama.cpp", 0), med("llama.cpp", 1)
                line += (f" | llama.cpp {n / lw:7.1f} wall {n / lc:7.1f} CPU | ours/llama.cpp "
                         f"{lw / ow:4.2f}x wall {lc / oc:4.2f}x CPU")
            print(line)
    print("  target: ours/llama.cpp >= 0.5x at N=512 for every type; flat ~1 from 64 to 2048")
    if not have_llama:
        print("  llama.cpp: skipped (build/llama-venv is made by `make check-llama`)")


if __name__ == "__main__":
    main()
