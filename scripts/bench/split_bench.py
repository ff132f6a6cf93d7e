"""Bench: a model's parts as jobs of GNU parallel, against one process.

Input: build/bench/hf-llama-1.5g-bf16.gguf (~1.5 GiB; made as quantize_bench.py makes it).
Cases, each process a child of tests/tools/lc-peak (wall time, its own peak RSS):
  one file      gguf-quantize -t C --no-fsync IN OUT Q4_K_M (C: the machine's cores)
  one process, 4 parts   the same with --split-max-size 130M (4 parts, written as a set)
  4 jobs        parallel -j J lc-peak gguf-quantize -t T --no-fsync --split-max-size 130M
                --part K/4 ... ::: 1 2 3 4, J = 4 (T = max(1, C / 4)) and J = C (T = 1) when
                C differs; wall time of the whole parallel run, the sum and the largest of
                the jobs' peak RSS
Median of BENCH_RUNS rounds (default 3), rounds interleaving the cases. The 4 jobs' parts
must equal the one process's parts byte for byte, else the bench fails.
Target (issue 23): per part, peak RSS <= 128 MiB."""
import filecmp, os, shutil, statistics, subprocess, sys, time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
bin_dir, out_dir = sys.argv[1], sys.argv[2]
PEAK = os.path.join(os.environ.get("LC_TEST_BIN", os.path.join(ROOT, "build", "test-bin")),
                    "lc-peak")
src = os.path.join(out_dir, "hf-llama-1.5g-bf16.gguf")
work = os.path.join(out_dir, "split")
cores = os.cpu_count()
jobs, runs = 4, int(os.environ.get("BENCH_RUNS", "3"))
at_once = sorted({jobs, cores})                 # -j: every part at once, or one per core
tool = os.path.join(bin_dir, "gguf-quantize")
SPLIT = ["--split-max-size", "130M"]

if shutil.which("parallel") is None:
    print("split: skipped (GNU parallel is missing: scripts/bootstrap.sh installs it)")
    sys.exit(0)
if not os.path.exists(src):       # quantize_bench.py makes it; make it the same way
    subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "bench", "quantize_bench.py"),
                    bin_dir, out_dir], check=True, env=dict(os.environ, BENCH_RUNS="1"))


def peak_of(report):
    with open(report) as fh:
        secs, kib = fh.read().split()
    os.unlink(report)
    return float(secs), int(kib) / 1024


def run(cmd):
    report = os.path.join(work, "peak.txt")
    if subprocess.run([PEAK, report] + cmd, stdout=subprocess.DEVNULL).returncode != 0:
        sys.exit(f"bench: {cmd} failed")
    return peak_of(report)


def fresh(d):
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)


def parts(d, stem):
    return [os.path.join(d, f"{stem}-{k:05d}-of-{jobs:05d}.gguf") for k in range(1, jobs + 1)]


with open(src, "rb") as fh:                     # warm the cache once
    while fh.read(1 << 24):
        pass
one, par = os.path.join(work, "one"), os.path.join(work, "par")
res = {"one": [], "set": [], **{f"-j {j}": [] for j in at_once}}
for _ in range(runs):
    fresh(work)
    os.makedirs(one)
    res["one"].append(run([tool, "-q", "--no-fsync", "-t", str(cores), src,
                           os.path.join(one, "q.gguf"), "Q4_K_M"]))
    fresh(one)
    res["set"].append(run([tool, "-q", "--no-fsync", "-t", str(cores), *SPLIT, src,
                           os.path.join(one, "q.gguf"), "Q4_K_M"]))
    for j in at_once:
        fresh(par)
        threads = max(1, cores // j)
        t0 = time.monotonic()
        subprocess.run(["parallel", "--halt", "now,fail=1", "-j", str(j), PEAK,
                        os.path.join(par, "peak{}.txt"), tool, "-q", "--no-fsync", "-t",
                        str(threads), *SPLIT, "--part", f"{{}}/{jobs}", src,
                        os.path.join(par, "q.gguf"), "Q4_K_M", ":::",
                        *map(str, range(1, jobs + 1))], check=True, stdout=subprocess.DEVNULL)
        wall = time.monotonic() - t0
        peaks = [peak_of(os.path.join(par, f"peak{k}.txt"))[1] for k in range(1, jobs + 1)]
        res[f"-j {j}"].append((wall, sum(peaks), max(peaks)))
        for a, b in zip(parts(one, "q"), parts(par, "q")):
            if not filecmp.cmp(a, b, shallow=False):
                sys.exit(f"bench: {os.path.basename(b)} of the parallel jobs differs from the "
                         "set's")
shutil.rmtree(work, ignore_errors=True)

med = {k: statistics.median(r[0] for r in v) for k, v in res.items()}
size = os.path.getsize(src)
print(f"split: {size / (1 << 30):.2f} GiB bf16 GGUF to Q4_K_M on {cores} cores, median of {runs}:")
print(f"  one process, one file      {med['one']:8.2f} s   -t {cores}   peak RSS "
      f"{max(r[1] for r in res['one']):6.1f} MiB")
print(f"  one process, {jobs} parts       {med['set']:8.2f} s   -t {cores}   peak RSS "
      f"{max(r[1] for r in res['set']):6.1f} MiB")
for j in at_once:
    r = res[f"-j {j}"]
    print(f"  {jobs} jobs, parallel -j {j}     {med[f'-j {j}']:8.2f} s   -t {max(1, cores // j)} "
          f"each, peak RSS {max(x[1] for x in r):6.1f} MiB summed, {max(x[2] for x in r):6.1f} "
          f"MiB the largest job (target <= 128)")
    print(f"    speed-up over one process: {med['one'] / med[f'-j {j}']:.2f}x (one file), "
          f"{med['set'] / med[f'-j {j}']:.2f}x ({jobs} parts); parts byte-identical")
