"""Bench: the Python package (python/libconvert) beside the Python peers, side by side.

1. quantize_array Q8_0 and Q4_0 of a 2048 x 4096 float32 matrix (32 MiB) against gguf-py's
   gguf.quants.quantize (numpy), the same bytes checked; ours on one thread and on every
   core (at most 8), and beside the read bound: np.max over the same floats, on one thread
   and split over as many threads (numpy's SIMD max reads each float once and writes
   nothing: no quantizer can take less time than a read of its input).
   Target: >= 50x gguf-py.
2. Every tensor of a 1 GiB safetensors file (build/bench/st-1g.safetensors, made by
   st_bench.py's generator) through open().tensor() against safe_open(framework="np")
   .get_tensor(), the page cache warm: "get" alone (ours a view of the mapping, theirs a
   read into a new array), and get followed by a full copy (np.array(...) on ours, so
   both end with the bytes in a new array). The bf16 tensor is left out of both (numpy
   has no bfloat16 for safetensors' numpy API). Target: ours <= 1.1x its time.
3. A loop over the 10,000 tensors of a file of small tensors (16 floats each): seconds
   per tensor() against per get_tensor(). Target: <= 5 us per call.
Each figure is the median of 5 runs (3 for the slow gguf-py quantizer)."""
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))
import libconvert as lc  # noqa: E402
from gguf import GGMLQuantizationType as Q  # noqa: E402
from gguf import quants  # noqa: E402
from safetensors import safe_open  # noqa: E402
from safetensors.numpy import save_file  # noqa: E402


def median_time(fn, n=5):
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def bench_quantize():
    x = np.random.default_rng(0).standard_normal((2048, 4096)).astype(np.float32)
    mib = x.nbytes / (1 << 20)
    # The bound: one read of the input, on one thread and split over the threads ours
    # uses (np.max releases the GIL on each part).
    nthreads = min(os.cpu_count() or 1, 8)

    def read_split():
        parts = [threading.Thread(target=np.max, args=(p,)) for p in np.array_split(x, nthreads)]
        for t in parts:
            t.start()
        for t in parts:
            t.join()
    read1 = median_time(lambda: np.max(x), 9)
    readn = median_time(read_split, 9)
    print(f"python np.max of the {mib:.0f} MiB input (one read): 1 thread {read1:.4f} s "
          f"({mib / read1:.0f} MiB/s), {nthreads} threads {readn:.4f} s, the bound for the "
          f"rows below")
    for qt in ("Q8_0", "Q4_0"):
        want = quants.quantize(x, getattr(Q, qt))
        if not np.array_equal(lc.quantize_array(x, qt), want):
            sys.exit(f"bench: quantize_array {qt} differs from gguf-py")
        peer = median_time(lambda: quants.quantize(x, getattr(Q, qt)), 3)
        one = median_time(lambda: lc.quantize_array(x, qt, threads=1))
        every = median_time(lambda: lc.quantize_array(x, qt))
        print(f"python quantize_array {qt} {mib:.0f} MiB: gguf-py {peer:.3f} s "
              f"({mib / peer:.0f} MiB/s); ours 1 thread {one:.4f} s ({peer / one:.0f}x), "
              f"{nthreads} threads {every:.4f} s ({peer / every:.0f}x); the read bound "
              f"{peer / min(read1, readn):.0f}x gguf-py [target >= 50x gguf-py]")


def bench_big_file(out_dir):
    src = out_dir / "st-1g.safetensors"
    if not src.exists() or src.stat().st_size < (1 << 30):
        subprocess.run([sys.executable, str(ROOT / "scripts" / "bench" / "st_bench.py"), "gen",
                        str(src)], check=True)
    with safe_open(str(src), "np") as f:
        names = [k for k in f.keys() if f.get_slice(k).get_dtype() != "BF16"]
    total = 0
    with lc.open(src) as m:
        total = sum(m.tensors[k].nbytes for k in names)
        for k in names:        # the same bytes, and a warm page cache for both
            with safe_open(str(src), "np") as f:
                if m.tensor(k).tobytes() != f.get_tensor(k).tobytes():
                    sys.exit(f"bench: {k} differs from safe_open")

    def theirs():
        with safe_open(str(src), "np") as f:
            for k in names:
                f.get_tensor(k)

    def ours_view():
        with lc.open(src) as m:
            for k in names:
                m.tensor(k)

    def ours_copy():
        with lc.open(src) as m:
            for k in names:
                np.array(m.tensor(k))

    peer = median_time(theirs)
    view = median_time(ours_view)
    copy = median_time(ours_copy)
    mib = total / (1 << 20)
    print(f"python open().tensor() of {src.name} ({mib:.0f} MiB of {src.stat().st_size >> 20} "
          f"MiB, {len(names)} tensors): safe_open().get_tensor() {peer:.3f} s; ours view "
          f"{view * 1e3:.3f} ms ({view / peer:.4f}x), view + copy {copy:.3f} s "
          f"({copy / peer:.2f}x) [target <= 1.1x]")


def bench_small(out_dir):
    path = out_dir / "py-10k-small.safetensors"
    if not path.exists():
        save_file({f"t.{i}": np.full(16, i, np.float32) for i in range(10000)}, str(path))
    with lc.open(path) as m:
        names = list(m.tensors)
        ours = median_time(lambda: [m.tensor(k) for k in names]) / len(names)
    with safe_open(str(path), "np") as f:
        peer = median_time(lambda: [f.get_tensor(k) for k in names]) / len(names)
    t_open = median_time(lambda: lc.open(path).close())
    t_peer_open = median_time(lambda: safe_open(str(path), "np").keys())
    print(f"python tensor() over 10,000 tensors of 16 floats: ours {ours * 1e6:.2f} us per "
          f"call, safe_open().get_tensor() {peer * 1e6:.2f} us [target <= 5 us]; open() "
          f"{t_open * 1e3:.1f} ms, safe_open() {t_peer_open * 1e3:.1f} ms")


def main():
    out_dir = Path(sys.argv[1])
    out_dir.mkdir(parents=True, exist_ok=True)
    bench_quantize()
    bench_big_file(out_dir)
    bench_small(out_dir)


if __name__ == "__main__":
    main()
