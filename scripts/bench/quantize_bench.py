"""Bench: gguf-quantize on a whole file, side by side with llama.cpp's quantizer.

Input: build/bench/hf-llama-1.5g/ (made by hf2gguf_bench.py: a llama-shaped model of
~0.81 G params, hidden 2048, 15 layers, GQA 32/8, random bf16 weights) converted once by
safetensors2gguf to build/bench/hf-llama-1.5g-bf16.gguf (~1.5 GiB).

Cases, each a child of tests/tools/lc-peak (wall time and the child's own peak RSS):
  cp of the GGUF (the floor), and for TYPE in Q8_0 and Q4_K_M:
  gguf-quantize -t N --no-fsync IN OUT TYPE, and llama_model_quantize with nthread N
  (what llama-quantize runs) in build/llama-venv's python; N = BENCH_THREADS, default
  the machine's cores. llama.cpp's figure includes its interpreter (~30 MiB of RSS) and
  never fsyncs, hence --no-fsync on our side. Median of BENCH_RUNS rounds (default 3),
  rounds interleaving the cases. When both sides ran, the two files are compared byte
  for byte, and a difference fails the bench.
Targets (issue 9): whole-file Q4_K_M >= 10x faster than llama.cpp's; peak RSS <= 128 MiB."""
import filecmp, os, statistics, subprocess, sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
bin_dir, out_dir = sys.argv[1], sys.argv[2]
PEAK = os.path.join(os.environ.get("LC_TEST_BIN", os.path.join(ROOT, "build", "test-bin")),
                    "lc-peak")
LLAMA_PY = os.environ.get("LC_LLAMA_PY") or os.path.join(ROOT, "build", "llama-venv", "bin",
                                                         "python")
folder = os.path.join(out_dir, "hf-llama-1.5g")
src = os.path.join(out_dir, "hf-llama-1.5g-bf16.gguf")
ours_out, ref_out = os.path.join(out_dir, "q-ours.gguf"), os.path.join(out_dir, "q-ref.gguf")
threads = int(os.environ.get("BENCH_THREADS") or os.cpu_count())
runs = int(os.environ.get("BENCH_RUNS", "3"))
FTYPE = {"Q8_0": 7, "Q4_K_M": 15}
DRIVER = r"""
import ctypes, sys, llama_cpp
llama_cpp.llama_backend_init()
cb = llama_cpp.llama_log_callback(lambda l, t, u: None)
llama_cpp.llama_log_set(cb, ctypes.c_void_p())
p = llama_cpp.llama_model_quantize_default_params()
p.ftype, p.nthread = int(sys.argv[3]), int(sys.argv[4])
sys.exit(llama_cpp.llama_model_quantize(sys.argv[1].encode(), sys.argv[2].encode(), ctypes.byref(p)))
"""


def run(cmd):
    report = os.path.join(out_dir, "peak.txt")
    p = subprocess.run([PEAK, report] + cmd, stdout=subprocess.DEVNULL)
    if p.returncode != 0:
        sys.exit(f"bench: {cmd} failed with status {p.returncode}")
    with open(report) as fh:
        secs, kib = fh.read().split()
    os.unlink(report)
    return float(secs), int(kib) / 1024


if not os.path.exists(os.path.join(folder, "config.json")):
    subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "bench", "hf2gguf_bench.py"),
                    "gen", folder], check=True)
if not os.path.exists(src):
    subprocess.run([os.path.join(bin_dir, "safetensors2gguf"), "-q", "--outtype", "bf16", folder,
                    src + ".part"], check=True)
    os.rename(src + ".part", src)
have_llama = os.path.isfile(LLAMA_PY)
with open(src, "rb") as fh:                     # warm the cache once
    while fh.read(1 << 24):
        pass
tool = os.path.join(bin_dir, "gguf-quantize")


def clean():
    for p in (ours_out, ref_out):
        if os.path.exists(p):
            os.unlink(p)


res = {"cp": []}
for t in FTYPE:
    res[f"gguf-quantize {t}"] = []
    if have_llama:
        res[f"llama_model_quantize {t}"] = []
for _ in range(runs):           # rounds interleave every case, so noise hits all alike
    clean()
    res["cp"].append(run(["cp", src, ours_out]))
    for t in FTYPE:
        clean()
        res[f"gguf-quantize {t}"].append(run([tool, "-q", "--no-fsync", "-t", str(threads), src,
                                              ours_out, t]))
        if have_llama:
            res[f"llama_model_quantize {t}"].append(run([LLAMA_PY, "-c", DRIVER, src, ref_out,
                                                         str(FTYPE[t]), str(threads)]))
            if not filecmp.cmp(ours_out, ref_out, shallow=False):
                sys.exit(f"bench: {t}: gguf-quantize and llama_model_quantize differ")
clean()
size = os.path.getsize(src)
print(f"gguf-quantize on a {size / (1 << 30):.2f} GiB bf16 GGUF ({threads} threads of "
      f"{os.cpu_count()} cores, median of {runs}, peak RSS the largest):")
med = {}
for name, rs in res.items():
    med[name] = statistics.median(r[0] for r in rs)
    lo, hi = min(r[0] for r in rs), max(r[0] for r in rs)
    print(f"  {name:34s} {med[name]:8.3f} s  ({lo:.3f}-{hi:.3f})  {size / med[name] / 1e9:6.2f} GB/s"
          f"   peak RSS {max(r[1] for r in rs):7.1f} MiB")
if not have_llama:
    print("  llama_model_quantize: skipped (no build/llama-venv: make check-llama builds it)")
    sys.exit(0)
for t in FTYPE:
    print(f"  llama_model_quantize / gguf-quantize, {t}: "
          f"{med[f'llama_model_quantize {t}'] / med[f'gguf-quantize {t}']:.2f}x faster"
          f"{' (target >= 10x)' if t == 'Q4_K_M' else ''}; files byte-identical")
