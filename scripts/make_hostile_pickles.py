#!/usr/bin/env python3
"""Writes the pickle corpora: fixtures/pickle/rich-p<N>.pkl (CPython's pickle, protocols
0-5, of rich_object() below) and the hostile and malformed corpus in fixtures/bad/pickle/.

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
import os
import pickle
import platform
import runpy
import shutil
import struct
import subprocess
import webbrowser

OUT = "fixtures/bad/pickle"
GOOD = "fixtures/pickle"


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

    with open(os.path.join(OUT, "EXPECT.tsv"), "w") as f:
        f.write("file\tcode\toffset\tglobal\tprovable\n")
        for r in rows:
            f.write("\t".join(r) + "\n")
    # fixtures/MANIFEST.tsv is shared: replace only our rows.
    path = "fixtures/MANIFEST.tsv"
    keep = ["file\tproducer\tproducer_version\tsha256\n"]
    if os.path.exists(path):
        with open(path) as f:
            keep = [line for line in f if not line.startswith(("pickle/", "bad/pickle/"))]
    with open(path, "w") as f:
        f.writelines(keep)
        for r in manifest:
            f.write("\t".join(r) + "\n")


if __name__ == "__main__":
    main()
