#!/usr/bin/env python3
"""Writes the pickle corpora: fixtures/pickle/rich-p<N>.pkl (CPython's pickle, protocols
0-5, of rich_object() below) and the hostile and malformed corpus in fixtures/bad/pickle/;
and the checkpoints whose pickle costs more than its bytes can justify (memo-shared
graphs, expanded views, no tensors at all) in fixtures/bad/pth/ (see CHECKPOINTS below;
the other files there come from scripts/make_torch_fixtures.py --hostile).

Every file is named <code>-<what>.bin, <code> being the lc_code name our loader must
return. Hostile payloads ("forbidden-*") are real pickle.dumps() of objects whose
__reduce__ runs something, or hand-assembled opcodes where pickle.dumps cannot make
the shape (INST/OBJ/NEWOBJ/BUILD tricks, names from the memo, a broken pickle). Most,
if a real unpickler ran them in the current directory, would create the marker file
lc-marker-<what> there (or remove the folder lc-victim); a few need a module that is
absent here (nt, pip, torch) or stop short of running anything (NEWOBJ alone, EXT,
a dotted name) and are kept to check that the name itself is refused.
tests/integration/test_pickle.py checks that our tools never create a marker, and
proves with CPython that the payloads marked provable really do.

Also replaces its rows in fixtures/MANIFEST.tsv, and writes fixtures/bad/pickle/EXPECT.tsv:
file, code, the offset our loader must report, the global the message must name (or
"-"), and whether the payload is safe to run in CPython to prove it live (1/0).
Run from the repo root with the project venv:
    build/venv/bin/python scripts/make_hostile_pickles.py
"""
import collections
import hashlib
import io
import os
import pickle
import platform
import runpy
import shutil
import struct
import subprocess
import webbrowser
import zipfile

OUT = "fixtures/bad/pickle"
GOOD = "fixtures/pickle"
PTH_OUT = "fixtures/bad/pth"


def rich_object():
    """(Sets hold only small ints or one item: str and None hashes vary per process, and
    a reloaded set may iterate in another order, which the committed-fixture test sees.)
    Everything the loader must read back exactly: every int width (BININT1/2/4,
    LONG1/LONG4, protocol-0 INT/LONG text), floats, unicode that needs every escape of
    protocol 0, bytes and bytearray (which protocols < 3/5 pickle through REDUCE),
    sets, OrderedDict, shared values and cycles through the memo."""
    shared = [1, "two"]
    cyc = [0]
    cyc.append(cyc)
    d = {"k": None}
    d["self"] = d
    holder = []
    tup = (holder, 5)
    holder.append(tup)  # a tuple reached again through a list inside it
    ints = [0, 1, 255, 256, 65535, 65536, 2**31 - 1, -2**31, 2**31, -2**31 - 1,
            2**63 - 1, -2**63, 2**63, -2**63 - 1, 2**64, 2**200, -2**200, 10**100, -1, -256]
    floats = [0.0, -0.0, 1.5, -2.25, 1e300, 5e-324, 0.1, float("inf"), float("-inf"),
              float("nan")]
    strs = ["", "a", "caf\u00e9", "\u20ac", "\U0001f600", "back\\slash", "new\nline",
            "cr\rx", "nul\x00x", "sub\x1ax", "quote'\"", "\\u0041 not an escape", "tab\t",
            "x" * 300]
    od = collections.OrderedDict()
    od["w"] = [1.0, 2.0]
    od["b"] = collections.OrderedDict([("inner", (1,))])
    return {
        "ints": ints,
        "floats": floats,
        "strs": strs,
        "bytes": [b"", b"\x00\xff", bytes(range(256)), b"x" * 300],
        "bytearray": [bytearray(), bytearray(b"ab\x00")],
        "tuples": [(), (1,), (1, 2), (1, 2, 3), (1, 2, 3, 4), ((),)],
        "nested": [[[[]]], {"a": {"b": {"c": [()]}}}],
        "sets": [set(), {1, 2, 3}, frozenset(), frozenset({7, 8}), {(1, 2)}],
        "keys": {1: "int", "s": "str", (1, "t"): "tuple", None: "none", 2.5: "float",
                 b"by": "bytes", False: "bool", -2**70: "big", frozenset({9}): "fs"},
        "od": od,
        "shared": [shared, shared, (shared,)],
        "cycles": [cyc, d, tup],
        True: False,
    }


def marker(what):
    return "lc-marker-" + what


class Reduce:
    """An object that pickles as callable(*args)."""

    def __init__(self, fn, *args):
        self.fn, self.args = fn, args

    def __reduce__(self):
        return self.fn, self.args


def sb(s):
    """SHORT_BINUNICODE."""
    b = s.encode()
    return b"\x8c" + bytes([len(b)]) + b


def touch(what):
    return ("touch " + marker(what)).encode()


# ---- checkpoints whose pickle asks for more than its bytes can justify ----
#
# Each is a torch.save-shaped zip (archive/data.pkl, archive/data/0) whose data.pkl is
# assembled here from opcodes as torch's pickler writes them. Named <code>-<what>.bin,
# <code> being the lc_code name lc_pth_load must return; tests/integration/
# test_pth_budgets.py checks the code, the budget named in the message, the peak memory
# and that nothing is written.

def bu(s):
    """BINUNICODE."""
    b = s.encode()
    return b"X" + struct.pack("<I", len(b)) + b


def pint(v):
    """BININT for what fits in 32 bits, else LONG1 with 8 bytes (as torch writes big sizes)."""
    if -2**31 <= v < 2**31:
        return b"J" + struct.pack("<i", v)
    return b"\x8a\x08" + struct.pack("<q", v)


def tensor_call(shape, stride, numel=4, offset=0):
    """torch._utils._rebuild_tensor_v2(storage "0" (FloatStorage of numel), offset, shape,
    stride, False, OrderedDict()): one tensor, as torch pickles it."""
    dims = lambda t: b"(" + b"".join(pint(d) for d in t) + b"t"
    p = b"ctorch._utils\n_rebuild_tensor_v2\n("
    p += b"(" + bu("storage") + b"ctorch\nFloatStorage\n" + bu("0") + bu("cpu") + pint(numel)
    p += b"tQ" + pint(offset) + dims(shape) + dims(stride) + b"\x89"
    p += b"ccollections\nOrderedDict\n)RtR"
    return p


def checkpoint(pkl, deflate_pkl=False):
    """archive/data.pkl (stored, or DEFLATE as re-zipping tools write it) and a 16-byte
    storage archive/data/0, with fixed dates so the bytes are the same every run."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, data, deflate in (("archive/data.pkl", pkl, deflate_pkl),
                                    ("archive/data/0", struct.pack("<4f", 1, 2, 3, 4), False),
                                    ("archive/version", b"3\n", False)):
            info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED if deflate else zipfile.ZIP_STORED
            z.writestr(info, data)
    return buf.getvalue()


def dag(levels, kind, key_len=0):
    """One tensor (memo 0) and `levels` containers each holding the one below twice
    through the memo: a pickle of ~levels x (2 x key_len + 8) bytes that is a tree of
    2^levels tensors once walked. kind "dict" uses two key_len-byte keys per level (long
    names), "tuple" uses TUPLE2 (names "0.1.1.0...")."""
    put = lambda i: b"r" + struct.pack("<I", i) + b"0"   # LONG_BINPUT, POP
    get = lambda i: b"j" + struct.pack("<I", i)          # LONG_BINGET
    p = b"\x80\x02" + tensor_call((4,), (1,)) + put(0)
    for i in range(1, levels + 1):
        if kind == "tuple":
            p += get(i - 1) + get(i - 1) + b"\x86"
        else:
            p += b"}(" + bu(chr(97 + i % 26) * key_len) + get(i - 1)
            p += bu(chr(65 + i % 26) * key_len) + get(i - 1) + b"u"
        p += put(i)
    return p + get(levels) + b"."


# name -> data.pkl bytes, and whether data.pkl is deflated
CHECKPOINTS = {
    # A 2^34-element view with stride 0 over a 16-byte storage: 64 GiB to write.
    "overflow-expand-stride0":
        (b"\x80\x02}" + bu("w") + tensor_call((2**34,), (0,)) + b"s.", False),
    # 20 levels of dicts with 200-byte keys: 2^20 names of 4 KB each (4 GB) from 8 KB.
    "overflow-dag-dicts": (dag(20, "dict", 200), False),
    # 19 levels of pairs: 2^19 tensors (a 58 MB safetensors) from under 1 KB.
    "overflow-dag-tuples": (dag(19, "tuple"), False),
    # 60 levels: 2^60 paths; only a cap stops the walk.
    "overflow-dag-60-levels": (dag(60, "tuple"), False),
    # 4 million BININT1+APPEND (12 MB of pickle) deflated to a few KB: a value each.
    "overflow-deflated-tiny-opcodes":
        (b"\x80\x02}(" + bu("w") + tensor_call((4,), (1,)) + bu("x") + b"]"
         + b"K\x01a" * 4_000_000 + b"u.", True),
    # No tensor anywhere: a top-level int, a list of strings.
    "notfound-no-tensor-int": (b"\x80\x02K\x05.", False),
    "notfound-no-tensor-strings": (b"\x80\x02](" + bu("a") + bu("b") + b"e.", False),
    # {"a.b": T, "a": {"b": T}}: two tensors that flatten to one name.
    "malformed-duplicate-name":
        (b"\x80\x02}(" + bu("a.b") + tensor_call((4,), (1,)) + bu("a") + b"}" + bu("b")
         + tensor_call((2,), (1,), offset=2) + b"su.", False),
}


def write_checkpoints(manifest, producer):
    os.makedirs(PTH_OUT, exist_ok=True)
    for name, (pkl, deflate) in CHECKPOINTS.items():
        data = checkpoint(pkl, deflate)
        with open(os.path.join(PTH_OUT, name + ".bin"), "wb") as f:
            f.write(data)
        manifest.append(("bad/pth/" + name + ".bin", "scripts/make_hostile_pickles.py",
                         producer, hashlib.sha256(data).hexdigest()))


def main():
    os.makedirs(OUT, exist_ok=True)
    os.makedirs(GOOD, exist_ok=True)
    for d in (OUT, GOOD):
        for f in os.listdir(d):
            os.remove(os.path.join(d, f))
    rows = []
    manifest = []
    producer = "CPython pickle", "python=" + platform.python_version()
    for proto in range(6):
        name = f"rich-p{proto}.pkl"
        data = pickle.dumps(rich_object(), protocol=proto)
        with open(os.path.join(GOOD, name), "wb") as f:
            f.write(data)
        manifest.append(("pickle/" + name, *producer, hashlib.sha256(data).hexdigest()))

    def put(name, data, code, offset, glob="-", provable=False):
        with open(os.path.join(OUT, name + ".bin"), "wb") as f:
            f.write(data)
        rows.append((name + ".bin", code, str(offset), glob, "1" if provable else "0"))
        manifest.append(("bad/pickle/" + name + ".bin", "scripts/make_hostile_pickles.py",
                         producer[1], hashlib.sha256(data).hexdigest()))

    # -- real pickle.dumps of objects with __reduce__ (protocol 2: GLOBAL at byte 2) --
    # os.system pickles as posix.system on Linux; runpy._run_code execs a string.
    put("forbidden-posix-system", pickle.dumps(Reduce(os.system, touch("posix")), 2),
        "forbidden", 2, "posix.system", True)
    put("forbidden-subprocess-popen",
        pickle.dumps(Reduce(subprocess.Popen, ["touch", marker("popen")]), 3),
        "forbidden", 2, "subprocess.Popen", True)
    put("forbidden-builtins-eval",
        pickle.dumps(Reduce(eval, f"open('{marker('eval')}', 'w').close()"), 2),
        "forbidden", 2, "__builtin__.eval", True)
    # Protocol 4 names globals with STACK_GLOBAL: the opcode after the two strings.
    p4 = pickle.dumps(Reduce(exec, f"open('{marker('exec')}', 'w').close()"), 4)
    put("forbidden-builtins-exec-p4", p4, "forbidden", p4.index(b"\x93"), "builtins.exec", True)
    put("forbidden-runpy-run-code",
        pickle.dumps(Reduce(runpy._run_code, f"open('{marker('runpy')}', 'w').close()", {}), 2),
        "forbidden", 2, "runpy._run_code", True)
    put("forbidden-shutil-rmtree", pickle.dumps(Reduce(shutil.rmtree, "lc-victim"), 2),
        "forbidden", 2, "shutil.rmtree", False)
    put("forbidden-webbrowser-open",
        pickle.dumps(Reduce(webbrowser.open, marker("webbrowser")), 2),
        "forbidden", 2, "webbrowser.open", False)

    # -- hand-assembled: names a real unpickler resolves that pickle.dumps would not write --
    put("forbidden-os-system", b"cos\nsystem\n(" + b"V" + touch("os") + b"\ntR.",
        "forbidden", 0, "os.system", True)
    put("forbidden-nt-system", b"cnt\nsystem\n(V" + touch("nt") + b"\ntR.",
        "forbidden", 0, "nt.system")
    # getattr(__import__('os'), 'system')(cmd): getattr is the first global named.
    put("forbidden-builtins-getattr",
        b"c__builtin__\ngetattr\n(c__builtin__\n__import__\n(Vos\ntRVsystem\ntR(V"
        + touch("getattr") + b"\ntR.", "forbidden", 0, "__builtin__.getattr", True)
    imp = b"\x80\x04" + sb("builtins") + sb("__import__") + b"\x93"
    put("forbidden-builtins-import-p4", imp + sb("os") + b"\x85R.", "forbidden", 2 + 10 + 12,
        "builtins.__import__")
    put("forbidden-pip-main", b"cpip\nmain\n((Vinstall\nVlc-marker-pip\nltR.",
        "forbidden", 0, "pip.main")
    put("forbidden-pip-internal-main", b"cpip._internal\nmain\n((Vinstall\nVlc-marker-pip\nltR.",
        "forbidden", 0, "pip._internal.main")
    put("forbidden-torch-load", b"\x80\x02ctorch\nload\nX\x0e\x00\x00\x00lc-marker-torch\x85R.",
        "forbidden", 2, "torch.load")
    put("forbidden-torch-hub-load",
        b"\x80\x02ctorch.hub\nload\nX\x05\x00\x00\x00a/b:cX\x03\x00\x00\x00m\x00\x00\x86R.",
        "forbidden", 2, "torch.hub.load")
    # A dotted name: protocol 4's find_class walks attributes ("OrderedDict.__init__...").
    put("forbidden-dotted-name", b"\x80\x04ccollections\nOrderedDict.__class__\n.",
        "forbidden", 2, "collections.OrderedDict.__class__")
    # INST: class and args in one opcode, no GLOBAL before it.
    put("forbidden-inst-os-system", b"(V" + touch("inst") + b"\nios\nsystem\n.",
        "forbidden", 3 + len(touch("inst")), "os.system", True)
    # OBJ: the class is the first item after the MARK.
    put("forbidden-obj-os-system", b"(cos\nsystem\nV" + touch("obj") + b"\no.",
        "forbidden", 1, "os.system", True)
    # NEWOBJ: cls.__new__(cls, *args). Popen.__new__ runs nothing by itself (not live);
    # the name must still be refused where it is named.
    put("forbidden-newobj-subprocess", b"\x80\x02csubprocess\nPopen\n](Vtouch\nV"
        + marker("newobj").encode() + b"\ne\x85\x81.", "forbidden", 2, "subprocess.Popen")
    # BUILD: give an object a __setstate__ of os.system, then BUILD calls it with the state.
    put("forbidden-build-setstate",
        b"\x80\x02ccollections\nOrderedDict\n)R}X\x0c\x00\x00\x00__setstate__cos\nsystem\nsbX"
        + struct.pack("<I", len(touch("build"))) + touch("build") + b"b.",
        "forbidden", 47, "os.system", True)
    # STACK_GLOBAL whose strings come from the memo, stored and popped long before.
    memo = (b"\x80\x04" + sb("os") + b"\x94" + sb("system") + b"\x94" + b"00"
            + b"K\x01" + b"0" + b"h\x00h\x01\x93" + sb(touch("memo").decode()) + b"\x85R.")
    put("forbidden-stack-global-memo", memo, "forbidden", memo.index(b"\x93"), "os.system",
        True)
    # A broken pickle: the payload runs (REDUCE) before the unpickler meets a bad opcode.
    put("forbidden-broken-after-payload", b"cos\nsystem\n(V" + touch("broken") + b"\ntR\xff",
        "forbidden", 0, "os.system", True)
    # The __builtin__ alias of protocol < 3 must be checked like builtins.
    put("forbidden-builtin-alias-exec",
        b"c__builtin__\nexec\n(Vopen('lc-marker-alias', 'w').close()\ntR.",
        "forbidden", 0, "__builtin__.exec", True)
    # EXT codes name globals through copyreg's registry: nothing to check them against.
    put("forbidden-ext1", b"\x80\x02\x82\x01)R.", "forbidden", 2, "-")

    # -- malformed: a clean error with the offset --
    put("truncated-no-stop", b"\x80\x02K\x01", "truncated", 4)
    put("truncated-binunicode", b"X\x10\x00\x00\x00ab.", "truncated", 5)
    put("truncated-huge-length", b"\x8e" + struct.pack("<Q", 2**63) + b"x.", "truncated", 9)
    put("truncated-frame", b"\x80\x04\x95" + struct.pack("<Q", 1 << 40) + b"N.", "truncated", 2)
    put("truncated-global-line", b"cos\nsystem", "truncated", 4)
    put("malformed-unbalanced-mark", b"((K\x01t.", "malformed", 5)
    put("malformed-tuple-without-mark", b"K\x01t.", "malformed", 2)
    put("malformed-memo-out-of-range", b"\x80\x02K\x01q\x00h\x05.", "malformed", 6)
    put("malformed-stack-underflow", b"K\x01a.", "malformed", 2)
    put("malformed-pop-empty", b"0.", "malformed", 0)
    put("malformed-unknown-opcode", b"\x80\x02\xff.", "malformed", 2)
    put("malformed-invalid-utf8", b"\x8c\x02\xc3\x28.", "malformed", 0)
    put("malformed-trailing-bytes", b"N.N", "malformed", 2)
    put("malformed-append-to-dict", b"}K\x01a.", "malformed", 3)
    put("malformed-unhashable-key", b"}]K\x01s.", "malformed", 4)
    put("overflow-deep-marks", b"(" * 2000, "overflow", 1024)
    put("overflow-deep-lists", b"\x80\x02" + b"]" * 600 + b"a" * 599 + b".", "overflow",
        2 + 600 + 512)  # the 513th APPEND makes depth 513
    put("overflow-memo-index", b"K\x01r\xff\xff\xff\xff.", "overflow", 2)
    put("overflow-int-digits", b"L" + b"7" * 5000 + b"L\n.", "overflow", 0)
    put("unsupported-protocol-6", b"\x80\x06N.", "unsupported", 0)
    put("unsupported-next-buffer", b"\x80\x05\x97.", "unsupported", 2)

    write_checkpoints(manifest, producer[1])

    with open(os.path.join(OUT, "EXPECT.tsv"), "w") as f:
        f.write("file\tcode\toffset\tglobal\tprovable\n")
        for r in rows:
            f.write("\t".join(r) + "\n")
    # fixtures/MANIFEST.tsv is shared: replace only our rows (in bad/pth/, only the
    # files named in CHECKPOINTS), each where it stands; a new row goes after the last
    # row of its folder, so that regenerating moves nothing.
    path = "fixtures/MANIFEST.tsv"
    lines = ["file\tproducer\tproducer_version\tsha256\n"]
    if os.path.exists(path):
        with open(path) as f:
            lines = f.readlines()
    ours = {r[0] for r in manifest}
    mine = lambda f: f.startswith(("pickle/", "bad/pickle/")) or f in ours
    new = {r[0]: "\t".join(r) + "\n" for r in manifest}
    out = []
    for line in lines:
        f = line.split("\t", 1)[0]
        if not mine(f):
            out.append(line)
        elif f in new:
            out.append(new.pop(f))
    for f, line in new.items():
        folder = f.rsplit("/", 1)[0] + "/"
        at = max((i + 1 for i, ln in enumerate(out) if ln.startswith(folder)), default=len(out))
        out.insert(at, line)
    with open(path, "w") as f:
        f.writelines(out)

if __name__ == "__main__":
    main()
