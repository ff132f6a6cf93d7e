"""Writes the float inputs of fixtures/quant/ (fixed seed): hard.f32, special.f32.

hard.f32: 16 super-blocks of 256 float32, one kind of input each, so that every
32-element type sees 8 blocks and every K type one super-block of each kind.
special.f32: 8 super-blocks with NaN and infinities, for the non-finite policy."""
import sys

import numpy as np

K = 256


def hard(rng):
    kinds = [
        rng.standard_normal(K),                                  # 0 normal
        rng.uniform(-1, 1, K),                                   # 1 uniform
        np.where(rng.random(K) < 0.5, 0.0, -0.0),               # 2 signed zeros
        np.tile(np.r_[127.0, np.arange(-15, 16) + 0.5], 8),     # 3 exact .5 ties
        np.repeat(rng.standard_normal(8), 32),                   # 4 all-equal blocks
        rng.standard_normal(K) * 1e-30,                          # 5 tiny
        rng.standard_normal(K) * 1e-40,                          # 6 binary32 subnormal
        rng.integers(-300, 300, K) * 2.0**-149,                  # 7 multiples of 2^-149
        rng.standard_normal(K) * 1e37,                           # 8 huge
        np.zeros(K),                                             # 9 zeros
        np.tile(np.r_[2.0, -2.0, rng.uniform(-2, 2, 30)], 8),    # 10 |min| == |max|
        rng.standard_normal(K) * np.exp(rng.uniform(-20, 20, K)),  # 11 wide range
        np.where(rng.random(K) < 0.9, 0.0, rng.standard_normal(K) * 5),  # 12 sparse
        np.abs(rng.standard_normal(K)) + 0.5,                    # 13 all positive
        -np.abs(rng.standard_normal(K)) - 0.5,                   # 14 all negative
        np.where(np.arange(K) % 32 == 7, 40.0, rng.standard_normal(K) * 1e-3),  # 15 outliers
    ]
    return np.concatenate(kinds).astype(np.float32)


def special(rng):
    with np.errstate(over="ignore"):
        blocks = []
        for i in range(8):
            x = rng.standard_normal(K).astype(np.float32)
            if i == 0:
                x[rng.integers(0, K, 12)] = np.nan
            elif i == 1:
                x[31::32] = np.nan                                # NaN last in each block
            elif i == 2:
                x[rng.integers(0, K, 6)] = np.inf
                x[rng.integers(0, K, 6)] = -np.inf
            elif i == 3:
                x[:] = np.nan
            elif i == 4:
                x[0::2] = np.inf
                x[1::2] = -np.inf
            elif i == 5:
                x = (x * 3e38).astype(np.float32)                 # overflows to inf
            elif i == 6:
                x = np.where(rng.random(K) < 0.5, 3.4e38, -3.4e38).astype(np.float32)
            else:
                x[0::32] = np.nan
                x[1::32] = np.float32(np.finfo(np.float32).max)
            blocks.append(x)
    return np.concatenate(blocks).astype(np.float32)


def main(outdir):
    rng = np.random.default_rng(20260101)
    hard(rng).tofile(f"{outdir}/hard.f32")
    special(rng).tofile(f"{outdir}/special.f32")


if __name__ == "__main__":
    main(sys.argv[1])
