"""Oracle tests for formats/zip: lc-zip-cat against Python's zipfile on every fixture,
and every bad-corpus file refused with the code its name starts with."""
import glob
import hashlib
import os
import struct
import subprocess
import zipfile

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CAT = os.path.join(os.environ.get("LC_TEST_BIN", os.path.join(ROOT, "build/test-bin")),
                   "lc-zip-cat")
GOOD = sorted(glob.glob(os.path.join(ROOT, "fixtures/zip/*.zip")))
BAD = sorted(glob.glob(os.path.join(ROOT, "fixtures/bad/zip/*.bin")))


def run(*args):
    return subprocess.run([CAT, *args], capture_output=True, timeout=60)


def data_offset(raw, header_offset):
    nlen, xlen = struct.unpack_from("<HH", raw, header_offset + 26)
    return header_offset + 30 + nlen + xlen


def test_fixtures_exist():
    assert len(GOOD) >= 7 and len(BAD) >= 40


@pytest.mark.parametrize("path", GOOD, ids=os.path.basename)
def test_listing_matches_zipfile(path):
    raw = open(path, "rb").read()
    p = run(path)
    assert p.returncode == 0, p.stderr.decode()
    got = [line.split("\t") for line in p.stdout.decode().splitlines()]
    with zipfile.ZipFile(path) as z:
        want = [[i.filename, str(i.compress_type), str(i.compress_size), str(i.file_size),
                 "%08x" % i.CRC, str(data_offset(raw, i.header_offset))] for i in z.infolist()]
    assert got == want


@pytest.mark.parametrize("path", GOOD, ids=os.path.basename)
def test_entry_bytes_match_zipfile(path):
    with zipfile.ZipFile(path) as z:
        for name in z.namelist():
            p = run(path, name)
            assert p.returncode == 0, p.stderr.decode()
            assert p.stdout == z.read(name), name
    p = run("--check", path)
    assert p.returncode == 0, p.stderr.decode()


def test_torchlike_storages_are_64_byte_aligned():
    path = os.path.join(ROOT, "fixtures/zip/torchlike.zip")
    rows = [line.split("\t") for line in run(path).stdout.decode().splitlines()]
    assert rows, "no entries listed"
    for name, method, _, _, _, off in rows:
        assert method == "0"
        assert int(off) % 64 == 0, name


def test_missing_entry_is_notfound():
    p = run(GOOD[0], "no/such/entry")
    assert p.returncode == 1
    assert p.stderr.decode().startswith("lc-zip-cat: notfound:")


@pytest.mark.parametrize("path", BAD, ids=os.path.basename)
def test_bad_corpus_refused_with_its_code(path):
    want = os.path.basename(path).split("-")[0]
    p = run("--check", path)
    assert p.returncode == 1, p.stdout[:200]
    assert p.stderr.decode().startswith("lc-zip-cat: %s:" % want), p.stderr.decode()


def test_manifest_rows_match_files():
    rows = {}
    with open(os.path.join(ROOT, "fixtures/MANIFEST.tsv")) as f:
        for line in f.read().splitlines()[1:]:
            cols = line.split("\t")
            rows[cols[0]] = cols
    for path in GOOD + BAD:
        rel = os.path.relpath(path, os.path.join(ROOT, "fixtures"))
        assert rel in rows, rel
        assert rows[rel][3] == hashlib.sha256(open(path, "rb").read()).hexdigest(), rel


def test_deflate_pread_out_of_order_across_entries(tmp_path):
    """Writers read DEFLATE entries from several threads, so reads come a little out of
    order and alternate between entries: zip.c keeps a stream per entry (4) with the last
    8 MiB it made. Every read here must give zipfile's bytes: forward, a little back (from
    the history), far back (a restart), interleaved over three entries (3 streams), and
    a fourth and fifth entry (the least recently used stream is replaced)."""
    import numpy as np
    rng = np.random.default_rng(7)
    mib = 1 << 20
    data = {f"e{i}": rng.integers(0, 16, size=12 * mib, dtype=np.uint8).tobytes() for i in range(5)}
    path = tmp_path / "deflated.zip"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as z:
        for name, b in data.items():
            z.writestr(name, b)
    plan = []
    chunk = 256 << 10
    for k in range(0, 10 * mib // chunk, 2):       # pairs of chunks swapped, 3 entries
        for name in ("e0", "e1", "e2"):
            plan += [(name, (k + 1) * chunk, chunk), (name, k * chunk, chunk)]
    plan += [("e0", 10 * mib, 1000), ("e0", 10 * mib - 3 * mib, 4096),   # back, in history
             ("e1", 100, 50),                                          # far back: restart
             ("e3", 5 * mib, 7), ("e4", 1, 3),                          # evicts e2, e0 ...
             ("e2", 12 * mib - 10, 10), ("e0", 12 * mib - 5, 5), ("e4", 0, 12 * mib)]
    r = subprocess.run([CAT, "--pread", str(path)], input="".join(f"{n} {o} {l}\n" for n, o, l in plan).encode(),
                       capture_output=True)
    assert r.returncode == 0, r.stderr.decode()
    want = b"".join(data[n][o:o + l] for n, o, l in plan)
    assert len(r.stdout) == len(want)
    assert r.stdout == want
