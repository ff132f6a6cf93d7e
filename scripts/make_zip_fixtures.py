#!/usr/bin/env python3
"""Writes fixtures/zip/*.zip with Python's zipfile (the real producer) and the bad
corpus fixtures/bad/zip/<code>-<what>.bin (zipfile output, then one field patched),
and appends/refreshes their rows in fixtures/MANIFEST.tsv.

Everything is deterministic: fixed content, fixed timestamps, fixed seeds. Run from the
repository root: build/venv/bin/python scripts/make_zip_fixtures.py
"""
import hashlib
import io
import os
import pickle
import random
import struct
import sys
import zipfile
import zlib

OUT = "fixtures/zip"
BAD = "fixtures/bad/zip"
MANIFEST = "fixtures/MANIFEST.tsv"
WHEN = (2024, 1, 2, 3, 4, 6)
PRODUCER_VERSION = "python=%d.%d.%d zipfile" % sys.version_info[:3]


def info(name, method=zipfile.ZIP_STORED, extra=b""):
    zi = zipfile.ZipInfo(name, WHEN)
    zi.compress_type = method
    zi.extra = extra
    zi.external_attr = 0o644 << 16
    return zi


class Unseekable(io.RawIOBase):
    """A write-only stream zipfile cannot seek in, so it writes data descriptors."""

    def __init__(self):
        self.buf = bytearray()

    def writable(self):
        return True

    def write(self, b):
        self.buf += b
        return len(b)


def payload(n, seed):
    rnd = random.Random(seed)
    return bytes(rnd.getrandbits(8) for _ in range(n))


TEXT = b"".join(b"line %d of a compressible text entry\n" % i for i in range(300))


def stored():
    b = io.BytesIO()
    with zipfile.ZipFile(b, "w") as z:
        z.writestr(info("a.txt"), b"hello, zip\n")
        z.writestr(info("dir/b.bin"), payload(256, 1))
        z.writestr(info("empty"), b"")
    return b.getvalue()


def deflated():
    b = io.BytesIO()
    with zipfile.ZipFile(b, "w") as z:
        z.writestr(info("text.txt", zipfile.ZIP_DEFLATED), TEXT)
        z.writestr(info("random.bin", zipfile.ZIP_DEFLATED), payload(3000, 2))
        z.writestr(info("zeros.bin", zipfile.ZIP_DEFLATED), bytes(200000))
        z.writestr(info("empty", zipfile.ZIP_DEFLATED), b"")
        z.writestr(info("stored.txt"), b"a stored entry among deflated ones\n")
    return b.getvalue()


def commented():
    b = io.BytesIO()
    with zipfile.ZipFile(b, "w") as z:
        z.comment = b"an archive comment"
        z.writestr(info("x"), b"x\n")
    return b.getvalue()


def zip64():
    """ZIP64 everywhere: force_zip64 puts ZIP64 extras in the local headers; lowering
    zipfile's limits (as CPython's own tests do) makes it write ZIP64 central extras,
    all-ones header fields and the ZIP64 end record and locator."""
    saved = zipfile.ZIP64_LIMIT, zipfile.ZIP_FILECOUNT_LIMIT
    zipfile.ZIP64_LIMIT, zipfile.ZIP_FILECOUNT_LIMIT = 100, 2
    try:
        b = io.BytesIO()
        with zipfile.ZipFile(b, "w", allowZip64=True) as z:
            for i, (name, method, data) in enumerate([
                    ("big-stored.bin", zipfile.ZIP_STORED, payload(400, 3)),
                    ("big-deflated.txt", zipfile.ZIP_DEFLATED, TEXT),
                    ("small", zipfile.ZIP_STORED, b"small\n")]):
                with z.open(info(name, method), "w", force_zip64=True) as w:
                    w.write(data)
        return b.getvalue()
    finally:
        zipfile.ZIP64_LIMIT, zipfile.ZIP_FILECOUNT_LIMIT = saved


def descriptor(force64):
    s = Unseekable()
    with zipfile.ZipFile(s, "w") as z:
        for name, method, data in [("d-stored", zipfile.ZIP_STORED, b"stored with descriptor\n"),
                                   ("d-deflated", zipfile.ZIP_DEFLATED, TEXT)]:
            with z.open(info(name, method), "w", force_zip64=force64) as w:
                w.write(data)
    return bytes(s.buf)


def torchlike():
    """Laid out like torch.save: one top folder, stored entries, storage data aligned to
    64 bytes by an extra field (id 'FB', as PyTorch's writer does)."""
    b = io.BytesIO()
    state = {"weight": [0.5, -1.25, 3.0], "bias": [0.0]}
    with zipfile.ZipFile(b, "w") as z:
        def add(name, data):
            pos = b.tell()
            base = pos + 30 + len(name.encode())
            pad = (-(base + 4)) % 64
            z.writestr(info(name, extra=b"FB" + struct.pack("<H", pad) + b"Z" * pad), data)
        add("archive/data.pkl", pickle.dumps(state, protocol=2))
        add("archive/byteorder", b"little")
        add("archive/data/0", struct.pack("<4f", 0.5, -1.25, 3.0, 0.0))
        add("archive/data/1", payload(1000, 4))
        add("archive/version", b"3\n")
        add("archive/.data/serialization_id", b"1234567890\n")
    return b.getvalue()


GOOD = {
    "stored.zip": stored,
    "deflated.zip": deflated,
    "comment.zip": commented,
    "zip64.zip": zip64,
    "descriptor.zip": lambda: descriptor(False),
    "descriptor64.zip": lambda: descriptor(True),
    "torchlike.zip": torchlike,
}

# ---- the bad corpus: real archives with one field patched ----


def walk(data):
    """Offsets of the structures in an archive zipfile wrote (no zip64 end)."""
    end = data.rindex(b"PK\x05\x06")
    count, cd_size, cd_off = struct.unpack_from("<HII", data, end + 10)
    cen, p = [], cd_off
    for _ in range(count):
        nlen, xlen, clen = struct.unpack_from("<HHH", data, p + 28)
        lho = struct.unpack_from("<I", data, p + 42)[0]
        cen.append((p, lho))
        p += 46 + nlen + xlen + clen
    return end, cd_off, cen


def patch(data, off, fmt, value):
    b = bytearray(data)
    struct.pack_into(fmt, b, off, value)
    return bytes(b)


def plain(entries, method=zipfile.ZIP_STORED):
    b = io.BytesIO()
    with zipfile.ZipFile(b, "w") as z:
        for name, data in entries:
            z.writestr(info(name, method), data)
    return b.getvalue()


def bad_corpus():
    base = plain([("one", b"first entry\n"), ("two", b"second entry\n")])
    end, cd_off, cen = walk(base)
    (c1, l1), (c2, l2) = cen
    out = {}
    out["truncated-too-short"] = base[:10]
    out["malformed-no-end-record"] = base[:end] + b"XX" + base[end + 2:]
    out["malformed-comment-length-lie"] = patch(base, end + 20, "<H", 5) + b"abc"
    out["malformed-name-mismatch"] = patch(base, l2 + 30, "<B", ord("T"))
    out["malformed-name-length-mismatch"] = patch(base, l2 + 26, "<H", 2)
    out["malformed-size-mismatch"] = patch(base, l1 + 22, "<I", 11)
    out["malformed-crc-field-mismatch"] = patch(base, l1 + 14, "<I", 0x12345678)
    out["malformed-method-mismatch"] = patch(base, l1 + 8, "<H", 8)
    out["malformed-flags-mismatch"] = patch(base, l1 + 6, "<H", 0x800)
    out["malformed-local-signature"] = patch(base, l2, "<I", 0x04034b51)
    out["malformed-central-signature"] = patch(base, c2, "<I", 0x02014b51)
    out["malformed-overlapping-entries"] = patch(base, c2 + 42, "<I", l1)
    out["malformed-gap-between-entries"] = patch(base, c2 + 42, "<I", l2 + 1)
    # The last entry's data claimed to run into the central directory / past the end.
    for name, size in (("malformed-data-into-central", 40), ("truncated-data-past-eof", 5000)):
        b = patch(patch(base, l2 + 18, "<I", size), l2 + 22, "<I", size)
        b = patch(patch(b, c2 + 20, "<I", size), c2 + 24, "<I", size)
        out[name] = b
    out["malformed-count-lie-huge"] = patch(patch(base, end + 8, "<H", 0xffff),
                                            end + 10, "<H", 0xffff)
    out["malformed-count-lie-plus-one"] = patch(patch(base, end + 8, "<H", 3), end + 10, "<H", 3)
    out["malformed-count-lie-minus-one"] = patch(patch(base, end + 8, "<H", 1), end + 10, "<H", 1)
    out["unsupported-multi-disk"] = patch(base, end + 4, "<H", 1)
    out["truncated-central-size-lie"] = patch(base, end + 12, "<I", end - cd_off + 1)
    for hdr in (l1, c1):
        flag_at = hdr + (6 if hdr == l1 else 8)
        meth_at = hdr + (8 if hdr == l1 else 10)
        out.setdefault("unsupported-encrypted", base)
        out["unsupported-encrypted"] = patch(out["unsupported-encrypted"], flag_at, "<H", 1)
        out.setdefault("unsupported-method-bzip2", base)
        out["unsupported-method-bzip2"] = patch(out["unsupported-method-bzip2"], meth_at, "<H", 12)
    # Names zipfile writes as given.
    out["malformed-duplicate-names"] = plain([("same", b"1"), ("same", b"2")])
    out["malformed-dotdot-name"] = plain([("../evil", b"x")])
    out["malformed-absolute-name"] = plain([("/etc/evil", b"x")])
    out["malformed-backslash-name"] = plain([("a\\evil", b"x")])
    out["malformed-control-name"] = plain([("a\x01b", b"x")])
    # Extra fields that do not tile their space (central header of a one-entry archive).
    ex = plain_extra("e", b"x", b"FB\x04\x00ZZZZ")
    _, _, [(ce, _)] = walk(ex)
    out["truncated-extra-field-length"] = patch(ex, ce + 46 + 1 + 2, "<H", 5)
    out["malformed-extra-field-stray-bytes"] = patch(ex, ce + 46 + 1 + 2, "<H", 3)
    # ZIP64 lies.
    z64 = zip64()
    e64 = z64.rindex(b"PK\x05\x06")
    loc = e64 - 20
    rec = struct.unpack_from("<Q", z64, loc + 8)[0]
    out["malformed-zip64-count-disagrees"] = patch(patch(z64, e64 + 8, "<H", 2), e64 + 10, "<H", 2)
    out["malformed-zip64-locator-offset"] = patch(z64, loc + 8, "<Q", rec + 1)
    out["malformed-zip64-record-size"] = patch(z64, rec + 4, "<Q", 45)
    out["malformed-zip64-central-offset"] = patch(z64, rec + 48, "<Q", 1)
    c64 = struct.unpack_from("<Q", z64, rec + 48)[0]
    # First central header: its ZIP64 extra holds the sizes; make them disagree.
    nlen, xlen = struct.unpack_from("<HH", z64, c64 + 28)
    out["malformed-zip64-extra-size-lie"] = patch(z64, c64 + 46 + nlen + 4, "<Q", 401)
    out["truncated-zip64-extra-too-short"] = patch(z64, c64 + 46 + nlen + 2, "<H", 8)
    # Deflate bombs and lies; the opens below must fail on read, not on open, except
    # for the impossible ratio.
    defl = plain([("bomb", bytes(100000))], zipfile.ZIP_DEFLATED)
    _, _, [(cb, lb)] = walk(defl)
    # zipfile's level differs from ours; only the ratio matters: below deflate's limit.
    assert 100001 < 1032 * struct.unpack_from("<I", defl, cb + 20)[0]

    def sizes(data, usize, crc=None):
        data = patch(patch(data, lb + 22, "<I", usize), cb + 24, "<I", usize)
        if crc is not None:
            data = patch(patch(data, lb + 14, "<I", crc), cb + 16, "<I", crc)
        return data
    out["malformed-bomb-declared-huge"] = sizes(defl, 0xfffffffe)
    out["malformed-bomb-inflates-larger"] = sizes(defl, 1000, zlib.crc32(bytes(1000)))
    out["malformed-bomb-inflates-smaller"] = sizes(defl, 100001, zlib.crc32(bytes(100001)))
    out["malformed-crc-mismatch-deflated"] = patch(patch(defl, lb + 14, "<I", 1), cb + 16, "<I", 1)
    data_at = lb + 30 + 4
    out["malformed-corrupt-deflate"] = patch(defl, data_at, "<B", 0xff)
    out["malformed-crc-mismatch-stored"] = patch(base, l1 + 30 + 3, "<B", ord("F"))
    # Truncated at every header field of a one-entry archive (prefixes of the file).
    one = plain([("f", b"data")])
    _, cd1, [(c0, _)] = walk(one)
    cuts = [0, 4, 6, 8, 10, 12, 14, 18, 22, 26, 28, 30, 31, 35]
    cuts += [c0 + k for k in (0, 4, 6, 8, 10, 12, 14, 16, 20, 24, 28, 30, 32, 34, 36, 38, 42, 46)]
    e1 = len(one) - 22
    cuts += [e1 + k for k in (0, 4, 6, 8, 10, 12, 16, 20)]
    for c in cuts:
        code = "truncated" if c < 22 else "malformed"
        out["%s-cut-at-%03d" % (code, c)] = one[:c]
    return out


def plain_extra(name, data, extra):
    b = io.BytesIO()
    with zipfile.ZipFile(b, "w") as z:
        z.writestr(info(name, extra=extra), data)
    return b.getvalue()


def main():
    os.makedirs(OUT, exist_ok=True)
    os.makedirs(BAD, exist_ok=True)
    rows = []
    for name, make in GOOD.items():
        data = make()
        zipfile.ZipFile(io.BytesIO(data)).testzip()  # the producer reads its own output
        path = os.path.join(OUT, name)
        with open(path, "wb") as f:
            f.write(data)
        rows.append((path[len("fixtures/"):], "python-zipfile", PRODUCER_VERSION, data))
    for name, data in sorted(bad_corpus().items()):
        path = os.path.join(BAD, name + ".bin")
        with open(path, "wb") as f:
            f.write(data)
        rows.append((path[len("fixtures/"):], "python-zipfile+patch", PRODUCER_VERSION, data))
    keep = []
    if os.path.exists(MANIFEST):
        with open(MANIFEST) as f:
            keep = [line for line in f.read().splitlines()
                    if line and not line.startswith(("zip/", "bad/zip/"))]
    if not keep:
        keep = ["file\tproducer\tproducer_version\tsha256"]
    keep += ["%s\t%s\t%s\t%s" % (p, prod, ver, hashlib.sha256(d).hexdigest())
             for p, prod, ver, d in rows]
    with open(MANIFEST, "w") as f:
        f.write("\n".join(keep) + "\n")
    print("wrote %d zip fixtures" % len(rows))


if __name__ == "__main__":
    main()
