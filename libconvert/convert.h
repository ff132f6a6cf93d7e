/* libconvert/convert.h: plain dtype conversions and the lazy cast transform.
 *
 * This is the one f16/bf16/f8 conversion the whole project uses (the quantizers use
 * it for their scales). The scalar functions are static inline so that ISA-specific
 * translation units keep their own copies; they are portable C (no F16C, no
 * _Float16) and rely only on IEEE binary32 arithmetic in the default rounding mode,
 * which -ffp-contract=off and the absence of -ffast-math keep.
 *
 * Rounding is to nearest, ties to even, everywhere. Infinities and subnormals are
 * exact both ways. Widening (f16, bf16, f8 -> f32) is exact. NaN rules, chosen to
 * match the references the tests compare against bit for bit:
 *   f32 -> f16   numpy's astype(float16): sign kept, the top 10 payload bits kept,
 *                quiet bit NOT forced; a payload that would vanish becomes 0x7c01.
 *                (ggml's GGML_FP32_TO_FP16 agrees on every non-NaN and returns
 *                sign|0x7e00 for every NaN.)
 *   f32 -> bf16  ml_dtypes.bfloat16: sign | 0x7fc0, payload dropped.
 *   f16, bf16 -> f32  payload shifted up unchanged (no quieting), as numpy and
 *                ml_dtypes do.
 *   f8 -> f32    sign | 0x7fc00000 (ml_dtypes).
 * Other pairs in lc_convert: within F16/F32/F64 as numpy (F64 -> F16 rounds once);
 * with BF16 or F8 as ml_dtypes, which goes through F32 (F64 -> BF16 rounds twice) and
 * sends a NaN into F16 as sign|0x7e00.
 * E4M3 is the "FN" variant: no infinities, 0x7f and 0xff are NaN, max 448. */
#ifndef LC_LIBCONVERT_CONVERT_H
#define LC_LIBCONVERT_CONVERT_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#include "libconvert/bytes.h"
#include "libconvert/dtype.h"
#include "libconvert/error.h"
#include "libconvert/model.h"
#include "libconvert/tensor.h"

/* ---- scalars ---- */

/* lc_f32_to_f16 in a 32-bit result (the high half zero). Row loops use it so that the
 * vectoriser keeps every lane 32 bits wide and narrows once at the end (about 1.5x
 * faster with gcc 12 than narrowing every intermediate value to 16 bits). */
static inline uint32_t lc_convert_f32_to_f16_wide(float f) {
    const uint32_t x = lc_f32_to_bits(f);
    const uint32_t sign = (x >> 16) & 0x8000u;
    const int32_t a = (int32_t)(x & 0x7fffffffu);
    /* Normal f16 range: rebias the exponent (127 -> 15) and round the 13 dropped bits;
     * a carry out of the mantissa correctly bumps the exponent, up to infinity. */
    const uint32_t m = (uint32_t)a - 0x38000000u;
    const uint32_t hn = (m + 0x0fffu + ((m >> 13) & 1u)) >> 13;
    /* Below 2^-14: adding 0.5f aligns the value so that one float ulp (2^-24) is one
     * f16 subnormal step, and the FPU's own round-to-nearest-even does the rounding. */
    const uint32_t hs = lc_f32_to_bits(lc_bits_to_f32((uint32_t)a) + 0.5f) - 0x3f000000u;
    const uint32_t pay = ((uint32_t)a >> 13) & 0x3ffu;
    const uint32_t hnan = 0x7c00u | pay | (uint32_t)(pay == 0);
    /* Select with masks, not ?:, so that gcc need not branch around the float add
     * (it may not speculate one under -ftrapping-math) and vectorises the loops. */
    const uint32_t sub = -(uint32_t)(a < 0x38800000);
    const uint32_t big = -(uint32_t)(a >= 0x47800000);        /* >= 65536 or inf */
    const uint32_t nan = -(uint32_t)(a > 0x7f800000);
    uint32_t h = (hs & sub) | (hn & ~sub);
    h = (0x7c00u & big) | (h & ~big);
    h = (hnan & nan) | (h & ~nan);
    return sign | h;
}

/* binary32 -> binary16 bits, round to nearest even (numpy astype(float16)). */
static inline uint16_t lc_f32_to_f16(float f) { return (uint16_t)lc_convert_f32_to_f16_wide(f); }

/* binary16 bits -> binary32, exact. */
static inline float lc_f16_to_f32(uint16_t h) {
    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    const uint32_t a = h & 0x7fffu;
    const uint32_t e = h & 0x7c00u;
    const uint32_t norm = (a << 13) + 0x38000000u;              /* rebias 15 -> 127 */
    const uint32_t infnan = (a << 13) | 0x7f800000u;
    /* Subnormal: 2^-14 * (1 + m/1024) - 2^-14 = m * 2^-24, exact. */
    const uint32_t sub = lc_f32_to_bits(lc_bits_to_f32((a << 13) | 0x38800000u) -
                                        lc_bits_to_f32(0x38800000u));
    const uint32_t ms = -(uint32_t)(e == 0), mi = -(uint32_t)(e == 0x7c00u);  /* see above */
    uint32_t r = (sub & ms) | (norm & ~ms);
    r = (infnan & mi) | (r & ~mi);
    return lc_bits_to_f32(sign | r);
}

/* binary32 -> bfloat16 bits, round to nearest even (ml_dtypes.bfloat16). */
static inline uint16_t lc_f32_to_bf16(float f) {
    const uint32_t x = lc_f32_to_bits(f);
    const uint32_t r = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
    const uint32_t nan = ((x >> 16) & 0x8000u) | 0x7fc0u;
    return (uint16_t)((x & 0x7fffffffu) > 0x7f800000u ? nan : r);
}

/* bfloat16 bits -> binary32, exact. */
static inline float lc_bf16_to_f32(uint16_t b) { return lc_bits_to_f32((uint32_t)b << 16); }

/* f8 E4M3FN bits -> binary32, exact; 0x7f and 0xff are NaN. */
static inline float lc_f8e4m3_to_f32(uint8_t v) {
    const uint32_t sign = (uint32_t)(v & 0x80u) << 24;
    const uint32_t a = v & 0x7fu;
    uint32_t r;
    if (a == 0x7fu)
        r = 0x7fc00000u;
    else if (a >= 0x08u)
        r = (a << 20) + ((127u - 7u) << 23);                    /* rebias 7 -> 127 */
    else                                                        /* subnormal: a * 2^-9 */
        r = lc_f32_to_bits((float)a * 0x1p-9f);
    return lc_bits_to_f32(sign | r);
}

/* f8 E5M2 bits -> binary32, exact (E5M2 is binary16 with the low byte cut off). */
static inline float lc_f8e5m2_to_f32(uint8_t v) {
    const uint32_t sign = (uint32_t)(v & 0x80u) << 24;
    if ((v & 0x7fu) > 0x7cu)
        return lc_bits_to_f32(sign | 0x7fc00000u);
    return lc_f16_to_f32((uint16_t)(v << 8));
}

/* f8 E4M3FNUZ / E5M2FNUZ bits -> binary32, exact: exponent bias 8 / 16, no infinity,
 * no negative zero; 0x80 is the one NaN, which ml_dtypes widens to -NaN (0xffc00000). */
static inline float lc_f8fnuz_to_f32(uint8_t v, unsigned mbits, unsigned bias) {
    if (v == 0x80u)
        return lc_bits_to_f32(0xffc00000u);
    const uint32_t sign = (uint32_t)(v & 0x80u) << 24;
    const uint32_t a = v & 0x7fu;
    uint32_t r;
    if (a >> mbits)                                             /* normal: rebias */
        r = (a << (23 - mbits)) + ((127u - bias) << 23);
    else                                                        /* subnormal */
        r = lc_f32_to_bits((float)a * lc_bits_to_f32((127u + 1u - bias - mbits) << 23));
    return lc_bits_to_f32(sign | r);
}
static inline float lc_f8e4m3fnuz_to_f32(uint8_t v) { return lc_f8fnuz_to_f32(v, 3, 8); }
static inline float lc_f8e5m2fnuz_to_f32(uint8_t v) { return lc_f8fnuz_to_f32(v, 2, 16); }

/* f8 E8M0 bits (OCP MX scales: an unsigned exponent, bias 127, no zero) -> binary32,
 * exact: 2^(v - 127), 0 giving the binary32 subnormal 2^-127; 0xff is NaN. */
static inline float lc_f8e8m0_to_f32(uint8_t v) {
    if (v == 0xffu)
        return lc_bits_to_f32(0x7fc00000u);
    return lc_bits_to_f32(v ? (uint32_t)v << 23 : 0x00400000u);
}

/* binary32 -> f8, round to nearest even, as ml_dtypes casts (not saturating):
 * E4M3FN sends NaN, infinities and anything that rounds past 448 to NaN (0x7f|sign);
 * E5M2 sends overflow to infinity and NaN to 0x7e|sign. */
uint8_t lc_f32_to_f8e4m3(float f);
uint8_t lc_f32_to_f8e5m2(float f);
/* E4M3FNUZ (largest 240) and E5M2FNUZ (largest 57344): NaN, infinities and overflow go
 * to the NaN 0x80, and a zero of either sign (or a value that rounds to one) to 0x00.
 * (Into E8M0 nothing converts: ml_dtypes' rounding into it is not reproduced.) */
uint8_t lc_f32_to_f8e4m3fnuz(float f);
uint8_t lc_f32_to_f8e5m2fnuz(float f);

/* ---- rows ---- */

/* Converts n elements of `from` at src to `to` at dst (little-endian, any alignment;
 * the buffers must not overlap unless src == dst with equal sizes). Supported:
 * float <-> float (F8_E5M2, F8_E4M3, F16, BF16, F32, F64), int -> int, int -> float,
 * BOOL <-> anything plain (nonzero -> 1; NaN is nonzero). Codes: LC_E_OVERFLOW when an
 * integer does not fit `to` (message names the element index, offset is its byte
 * offset in src; elements before it are converted); LC_E_UNSUPPORTED for float -> int
 * and block types. Thread-safe. */
lc_code lc_convert(lc_dtype from, const void *src, lc_dtype to, void *dst, size_t n,
                   lc_error *err);

/* True when lc_convert(from, to) supports the pair. */
bool lc_convert_supported(lc_dtype from, lc_dtype to);

/* True when every value of `from` converts to `to` and back unchanged (NaN to a NaN):
 * widening integers, F16/BF16 -> F32/F64, F8 -> F16/BF16/F32/F64, small ints -> float. */
bool lc_convert_is_lossless(lc_dtype from, lc_dtype to);

/* ---- the cast transform ---- */

/* Rewrites t in place into a lazy source that converts on read: the old data/ops/ctx
 * move into the new source's ctx and are freed with it; shape stays, nbytes is
 * recomputed, file_offset becomes LC_NO_OFFSET. Any byte range of the new data can be
 * read, element-aligned or not. Same dtype: LC_OK, nothing changes. LC_E_UNSUPPORTED
 * for a pair lc_convert does not support, LC_E_NOMEM; on failure t is unchanged. Reads
 * report LC_E_OVERFLOW for an integer that does not fit (offset in the old file when
 * known), and whatever the old source reports. */
lc_code lc_tensor_cast(lc_tensor *t, lc_dtype to, lc_error *err);

/* Casts every plain float tensor of m to `to`, or, when `want` is not NULL, every
 * tensor `want` accepts. Pairs are checked first, so LC_E_UNSUPPORTED changes nothing;
 * after LC_E_NOMEM the tensors before the failing one are cast (each stays valid). */
lc_code lc_model_cast(lc_model *m, lc_dtype to, bool (*want)(const lc_tensor *),
                      lc_error *err);

#endif
