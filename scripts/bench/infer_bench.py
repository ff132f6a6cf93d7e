"""Bench: tokens per second of infer/'s forward pass against llama.cpp's.

The model is hf2gguf_bench.py's generated folder build/bench/hf-llama-1.5g/ (llama-shaped:
hidden 2048, 15 layers, 32/8 heads, ffn 5632, vocab 32000: 0.81 G parameters; made once,
by the same generator), converted once by our safetensors2gguf to build/bench/infer-f16.gguf
and infer-q8_0.gguf. Both engines run the same 64 token ids as one batch from position 0
and compute the logits of every position, on the same number of threads (BENCH_THREADS,
default one per core):
  ours       tests/tools/lc-infer -t T --repeat 2 (the faster of two forward calls in one
             process, so the second runs with the mapped file's pages in place), under
             lc-peak for the process's peak RSS (the mapped GGUF's resident pages count in
             it: the figure less the file size is the forward pass's own memory);
  llama.cpp  llama_cpp.Llama(n_batch = n_ubatch = 64, logits_all=True, T threads for
             batches) in build/llama-venv's python: one warm-up eval, then the faster of
             two timed evals (llama.cpp's defaults otherwise: f16 KV cache, its own
             kernels for f16 and Q8_0, which round the activations to f16 / Q8_0).
Each round runs every case once; the figures are medians over BENCH_RUNS rounds
(default 3): tokens per wall second, and tokens per CPU second (the process's CPU time
during the forward call, every thread's). On a shared machine wall time measures the
load as much as the code (a busy-waiting thread pool suffers most from it); CPU time is
the steadier figure of the work done. Target: ours within 4x of llama.cpp. No assertion:
the script reports and never fails on a figure."""
import os, statistics, subprocess, sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TEST_BIN = os.environ.get("LC_TEST_BIN", os.path.join(ROOT, "build", "test-bin"))
LLAMA_PY = os.path.join(ROOT, "build", "llama-venv", "bin", "python")
N_TOKENS = 64
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


def main():
    bin_dir, out_dir = sys.argv[1], sys.argv[2]
    folder = os.path.join(out_dir, "hf-llama-1.5g")
    if not os.path.exists(os.path.join(folder, "config.json")):
        subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "bench", "hf2gguf_bench.py"),
                        "gen", folder], check=True)
    models = {}
    for t in ("f16", "q8_0"):
        models[t] = os.path.join(out_dir, f"infer-{t}.gguf")
        if not os.path.exists(models[t]):
            subprocess.run([os.path.join(bin_dir, "safetensors2gguf"), "-q", "--no-fsync",
                            "--outtype", t, folder, models[t]], check=True)
    threads = int(os.environ.get("BENCH_THREADS", os.cpu_count() or 1))
    runs = int(os.environ.get("BENCH_RUNS", "3"))
    # Fixed ids spread over the vocabulary (the generated model has 32000).
    tokens = ",".join(str((i * 7919 + 13) % 32000) for i in range(N_TOKENS))
    tok_file = os.path.join(out_dir, "infer-tokens.txt")
    with open(tok_file, "w") as fh:
        fh.write(tokens + "\n")
    have_llama = os.path.isfile(LLAMA_PY)
    res = {}
    for _ in range(runs):
        for t, path in models.items():
            res.setdefault(("ours", t), []).append(ours(path, "@" + tok_file, threads, out_dir))
            if have_llama:
                res.setdefault(("llama.cpp", t), []).append(llama(path, tokens, threads))
    print(f"infer: forward pass of {N_TOKENS} tokens (logits at every position) on a generated "
          f"0.81 G-param llama, {threads} threads, median of {runs}:")
    for t, path in models.items():
        size = os.path.getsize(path) / (1 << 20)
        ow = statistics.median(r[0] for r in res[("ours", t)])
        oc = statistics.median(r[1] for r in res[("ours", t)])
        rss = max(r[2] for r in res[("ours", t)])
        print(f"  {t:5s} ours      {N_TOKENS / ow:7.1f} tok/s wall ({ow:6.2f} s), "
              f"{N_TOKENS / oc:7.1f} tok/CPU-s ({oc:6.2f} s)   peak RSS {rss:6.0f} MiB "
              f"(file {size:.0f} MiB mapped)")
        if have_llama:
            lw = statistics.median(r[0] for r in res[("llama.cpp", t)])
            lc = statistics.median(r[1] for r in res[("llama.cpp", t)])
            print(f"  {t:5s} llama.cpp {N_TOKENS / lw:7.1f} tok/s wall ({lw:6.2f} s), "
                  f"{N_TOKENS / lc:7.1f} tok/CPU-s ({lc:6.2f} s)")
            print(f"  {t:5s} ours / llama.cpp speed: {lw / ow:.2f}x wall, {lc / oc:.2f}x CPU "
                  "(target >= 0.25x)")
    if not have_llama:
        print("  llama.cpp: skipped (build/llama-venv is made by `make check-llama`)")


if __name__ == "__main__":
    main()
