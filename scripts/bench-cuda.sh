#!/usr/bin/env bash
# make bench-cuda: the CUDA back end's speed, with its bounds and the CPU, in one run.
#  1. tests/tools/lc-cuda-bench: per type, the kernels alone (GB/s of f32, and their memory
#     traffic as a share of a device-to-device copy measured in the same run: the issue's
#     target is >= 50 %), host memory to host memory through --device's staging (and its
#     source bytes' rate as a share of the host-to-device copy), and the CPU path on one
#     thread and on every core.
#  2. Whole files: gguf-quantize on the ~1.5 GiB bf16 GGUF of make bench
#     (scripts/bench/quantize_bench.py makes it), Q8_0 and Q4_K_M, on the CPU (every core)
#     and with --device cuda, beside cp of the same file; the two outputs compared byte for
#     byte; GB/s of the input, and the device's as a share of the host-to-device copy
#     bound (the issue's target is >= 80 % for a model that fits in device memory).
# Without a device it prints why and exits 0: nothing here can run on the CPU alone.
#   LC_BIN, LC_TEST_BIN   the CUDA=1 build's folders
#   LC_BENCH_CUDA_MIB     MiB of f32 per type (default 256); LC_BENCH_REPS (default 5)
#   BENCH_RUNS            whole-file rounds, median kept (default 3)
set -euo pipefail
: "${LC_BIN:?}" "${LC_TEST_BIN:?}" "${PY:?}"
if ! probe=$("$LC_TEST_BIN/lc-cuda-check" probe); then
    echo "bench-cuda: skipped: $probe"
    exit 0
fi
echo "== CUDA back end: $probe =="
bench=$("$LC_TEST_BIN/lc-cuda-bench" "${LC_BENCH_CUDA_MIB:-256}" "${LC_BENCH_REPS:-5}")
echo "$bench"
h2d=$(echo "$bench" | sed -n 's/.*host->device \([0-9.]*\) GB\/s.*/\1/p')

out=build/bench
mkdir -p "$out"
"$PY" - "$LC_BIN" "$out" "$h2d" <<'PYEOF'
import filecmp, os, statistics, subprocess, sys, time
bin_dir, out_dir, h2d = sys.argv[1], sys.argv[2], float(sys.argv[3] or 0)
folder = os.path.join(out_dir, "hf-llama-1.5g")
src = os.path.join(out_dir, "hf-llama-1.5g-bf16.gguf")
if not os.path.exists(os.path.join(folder, "config.json")):
    subprocess.run([sys.executable, "scripts/bench/hf2gguf_bench.py", "gen", folder], check=True)
if not os.path.exists(src):
    subprocess.run([os.path.join(bin_dir, "safetensors2gguf"), "-q", "--outtype", "bf16",
                    folder, src + ".part"], check=True)
    os.rename(src + ".part", src)
tool = os.path.join(bin_dir, "gguf-quantize")
cpu_out, gpu_out = os.path.join(out_dir, "q-cpu.gguf"), os.path.join(out_dir, "q-gpu.gguf")
runs = int(os.environ.get("BENCH_RUNS", "3"))
size = os.path.getsize(src)
with open(src, "rb") as fh:                       # warm the page cache once
    while fh.read(1 << 24):
        pass
def timed(cmd):
    t = time.monotonic()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return time.monotonic() - t
res = {}
for _ in range(runs):
    res.setdefault("cp", []).append(timed(["cp", src, cpu_out]))
    for t in ("Q8_0", "Q4_K_M"):
        res.setdefault(f"cpu {t}", []).append(timed([tool, "-q", "--no-fsync", src, cpu_out, t]))
        res.setdefault(f"cuda {t}", []).append(timed([tool, "-q", "--no-fsync", "--device", "cuda",
                                                     src, gpu_out, t]))
        if not filecmp.cmp(cpu_out, gpu_out, shallow=False):
            sys.exit(f"bench-cuda: {t}: --device cuda wrote other bytes than the CPU")
print(f"whole file: gguf-quantize on a {size / (1 << 30):.2f} GiB bf16 GGUF, median of {runs}; "
      f"outputs identical")
for name, ts in res.items():
    m = statistics.median(ts)
    share = f"   {100 * size / m / 1e9 / h2d:5.1f} % of the host->device copy" \
        if name.startswith("cuda") and h2d else ""
    print(f"  {name:14s} {m:8.3f} s  {size / m / 1e9:6.2f} GB/s of input{share}")
for p in (cpu_out, gpu_out):
    if os.path.exists(p):
        os.unlink(p)
PYEOF
