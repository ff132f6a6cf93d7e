"""fixtures/MANIFEST.tsv is the record of where every fixture came from: each listed
file exists with the recorded sha256, and every committed fixture is listed."""
import hashlib
import os
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIX = os.path.join(ROOT, "fixtures")


def rows():
    with open(os.path.join(FIX, "MANIFEST.tsv")) as f:
        lines = f.read().splitlines()
    assert lines[0].split("\t")[:4] == ["file", "producer", "producer_version", "sha256"]
    return [line.split("\t") for line in lines[1:]]


def test_every_row_matches_its_file():
    seen = set()
    for cols in rows():
        assert len(cols) >= 4, cols
        path = cols[0]
        assert path not in seen, "listed twice: " + path
        seen.add(path)
        with open(os.path.join(FIX, path), "rb") as f:
            assert hashlib.sha256(f.read()).hexdigest() == cols[3], path
        assert cols[1] and cols[2], "producer and version must be named: " + path


def test_every_fixture_is_listed():
    listed = {cols[0] for cols in rows()}
    tracked = subprocess.run(["git", "ls-files", "fixtures"], cwd=ROOT, capture_output=True,
                             text=True, check=True).stdout.split()
    if not tracked:  # not a git checkout: walk the folder instead
        tracked = [os.path.relpath(os.path.join(d, n), ROOT)
                   for d, _, ns in os.walk(FIX) for n in ns]
    missing = [p for p in (os.path.relpath(t, "fixtures") for t in tracked)
               if p != "MANIFEST.tsv" and not p.endswith("EXPECT.tsv") and p not in listed]
    assert not missing, "fixtures not in MANIFEST.tsv: %s" % missing[:20]
