#!/usr/bin/env python3
"""scripts/check-ptx.py: the device half of quant/cuda/block_ops.h's exactness rule 1,
checked on the PTX nvcc makes from quant/cuda/kernels.cu (no GPU needed).

    python3 scripts/check-ptx.py FILE.ptx...

Every binary32 operation the kernels run must be one IEEE operation rounded to nearest
even, on subnormals as they are, and nothing ptxas may fuse or approximate. In PTX:
  - add/sub/mul .f32 carry an explicit .rn (PTX: "an add/mul with an explicit rounding
    modifier is not contracted into an fma"); div is div.rn.f32, sqrt sqrt.rn.f32, rcp
    rcp.rn.f32 (all IEEE, correctly rounded);
  - no fma/mad on floats, no .ftz, no .approx or .full (fast division), no .sat;
  - no transcendental or approximate instruction (ex2, lg2, sin, cos, rsqrt, tanh);
  - no abs/neg/copysign on floats: block_ops.h flips sign bits with integer operations,
    because PTX leaves a NaN's payload through abs.f32 and neg.f32 unspecified;
  - float -> int only by cvt.rzi (truncation, the C cast; block_ops.h range-checks
    first), int -> float only by cvt.rn; no f16/f64 arithmetic (the conversions are
    integer code);
  - min/max .f32 only where the compiler turned a compare-and-select against a
    constant into one, and only when that is the same value on every input: the
    constant is neither a zero nor a NaN, or it is +0 and the other operand had its
    sign bit cleared (an absolute value), so no NaN and no signed zero can tell them
    apart (PTX min/max return the non-NaN operand, as the select does there).
Prints one line per offending instruction (FILE:LINE: instruction: rule) and exits 1;
prints a summary and exits 0 when every file keeps the rule. Python 3 standard library.
"""
import re
import sys

INSTR = re.compile(r"^\s*(@!?%\w+\s+)?([a-z][a-z0-9_.]*)\s*(.*?);\s*(//.*)?$")


def operands(text):
    return [o.strip() for o in text.split(",")]



def check_file(path):
    bad = []
    counts = {}
    defs = {}               # register -> its latest defining instruction, per function
    with open(path, encoding="utf-8") as f:
        lines = f.readlines()
    for ln, raw in enumerate(lines, 1):
        line = raw.split("//", 1)[0].rstrip()
        if line.startswith(".visible .entry") or line.startswith(".func"):
            defs = {}
        m = INSTR.match(line)
        if not m:
            continue
        op, args = m.group(2), m.group(3)
        parts = op.split(".")
        base, mods = parts[0], set(parts[1:])
        ops = operands(args) if args else []
        if ops:
            defs[ops[0]] = (op, ops)
        def fail(rule):
            bad.append(f"{path}:{ln}: {op} {args}: {rule}")
        if ".ftz" in op or "ftz" in mods:
            fail("flushes subnormals (.ftz)")
            continue
        if mods & {"approx", "full"}:
            fail("approximate (.approx/.full)")
            continue
        f32 = "f32" in mods
        f16 = bool(mods & {"f16", "f16x2", "bf16", "bf16x2"}) and base not in ("ld", "st", "mov")
        f64 = "f64" in mods and base not in ("ld", "st", "mov")
        if base == "cvt":
            # cvt.<rnd>.<dst>.<src>: the last two type modifiers
            types = [p for p in parts[1:] if re.match(r"^[usfb]\d+$", p)]
            dst, src = (types + ["", ""])[:2]
            if src == "f32" and dst.startswith(("s", "u")) and "rzi" not in mods:
                fail("float -> int other than truncation (cvt.rzi)")
            elif dst == "f32" and src.startswith(("s", "u")) and "rn" not in mods:
                fail("int -> float other than to nearest (cvt.rn)")
            elif "f32" in (dst, src) and not (dst.startswith(("s", "u")) or
                                              src.startswith(("s", "u"))):
                fail("float format conversion (block_ops.h converts with integer code)")
            elif dst in ("f16", "bf16", "f64") or src in ("f16", "bf16", "f64"):
                fail("f16/bf16/f64 conversion")
            counts[op] = counts.get(op, 0) + 1
            continue
        if f16 or (f64 and base in ("add", "sub", "mul", "div", "fma", "sqrt", "rcp")):
            fail("f16/bf16/f64 arithmetic")
            continue
        if not f32:
            continue
        if base in ("fma", "mad"):
            fail("fused multiply-add")
        elif base in ("add", "sub", "mul"):
            if "rn" not in mods or mods & {"sat"}:
                fail("needs an explicit .rn (else ptxas may contract it into an fma)")
        elif base in ("div", "sqrt", "rcp"):
            if "rn" not in mods:
                fail("not the IEEE correctly rounded form (.rn)")
        elif base in ("abs", "neg", "copysign"):
            fail("sign operation on a float (payload of a NaN unspecified)")
        elif base in ("ex2", "lg2", "sin", "cos", "rsqrt", "tanh", "testp"):
            fail("transcendental or approximate instruction")
        elif base in ("min", "max"):
            imm = [o for o in ops[1:] if o.startswith("0f")]
            regs = [o for o in ops[1:] if o.startswith("%")]
            if len(imm) != 1 or len(regs) != 1:
                fail("min/max of two registers (a select need not mean this)")
            else:
                bits = int(imm[0][2:], 16)
                zero = bits & 0x7FFFFFFF == 0
                nan = (bits & 0x7FFFFFFF) > 0x7F800000
                if nan or (zero and bits != 0):
                    fail("min/max against a NaN or -0 constant")
                elif zero and not sign_cleared(defs, regs[0]):
                    fail("min/max against +0 with an operand that may be -0")
        elif base in ("setp", "selp", "set", "slct", "ld", "st", "mov", "cvta"):
            pass
        else:
            fail("unexpected float instruction")
        counts[op] = counts.get(op, 0) + 1
    return bad, counts


def sign_cleared(defs, reg):
    """True when reg was moved from an integer register whose sign bit was cleared
    (and.b32 r, x, 2147483647): a float that cannot be -0 or negative."""
    d = defs.get(reg)
    if not d or not d[0].startswith("mov.b32") or len(d[1]) < 2:
        return False
    src = defs.get(d[1][1])
    return bool(src and src[0] == "and.b32" and
                src[1][-1].lower() in ("2147483647", "0x7fffffff"))


def main():
    if len(sys.argv) < 2:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    all_bad = []
    total = {}
    for path in sys.argv[1:]:
        bad, counts = check_file(path)
        all_bad += bad
        for k, v in counts.items():
            total[k] = total.get(k, 0) + v
    for b in all_bad:
        print(b)
    if all_bad:
        print(f"check-ptx: {len(all_bad)} instruction(s) break the exactness rule")
        return 1
    if not total.get("add.rn.f32") or not total.get("div.rn.f32"):
        print("check-ptx: no float arithmetic found: is this kernels.cu's PTX?")
        return 1
    shown = ", ".join(f"{k} {v}" for k, v in sorted(total.items()))
    print(f"check-ptx: {len(sys.argv) - 1} PTX file(s) keep the exactness rule ({shown})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
