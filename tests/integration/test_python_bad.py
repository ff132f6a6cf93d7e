"""Hostile and broken inputs through the package behave as through the tools: every file
in fixtures/bad/ raises a libconvert.Error whose text is the line the tool prints (file,
entry, offset, message), with the code its name gives; nothing crashes Python; a
hostile pickle raises ForbiddenError naming its global, and nothing in it runs."""
import csv
import json
import subprocess
import sys

import pytest

from pylc import BIN, FIX, ROOT

BAD = sorted(p for p in (FIX / "bad").rglob("*.bin"))
CODES = {"io", "nomem", "truncated", "malformed", "overflow", "unsupported", "forbidden",
         "notfound", "mismatch", "arg"}

# One process opens every file (a crash there fails the test instead of pytest) from an
# empty folder, so that a payload that ran would leave its marker there.
WALK = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
import libconvert as lc
out = {}
FORMAT = {"gguf": "gguf", "safetensors": "safetensors", "pth": "pth", "pickle": "pth",
          "zip": "pth"}
for path in sys.argv[2:]:
    folder = path.split("/")[-2]
    try:
        with lc.open(path, format=FORMAT.get(folder)) as m:
            for name in m.tensors:
                m.tensor(name)
        out[path] = None
    except lc.Error as e:
        out[path] = {"code": e.code, "text": str(e), "path": e.path, "where": e.where,
                     "offset": e.offset, "message": e.message, "cls": type(e).__name__}
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def walked(tmp_path_factory):
    cwd = tmp_path_factory.mktemp("victim")
    r = subprocess.run([sys.executable, "-c", WALK, str(ROOT / "python"), *map(str, BAD)],
                       capture_output=True, text=True, cwd=cwd, timeout=600)
    assert r.returncode == 0, f"the walk crashed ({r.returncode}): {r.stderr[-2000:]}"
    assert list(cwd.iterdir()) == [], "a payload ran: it left a file behind"
    return json.loads(r.stdout)


def test_walk_covers_every_bad_fixture(walked):
    assert len(walked) == len(BAD) > 250


def tool_line(path):
    """The one line the tool of the file's format prints for PATH (open() is given that
    format, as the tool reads any file as its own format); model-inspect's for the
    tokenizer files of spm/, which no model reader takes."""
    out = "/nonexistent/x.safetensors"
    cmd = {"gguf": ["gguf2safetensors", "-q", str(path), out],
           "safetensors": ["safetensors-rewrite", "-q", str(path), out],
           "pth": ["pth2safetensors", "--list", str(path)],
           "pickle": ["pth2safetensors", "--list", str(path)],
           "zip": ["pth2safetensors", "--list", str(path)],
           }.get(path.parent.name, ["model-inspect", str(path)])
    cmd[0] = str(BIN / cmd[0])
    r = subprocess.run(cmd, capture_output=True, text=True)
    assert r.returncode == 1
    prog, _, line = r.stderr.strip().partition(": ")
    return line


@pytest.mark.parametrize("path", BAD, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_bad_fixture_raises_the_tools_error(walked, path):
    got = walked[str(path)]
    assert got is not None, "opened without an error"
    assert got["code"] in CODES and got["path"] == str(path)
    assert got["text"] == tool_line(path)
    expected = path.name.split("-")[0]
    # zip/ holds bare archives for the zip layer and pickle/ bare pickles (their codes:
    # EXPECT.tsv, below); through the checkpoint reader those may fail another way.
    if path.parent.name in ("gguf", "safetensors", "pth"):
        assert got["code"] == expected, (got, expected)
    if got["code"] in ("truncated", "malformed", "overflow", "forbidden") and \
            path.parent.name != "spm":
        assert got["offset"] is not None, got


def test_hostile_pickles_name_their_global(walked):
    with open(FIX / "bad" / "pickle" / "EXPECT.tsv") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    forbidden = [r for r in rows if r["code"] == "forbidden"]
    assert len(forbidden) > 15
    for r in forbidden:
        got = walked[str(FIX / "bad" / "pickle" / r["file"])]
        assert got["cls"] == "ForbiddenError", r
        if r["global"] != "-":      # "-": an extension code, no name to give
            assert r["global"] in got["message"], (r, got)
        assert got["offset"] == int(r["offset"]), (r, got)
    for p in (FIX / "bad" / "pth").glob("forbidden-*.bin"):
        got = walked[str(p)]
        assert got["cls"] == "ForbiddenError" and "is not on the allowlist" in got["message"]
        mod, name = p.stem.split("-", 1)[1].split("_", 1)
        assert f"{mod}.{name}" in got["message"].lower()


def test_truncated_files_raise_with_their_offset(walked):
    for p in (FIX / "bad" / "safetensors").glob("truncated-cut-at-*.bin"):
        got = walked[str(p)]
        assert got["cls"] == "TruncatedError" and got["offset"] is not None
        assert got["offset"] <= p.stat().st_size
    for p in (FIX / "bad" / "gguf").glob("truncated-*.bin"):
        got = walked[str(p)]
        assert got["cls"] == "TruncatedError"
        assert got["offset"] is not None and got["offset"] <= p.stat().st_size, (p.name, got)
