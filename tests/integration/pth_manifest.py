"""fixtures/pth/MANIFEST-tensors.tsv, read once for the pth tests: for every file torch
wrote, its tensors in file order (name, dtype, shape, sha256 of torch's contiguous
bytes, storage-sharing group, torch version)."""
import collections
import csv
import os

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", ".."))
FIX = os.path.join(ROOT, "fixtures")


def pth_manifest():
    with open(os.path.join(FIX, "pth", "MANIFEST-tensors.tsv")) as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    by_file = collections.OrderedDict()
    for r in rows:
        by_file.setdefault(r["file"], []).append(r)
    return by_file
