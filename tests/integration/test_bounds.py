"""Work bounded by the input, whatever names a file chose (issue 11, items 8 and 9).

Each test times two inputs of the same size that differ only in what an attacker
controls, and asserts the RATIO of the two CPU times, never a wall-clock limit:

- hash flooding: 2^16 names whose FNV-1a hashes agree in their low 20 bits (the bits
  an unkeyed open-addressing table of up to 2^20 slots looks at) against 2^16 random
  names of the same length, as tensor names and metadata keys of a GGUF, tensor names
  of a safetensors file, and tensor names and storage keys of a PyTorch checkpoint;
- shard lists: an index whose 100,000 weight_map entries name 100,000 distinct shards
  against one naming a single shard (the same JSON size); no shard exists, so the time
  is the index's cost up to the first open, which fails.

CPU time of the child (user + sys, from rusage), the least of a few runs: a loaded
machine slows both sides alike. With a linear search or an unkeyed hash the ratios
are in the hundreds; the bound is generous.
"""
import io
import json
import os
import random
import resource
import struct
import subprocess
import zipfile

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.environ.get("LC_BIN", os.path.join(ROOT, "build", "bin"))
INSPECT = os.path.join(BIN, "model-inspect")

N_NAMES = 1 << 16
BLOCKS = 16          # 2 choices per block: 2^16 names
LOW_BITS = 20        # FNV-1a agreement on these low bits (3-byte blocks reach 20)
ALPHABET = b"abcdefghijklmnopqrstuvwxyz0123456789_-"
PREFIX = b"t."
# The offset basis the old tables used (libconvert/model.c, formats/pth_walk.c at
# df331c4): 1469598103934665603, one digit short of FNV's 14695981039346656037. Any
# fixed start state works the same way; this one makes the names collide there.
FNV_OFFSET, FNV_PRIME = 1469598103934665603, 0x100000001b3
MAX_RATIO = 3.0


def fnv1a(data, h=FNV_OFFSET):
    for b in data:
        h = ((h ^ b) * FNV_PRIME) & 0xFFFFFFFFFFFFFFFF
    return h


def colliding_names():
    """2^16 names of 2 + 3*16 bytes whose FNV-1a agree mod 2^LOW_BITS.

    The low k bits of FNV-1a depend only on the low k bits of the state and the input
    (xor and multiplication mod 2^64 never carry downwards). So for each block find
    two 3-byte strings that take the current state to the same low bits (a birthday
    search over all 3-byte strings of ALPHABET, vectorised); any sequence of choices
    then ends in the same low bits."""
    mask = np.uint64((1 << LOW_BITS) - 1)
    a = np.frombuffer(ALPHABET, dtype=np.uint8).astype(np.uint64)
    c0, c1, c2 = (x.ravel() for x in np.meshgrid(a, a, a, indexing="ij"))
    prime = np.uint64(FNV_PRIME)
    state = fnv1a(PREFIX)
    pairs = []
    with np.errstate(over="ignore"):
        for _ in range(BLOCKS):
            h = np.full(c0.shape, state, dtype=np.uint64)
            for c in (c0, c1, c2):
                h = (h ^ c) * prime
            low = h & mask
            order = np.argsort(low, kind="stable")
            same = np.nonzero(low[order][1:] == low[order][:-1])[0]
            assert len(same), "no collision for this block"
            i, j = order[same[0]], order[same[0] + 1]
            blk = [bytes([int(c0[k]), int(c1[k]), int(c2[k])]) for k in (i, j)]
            pairs.append(blk)
            state = fnv1a(blk[0], state)
    names = []
    for n in range(N_NAMES):
        names.append((PREFIX + b"".join(pairs[b][(n >> b) & 1] for b in range(BLOCKS))).decode())
    return names


def random_names(length, seed=11):
    rng = random.Random(seed)
    alpha = ALPHABET.decode()
    names = set()
    while len(names) < N_NAMES:
        names.add(PREFIX.decode() + "".join(rng.choice(alpha) for _ in range(length - 2)))
    return sorted(names)


@pytest.fixture(scope="module")
def names():
    bad = colliding_names()
    assert len(set(bad)) == N_NAMES
    low = {fnv1a(n.encode()) & ((1 << LOW_BITS) - 1) for n in bad[:: N_NAMES // 64]}
    assert len(low) == 1, "the generator's names do not collide"
    good = random_names(len(bad[0]))
    return bad, good


# ---- files built from a list of names ----

def safetensors_file(path, names):
    header = {n: {"dtype": "U8", "shape": [1], "data_offsets": [i, i + 1]}
              for i, n in enumerate(names)}
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + bytes(len(names)))


def gguf_str(s):
    b = s.encode()
    return struct.pack("<Q", len(b)) + b


def gguf_file(path, names):
    """Every name as a metadata key (u8) and as an F32 tensor of one element."""
    out = io.BytesIO()
    out.write(b"GGUF" + struct.pack("<IQQ", 3, len(names), len(names)))
    for n in names:
        out.write(gguf_str(n) + struct.pack("<IB", 0, 1))
    for i, n in enumerate(names):
        out.write(gguf_str(n) + struct.pack("<IQIQ", 1, 1, 0, 32 * i))
    out.write(bytes(-out.tell() % 32))
    out.write(bytes(32 * len(names)))
    with open(path, "wb") as f:
        f.write(out.getvalue())


def bstr(s):
    b = s.encode()
    return b"X" + struct.pack("<I", len(b)) + b


def pth_file(path, names):
    """A state dict {name: float tensor of 1} whose storage keys are the names too,
    pickled the way torch.save writes it (protocol 2, SETITEMS in batches of 1000)."""
    p = [b"\x80\x02ccollections\nOrderedDict\nq\x00)R"]
    for start in range(0, len(names), 1000):
        p.append(b"(")
        for n in names[start:start + 1000]:
            p.append(bstr(n) + b"ctorch._utils\n_rebuild_tensor_v2\n(")
            p.append(b"(" + bstr("storage") + b"ctorch\nFloatStorage\n" + bstr(n) + bstr("cpu"))
            p.append(b"J\x01\x00\x00\x00tQJ\x00\x00\x00\x00(J\x01\x00\x00\x00t(J\x01\x00\x00\x00t"
                     b"\x89ccollections\nOrderedDict\n)RtR")
        p.append(b"u")
    p.append(b".")
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as z:
        def put(name, data):
            z.writestr(zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0)), data)
        put("archive/data.pkl", b"".join(p))
        for n in names:
            put("archive/data/" + n, b"\0\0\x80\x3f")
        put("archive/version", b"3\n")


def cpu_seconds(args, runs=3, expect_rc=0):
    """Least user+sys CPU time of the child over `runs` runs (one when it is slow)."""
    best = None
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        r = subprocess.run(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        assert r.returncode == expect_rc, r.stderr
        t = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        best = t if best is None else min(best, t)
        if best > 20:
            break
    return max(best, 0.01), r.stderr


@pytest.mark.parametrize("fmt", ["safetensors", "gguf", "pth"])
def test_colliding_names_cost_what_random_names_cost(fmt, names, tmp_path):
    make = {"safetensors": safetensors_file, "gguf": gguf_file, "pth": pth_file}[fmt]
    times = {}
    for kind, ns in zip(("colliding", "random"), names):
        path = tmp_path / f"{kind}.{fmt}"
        make(path, ns)
        times[kind], _ = cpu_seconds([INSPECT, "--json", str(path)])
    ratio = times["colliding"] / times["random"]
    print(f"{fmt}: colliding {times['colliding']:.3f}s random {times['random']:.3f}s "
          f"x{ratio:.2f}")
    assert ratio < MAX_RATIO, f"{fmt}: colliding {times['colliding']:.2f}s vs random " \
                              f"{times['random']:.2f}s (x{ratio:.1f})"


N_SHARDS = 100_000


def write_index(folder, fname, distinct, ext):
    """weight_map of N_SHARDS tensors; `distinct` shards (names of equal length)."""
    folder.mkdir()
    wmap = {f"w.{i:06d}": f"model-{(i if distinct > 1 else 0):06d}{ext}"
            for i in range(N_SHARDS)}
    (folder / fname).write_text(json.dumps({"metadata": {"total_size": 0},
                                            "weight_map": wmap}))
    return folder / fname


@pytest.mark.parametrize("fmt", ["safetensors", "pth"])
def test_many_shards_cost_what_one_shard_costs(fmt, tmp_path):
    fname, ext = {"safetensors": ("model.safetensors.index.json", ".safetensors"),
                  "pth": ("pytorch_model.bin.index.json", ".bin")}[fmt]
    times = {}
    for distinct in (1, N_SHARDS):
        index = write_index(tmp_path / f"d{distinct}", fname, distinct, ext)
        # No shard exists: the first open fails, after the whole index was processed.
        times[distinct], stderr = cpu_seconds([INSPECT, str(index)], expect_rc=1)
        assert f"model-000000{ext}" in stderr, stderr
    ratio = times[N_SHARDS] / times[1]
    print(f"{fmt}: {N_SHARDS} shards {times[N_SHARDS]:.3f}s one shard {times[1]:.3f}s "
          f"x{ratio:.2f}")
    assert ratio < MAX_RATIO, f"{fmt}: {N_SHARDS} shards {times[N_SHARDS]:.2f}s vs one shard " \
                              f"{times[1]:.2f}s (x{ratio:.1f})"
