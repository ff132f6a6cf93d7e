#!/usr/bin/env python3
"""Writes fixtures/bad/spm/: hand-assembled SentencePiece ModelProto bytes that must fail,
named <code>-<what>.bin (the code the reader must return), and their MANIFEST.tsv rows.

ModelProto field 1 is a repeated SentencePiece {1: piece (string), 2: score (float),
3: type (enum)}; field 2 is the trainer spec (message; field 1 inside it, ...)."""
import hashlib
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "fixtures", "bad", "spm")

CASES = {
    # piece message (0a 00 = field 1, length 0) followed by key 0x00: field number 0
    "malformed-field-zero": "0a0000",
    # trainer_spec {1: varint 2^35 + ...}: an int32 field holding a value past 2^31
    "malformed-int32-range": "1208c802808080808020",
    # piece {3: type = 7}: SentencePiece types stop at 6
    "malformed-piece-type": "0a021807",
    # field 7 varint with 10 bytes carrying more than 64 bits
    "malformed-varint-too-long": "38ffffffffffffffffff02",
    # key with wire type 7, which protobuf does not define
    "malformed-wire-type-7": "3f",
    # piece {1: varint} where piece (string) must be length-delimited
    "malformed-wire-type": "0a000801",
    # a key varint whose continuation bit runs off the end
    "truncated-key-varint": "80",
    # piece of length 5 with 1 byte left
    "truncated-length-past-end": "0a0561",
    # piece of length 3 whose inner string claims 5 bytes
    "truncated-nested-length": "0a030a056162636465",
    # piece {2: fixed32 score} with 2 of its 4 bytes
    "truncated-score": "0a03150000",
    # start-group wire type (3) inside ModelProto
    "unsupported-group": "0a003b",
}


def main():
    os.makedirs(OUT, exist_ok=True)
    rows = []
    for name, hexbytes in sorted(CASES.items()):
        data = bytes.fromhex(hexbytes)
        with open(os.path.join(OUT, name + ".bin"), "wb") as f:
            f.write(data)
        rows.append("bad/spm/%s.bin\tscripts/make_bad_spm.py\thand-assembled\t%s"
                    % (name, hashlib.sha256(data).hexdigest()))
    manifest = os.path.join(ROOT, "fixtures", "MANIFEST.tsv")
    with open(manifest) as f:
        lines = [l for l in f.read().splitlines() if not l.startswith("bad/spm/")]
    body = sorted(set(lines[1:] + rows), key=lambda l: l.split("\t")[0])
    with open(manifest, "w") as f:
        f.write("\n".join([lines[0]] + body) + "\n")


if __name__ == "__main__":
    sys.exit(main())
