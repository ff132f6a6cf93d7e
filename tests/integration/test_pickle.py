"""Oracle tests for the restricted pickle VM (formats/pickle.c) through the test driver
lc-pickle-dump: CPython's pickle is the producer, picklescan the peer scanner.

Run by `make test-py` with LC_TEST_BIN set to build/test-bin."""
import collections
import csv
import io
import os
import pickle
import struct
import subprocess
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
from make_hostile_pickles import rich_object  # noqa: E402

BAD = os.path.join(ROOT, "fixtures", "bad", "pickle")
GOOD = os.path.join(ROOT, "fixtures", "pickle")
DUMP = os.path.join(os.environ.get("LC_TEST_BIN", os.path.join(ROOT, "build", "test-bin")),
                    "lc-pickle-dump")

with open(os.path.join(BAD, "EXPECT.tsv")) as f:
    EXPECT = list(csv.DictReader(f, delimiter="\t"))
HOSTILE = [r for r in EXPECT if r["code"] == "forbidden"]


def run(*args, cwd=None):
    return subprocess.run([DUMP, *args], capture_output=True, cwd=cwd)


# ---- the expected text, built from Python values (the driver's format) ----

def _labelable(v):
    if type(v) in (tuple, frozenset):
        return len(v) > 0
    return isinstance(v, (list, dict, set))


def _kids(v):
    if isinstance(v, dict):
        return [x for kv in v.items() for x in kv]
    if isinstance(v, (tuple, list, set, frozenset)):
        return list(v)
    return []


def expected(root):
    """The driver's text for a Python value: a container reached twice (same object,
    as pickle's memo preserves identity) prints "#N=" first and "@N" after."""
    indeg = {}

    def count(v):
        first = id(v) not in indeg
        indeg[id(v)] = indeg.get(id(v), 0) + 1
        if first and _labelable(v):
            for k in _kids(v):
                count(k)

    count(root)
    labels = {}

    def fmt(v):
        pre = ""
        if _labelable(v) and indeg[id(v)] > 1:
            if id(v) in labels:
                return "@%d" % labels[id(v)]
            labels[id(v)] = len(labels) + 1
            pre = "#%d=" % labels[id(v)]
        return pre + body(v)

    def seq(items):
        return ", ".join(fmt(x) for x in items)

    def body(v):
        if v is None:
            return "None"
        if isinstance(v, bool):
            return "True" if v else "False"
        if isinstance(v, int):
            if -2**63 <= v < 2**63:
                return str(v)
            n = 1
            while True:
                try:
                    return "bigint(%s)" % v.to_bytes(n, "little", signed=True).hex()
                except OverflowError:
                    n += 1
        if isinstance(v, float):
            return "float(nan)" if v != v else "float(%s)" % ("%.17g" % v)
        if isinstance(v, str):
            out = []
            for ch in v:
                if ch in '"\\':
                    out.append("\\" + ch)
                elif ord(ch) < 0x20 or ord(ch) == 0x7F:
                    out.append("\\u%04x" % ord(ch))
                else:
                    out.append(ch)
            return '"' + "".join(out) + '"'
        if isinstance(v, bytes):
            return "b'%s'" % v.hex()
        if isinstance(v, bytearray):
            return "bytearray(%s)" % v.hex()
        if isinstance(v, tuple):
            return "(" + seq(v) + ")"
        if isinstance(v, list):
            return "[" + seq(v) + "]"
        if isinstance(v, frozenset):
            return "frozenset{" + seq(v) + "}"
        if isinstance(v, set):
            return "set{" + seq(v) + "}"
        if isinstance(v, dict):
            pre = "OrderedDict{" if isinstance(v, collections.OrderedDict) else "{"
            return pre + ", ".join(fmt(k) + ": " + fmt(x) for k, x in v.items()) + "}"
        raise TypeError(type(v))

    return fmt(root) + "\n"


def dump_of(data, tmp_path):
    p = tmp_path / "x.pkl"
    p.write_bytes(data)
    r = run(str(p))
    assert r.returncode == 0, r.stderr.decode()
    return r.stdout.decode()


# ---- values: CPython's pickles read back exactly ----

@pytest.mark.parametrize("proto", range(6))
def test_rich_object_every_protocol(proto, tmp_path):
    obj = rich_object()
    assert dump_of(pickle.dumps(obj, protocol=proto), tmp_path) == expected(obj)


class _DataOnly(pickle.Unpickler):
    """Loads our own fixtures in Python without letting them name anything else."""
    OK = {("collections", "OrderedDict"), ("builtins", "set"), ("builtins", "frozenset"),
          ("builtins", "bytearray"), ("builtins", "bytes"), ("_codecs", "encode")}

    def find_class(self, module, name):
        canon = "builtins" if module == "__builtin__" else module  # protocol < 3 spelling
        assert (canon, name) in self.OK, (module, name)
        return super().find_class(module, name)


@pytest.mark.parametrize("name", sorted(os.listdir(GOOD)))
def test_committed_fixtures(name):
    with open(os.path.join(GOOD, name), "rb") as f:
        data = f.read()
    r = run(os.path.join(GOOD, name))
    assert r.returncode == 0, r.stderr.decode()
    assert r.stdout.decode() == expected(_DataOnly(io.BytesIO(data)).load())


def test_torch_shaped_tree(tmp_path):
    # The shape pth.c walks: REDUCE(_rebuild_tensor_v2, (PERSID((...)), 0, (2, 2), (2, 1),
    # False, OrderedDict())) inside an OrderedDict, hand-assembled as torch writes it.
    def s(x):
        return b"X" + struct.pack("<I", len(x)) + x.encode()
    data = (b"\x80\x02ccollections\nOrderedDict\nq\x00)Rq\x01" + s("w")
            + b"ctorch._utils\n_rebuild_tensor_v2\nq\x02((" + s("storage")
            + b"ctorch\nFloatStorage\nq\x03" + s("0") + s("cpu") + b"K\x04tq\x04QK\x00K\x02K\x02"
            b"\x86K\x02K\x01\x86\x89h\x00)Rq\x05tq\x06Rq\x07s.")
    want = ('OrderedDict{"w": reduce(global(torch._utils._rebuild_tensor_v2), (persid(("storage",'
            ' global(torch.FloatStorage), "0", "cpu", 4)), 0, (2, 2), (2, 1), False,'
            ' OrderedDict{}))}\n')
    assert dump_of(data, tmp_path) == want


@pytest.mark.parametrize("proto", range(6))
def test_state_dict_metadata_is_build_state(proto, tmp_path):
    # torch's state_dict() is an OrderedDict carrying a _metadata attribute: pickle
    # writes it as BUILD state after the items, and we keep it on the dict.
    sd = collections.OrderedDict(w=1)
    sd._metadata = collections.OrderedDict([("", {"version": 1})])
    want = 'OrderedDict{"w": 1}.state({"_metadata": OrderedDict{"": {"version": 1}}})\n'
    assert dump_of(pickle.dumps(sd, protocol=proto), tmp_path) == want


# ---- hostile corpus: refused, named, nothing run ----

@pytest.mark.parametrize("row", HOSTILE, ids=lambda r: r["file"])
def test_hostile_refused_and_nothing_runs(row, tmp_path):
    (tmp_path / "lc-victim").mkdir()
    for args in ([], ["--scan"]):
        r = run(*args, os.path.join(BAD, row["file"]), cwd=tmp_path)
        err = r.stderr.decode()
        assert r.returncode == 1, (args, err)
        assert "@ 0x%x:" % int(row["offset"]) in err, err
        if row["global"] != "-":
            assert "global %s is not on the allowlist" % row["global"] in err, err
    assert sorted(os.listdir(tmp_path)) == ["lc-victim"]  # no marker, victim kept


@pytest.mark.parametrize("row", [r for r in HOSTILE if r["provable"] == "1"],
                         ids=lambda r: r["file"])
def test_hostile_payloads_are_live(row, tmp_path):
    # The refusal test above could pass vacuously if a payload were dud: CPython's own
    # pickle.load must really create the marker (only the payloads that just touch a
    # file in the scratch folder are run).
    code = "import pickle,sys; pickle.load(open(sys.argv[1], 'rb'))"
    subprocess.run([sys.executable, "-c", code, os.path.join(BAD, row["file"])],
                   cwd=tmp_path, capture_output=True, timeout=60)
    assert any(n.startswith("lc-marker-") for n in os.listdir(tmp_path)), row["file"]


@pytest.mark.parametrize("row", [r for r in EXPECT if r["code"] != "forbidden"],
                         ids=lambda r: r["file"])
def test_malformed_clean_error(row):
    r = run(os.path.join(BAD, row["file"]))
    assert r.returncode == 1
    line = r.stderr.decode()
    assert line.count("\n") == 1 and "@ 0x%x:" % int(row["offset"]) in line, line


# ---- --scan against picklescan ----

# picklescan sorts each global into Dangerous (its denylist), Innocuous (its safelist)
# or Suspicious (neither: reported, not counted as an issue). We have one list, an
# allowlist. The rules this test enforces, on every file of both corpora:
#   1. both list exactly the same (module, name) pairs, in the same files;
#   2. picklescan Dangerous  => we refuse it (no exception);
#   3. picklescan Innocuous  => we allow it (no exception: its safelist is a subset of
#      our allowlist for every name the corpus holds);
#   4. picklescan Suspicious => we refuse it, except the names in WE_ALLOW below, each
#      with the reason we allow what picklescan only calls unknown.
# Differences in what is listed at all:
#   - EXT1/EXT2/EXT4 name a global through copyreg's extension registry; picklescan
#     does not report them, we report "?"/"ext:N" as forbidden (DIFF_ONLY_OURS).
WE_ALLOW = {
    # Protocol < 3 pickles bytes as _codecs.encode(str, "latin1") and bytes() (empty),
    # and protocol < 4/5 sets and bytearrays as set(list)/frozenset(list)/bytearray(b).
    # We fold exactly these shapes into values and never call anything; picklescan has
    # no opinion on them.
    ("_codecs", "encode"): "protocol-2 bytes",
    ("__builtin__", "bytes"): "protocol-0..2 empty bytes",
    ("__builtin__", "set"): "protocol-0..3 set",
    ("__builtin__", "frozenset"): "protocol-0..3 frozenset",
    ("__builtin__", "bytearray"): "protocol-0..4 bytearray",
    ("builtins", "bytearray"): "protocol-3..4 bytearray",
    ("builtins", "set"): "protocol-3 set",
    ("builtins", "frozenset"): "protocol-3 frozenset",
}
DIFF_ONLY_OURS = {("?", "ext:1")}


def _ours(path):
    r = run("--scan", path)
    refs = {}
    for line in r.stdout.decode().splitlines():
        _, _, mod, name, verdict = line.split("\t")
        refs[(mod, name)] = verdict == "allowed"
    return refs


def _theirs(path):
    from picklescan.scanner import scan_pickle_bytes
    with open(path, "rb") as f:
        res = scan_pickle_bytes(f, path)
    return {(g.module, g.name): g.safety.value for g in res.globals}


@pytest.mark.parametrize("name", sorted(f for f in os.listdir(BAD) if f.endswith(".bin"))
                         + ["../../pickle/" + f for f in sorted(os.listdir(GOOD))])
def test_scan_agrees_with_picklescan(name):
    path = os.path.join(BAD, name)
    theirs, ours = _theirs(path), _ours(path)
    for key in DIFF_ONLY_OURS:
        ours.pop(key, None)
    assert set(ours) == set(theirs), (ours, theirs)
    for key, allowed in ours.items():
        if theirs[key] == "dangerous":
            assert not allowed, key
        elif theirs[key] == "innocuous":
            assert allowed, key
        else:
            assert allowed == (key in WE_ALLOW), key
