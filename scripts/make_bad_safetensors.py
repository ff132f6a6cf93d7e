#!/usr/bin/env python3
"""Writes fixtures/bad/safetensors/<code>-<what>.bin: inputs every safetensors reader
must refuse. <code> is the lc_code name our reader answers with (tests/cli checks
that each one fails cleanly; the fuzzer starts from them). Deterministic; no
randomness. Run: python3 scripts/make_bad_safetensors.py
Their rows in fixtures/MANIFEST.tsv (paths relative to fixtures/) are replaced.
"""
import hashlib
import os
import struct
import sys

OUT = "fixtures/bad/safetensors"


def st(header, data=b"", n=None):
    h = header.encode() if isinstance(header, str) else header
    return struct.pack("<Q", len(h) if n is None else n) + h + data


def entry(name, dtype, shape, begin, end):
    shape_s = ",".join(str(d) for d in shape)
    return f'"{name}":{{"dtype":"{dtype}","shape":[{shape_s}],"data_offsets":[{begin},{end}]}}'


GOOD_HDR = "{" + ",".join([
    '"__metadata__":{"format":"pt"}',
    entry("a", "F32", [2], 0, 8),
    entry("b", "U8", [3], 8, 11)]) + "}"
GOOD = st(GOOD_HDR + " " * (-len(GOOD_HDR) % 8), bytes(range(11)))

CASES = {
    # the length field and the header's place in the file
    "truncated-empty": b"",
    "truncated-len-3": GOOD[:3],
    "truncated-len-7": GOOD[:7],
    "truncated-header-past-eof": st("{}", n=64),
    "overflow-header-2p63": st("{}", n=1 << 63),
    "overflow-header-limit": st("{}", n=100_000_001),
    # JSON
    "malformed-not-json": st("hello   "),
    "malformed-not-object": st("[1,2]   "),
    "malformed-string-header": st('"abc"   '),
    "malformed-empty-header": st(""),
    "malformed-trailing-json": st("{} {}   "),
    # the README's MUSTs, which serde_json (so the reference) does not hold files to
    "malformed-header-leading-space": st("  {}    "),
    "malformed-header-leading-newline": st("\n{}     "),
    "malformed-header-tab-padding": st("{}\t\t\t\t\t\t"),
    "malformed-header-newline-padding": st("{}    \n\n"),
    "malformed-unterminated": st('{"a":{  '),
    "malformed-control-char": st('{"a\x01":{}}'),
    "unsupported-nul-escape": st('{"a\\u0000b":{}}'),
    "malformed-utf8-ff": st(b'{"\xff":{}}   '),
    "malformed-utf8-overlong": st(b'{"\xc0\x80":{}} '),
    "malformed-utf8-surrogate": st(b'{"\xed\xa0\x80":{}}'),
    "malformed-utf8-truncated": st(b'{"\xe6\xbc":{}}'),
    # entries
    "malformed-duplicate-tensor": st("{" + entry("w", "U8", [1], 0, 1) + "," +
                                     entry("w", "U8", [1], 1, 2) + "}", b"\0\0"),
    "malformed-duplicate-field": st('{"w":{"dtype":"U8","dtype":"U8","shape":[1],'
                                    '"data_offsets":[0,1]}}', b"\0"),
    "malformed-unknown-field": st('{"w":{"dtype":"U8","shape":[1],"data_offsets":[0,1],'
                                  '"x":1}}', b"\0"),
    "malformed-missing-offsets": st('{"w":{"dtype":"U8","shape":[1]}}', b"\0"),
    "malformed-entry-not-object": st('{"w":5}'),
    "malformed-dtype-not-string": st('{"w":{"dtype":1,"shape":[1],"data_offsets":[0,1]}}', b"\0"),
    "unsupported-dtype-f4": st("{" + entry("w", "F4", [2], 0, 1) + "}", b"\0"),
    "unsupported-dtype-unknown": st("{" + entry("w", "XYZ", [2], 0, 2) + "}", b"\0\0"),
    "unsupported-rank-9": st("{" + entry("w", "U8", [1] * 9, 0, 1) + "}", b"\0"),
    "malformed-negative-dim": st("{" + entry("w", "U8", [-1], 0, 0) + "}"),
    "malformed-negative-offset": st("{" + entry("w", "U8", [1], -1, 0) + "}", b"\0"),
    "malformed-float-dim": st('{"w":{"dtype":"U8","shape":[2.0],"data_offsets":[0,2]}}', b"\0\0"),
    "malformed-exp-dim": st('{"w":{"dtype":"U8","shape":[2e0],"data_offsets":[0,2]}}', b"\0\0"),
    "malformed-float-offset": st('{"w":{"dtype":"U8","shape":[2],"data_offsets":[0,2.5]}}',
                                 b"\0\0"),
    "malformed-offsets-string": st('{"w":{"dtype":"U8","shape":[2],"data_offsets":"0,2"}}',
                                   b"\0\0"),
    "malformed-offsets-three": st('{"w":{"dtype":"U8","shape":[2],"data_offsets":[0,1,2]}}',
                                  b"\0\0"),
    "malformed-shape-object": st('{"w":{"dtype":"U8","shape":{},"data_offsets":[0,0]}}'),
    "overflow-dim-2p64": st("{" + entry("w", "U8", [1 << 64], 0, 0) + "}"),
    "overflow-shape-product": st("{" + entry("w", "F32", [1 << 32, 1 << 32, 2], 0, 0) + "}"),
    "overflow-shape-bytes": st("{" + entry("w", "F64", [1 << 62], 0, 0) + "}"),
    # metadata
    "malformed-meta-number": st('{"__metadata__":{"a":1}}'),
    "malformed-meta-nested": st('{"__metadata__":{"a":{"b":"c"}}}'),
    "malformed-meta-null": st('{"__metadata__":null}'),
    "malformed-meta-list": st('{"__metadata__":["a"]}'),
    "malformed-meta-duplicate-key": st('{"__metadata__":{"a":"x","a":"y"}}'),
    "malformed-meta-twice": st('{"__metadata__":{},"__metadata__":{}}'),
    # layout of the buffer
    "malformed-gap": st("{" + entry("a", "U8", [1], 0, 1) + "," + entry("b", "U8", [1], 2, 3) +
                        "}", b"\0\0\0"),
    "malformed-overlap": st("{" + entry("a", "U8", [2], 0, 2) + "," +
                            entry("b", "U8", [2], 1, 3) + "}", b"\0\0\0"),
    "malformed-not-from-zero": st("{" + entry("a", "U8", [1], 4, 5) + "}", b"\0" * 5),
    "malformed-end-before-begin": st("{" + entry("a", "U8", [0], 0, 0) + "," +
                                     entry("b", "U8", [0], 5, 0) + "}"),
    "malformed-size-mismatch": st("{" + entry("a", "F32", [2], 0, 4) + "}", b"\0" * 4),
    "malformed-trailing-bytes": GOOD + b"extra_bogus_data_for_polyglot_file",
    "truncated-data": GOOD[:-1],
    "truncated-data-huge-offsets": st("{" + entry("a", "U8", [1 << 40], 0, 1 << 40) + "}"),
}


def main():
    os.makedirs(OUT, exist_ok=True)
    for old in os.listdir(OUT):
        if old.endswith(".bin"):
            os.unlink(os.path.join(OUT, old))
    # The good file cut at every field boundary and inside every field.
    cuts = {8, len(GOOD) - 11, len(GOOD) - 3}
    for needle in (b'"__metadata__"', b'"a"', b'"dtype"', b'"shape"', b'"data_offsets"', b'"b"'):
        p = GOOD.index(needle)
        cuts.update({p, p + 2})
    for c in sorted(cuts):
        CASES[f"truncated-cut-at-{c}"] = GOOD[:c]
    for name, data in CASES.items():
        with open(os.path.join(OUT, name + ".bin"), "wb") as f:
            f.write(data)
    manifest = "fixtures/MANIFEST.tsv"
    rows = []
    if os.path.exists(manifest):
        with open(manifest) as f:
            rows = [r for r in f.read().splitlines() if r and not r.startswith("bad/safetensors/")]
    if not rows or not rows[0].startswith("file\t"):
        rows.insert(0, "file\tproducer\tproducer_version\tsha256")
    version = "python=" + sys.version.split()[0]
    for name in sorted(CASES):
        digest = hashlib.sha256(CASES[name]).hexdigest()
        rows.append(f"bad/safetensors/{name}.bin\tscripts/make_bad_safetensors.py\t{version}\t{digest}")
    with open(manifest, "w") as f:
        f.write("\n".join(rows) + "\n")
    print(f"wrote {len(CASES)} files to {OUT}")


if __name__ == "__main__":
    main()
