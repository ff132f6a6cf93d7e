#!/usr/bin/env python3
"""Splits a GGUF model into parts as gguf-py's GGUFWriter splits it (split_max_tensors:
what convert_hf_to_gguf.py --split-max-tensors writes): DST.gguf becomes
DST-00001-of-0000N.gguf ... with split.no / split.count / split.tensors.count.

The tests make their split inputs with it from fixture GGUFs (tests/llama/
test_quantize_split.py, tests/integration/test_gguf_quantize.py), so no split file is
kept in fixtures/. Usage: split_gguf.py SRC DST.gguf TENSORS_PER_PART
"""
import sys
from pathlib import Path

import gguf


def split_gguf(src, dst, per_part, small_first_shard=False):
    """Writes the parts of src (every key but general.architecture, which the writer
    puts first itself; every tensor as its raw bytes) and returns their paths.
    small_first_shard: the first part holds the metadata only (--no-tensor-first-split)."""
    r = gguf.GGUFReader(str(src))
    arch = r.fields["general.architecture"].contents()
    w = gguf.GGUFWriter(str(dst), arch, split_max_tensors=per_part,
                        small_first_shard=small_first_shard)
    for f in r.fields.values():
        if f.name.startswith("GGUF.") or f.name == "general.architecture":
            continue
        vt = f.types[0]
        sub = f.types[-1] if vt == gguf.GGUFValueType.ARRAY else None
        w.add_key_value(f.name, f.contents(), vt, sub)
    for t in r.tensors:
        w.add_tensor(t.name, t.data, raw_dtype=t.tensor_type)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    dst = Path(dst)
    return sorted(dst.parent.glob(f"{dst.stem}-*-of-*.gguf"))


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    for p in split_gguf(sys.argv[1], sys.argv[2], int(sys.argv[3])):
        print(p)
