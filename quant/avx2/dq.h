/* quant/avx2/dq.h: private to quant/avx2/. The steps the dequantize-only kernels share
 * (quant/types.h LC_DEQUANT_TYPES). Each turns small integers into floats, which is
 * exact, and then does the reference's one IEEE operation per value: the float
 * arithmetic of every kernel stays the reference's, operation for operation. A product
 * of a scale and an integer-valued float commutes bit for bit (at most one operand can
 * be NaN, and x86 returns that one, quieted), so d * q and q * d are the same here.
 * static inline, so each file keeps its own AVX2 copy. */
#ifndef LC_QUANT_AVX2_DQ_H
#define LC_QUANT_AVX2_DQ_H

#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "quant/dq_decode.h"

/* (float) of the 8 unsigned (signed) bytes at p. */
static inline __m256 lc_avx2_u8x8_ps(const uint8_t *p) {
    const __m128i b = _mm_loadl_epi64((const __m128i *)(const void *)p);
    return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(b));
}
static inline __m256 lc_avx2_i8x8_ps(const void *p) {
    const __m128i b = _mm_loadl_epi64((const __m128i *)p);
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(b));
}

/* (float) of the two 4-byte grid entries at g1, g2 (unsigned bytes), g1's first. */
static inline __m256 lc_avx2_u8x4x2_ps(const uint8_t *g1, const uint8_t *g2) {
    uint32_t a, b;
    memcpy(&a, g1, 4);
    memcpy(&b, g2, 4);
    const __m128i v = _mm_unpacklo_epi32(_mm_cvtsi32_si128((int)a), _mm_cvtsi32_si128((int)b));
    return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(v));
}

/* The IQ sign byte s as a float sign mask: lane j holds bit 31 set where bit j of s is
 * set. XOR with it is the reference's with_sign, a negation (NaN's sign flips too). */
static inline __m256 lc_avx2_signs8(unsigned s) {
    const __m256i shift = _mm256_setr_epi32(31, 30, 29, 28, 27, 26, 25, 24);
    const __m256i top = _mm256_sllv_epi32(_mm256_set1_epi32((int)s), shift);
    return _mm256_castsi256_ps(_mm256_and_si256(top, _mm256_set1_epi32(INT32_MIN)));
}

/* The 16 signed table values lut[q & 0xf] (*lo) and lut[q >> 4] (*hi) for the 16 bytes q. */
static inline void lc_avx2_lut_nibbles(__m128i lut, __m128i q, __m128i *lo, __m128i *hi) {
    const __m128i nib = _mm_set1_epi8(0x0f);
    *lo = _mm_shuffle_epi8(lut, _mm_and_si128(q, nib));
    *hi = _mm_shuffle_epi8(lut, _mm_and_si128(_mm_srli_epi16(q, 4), nib));
}

/* y[0..7] = d * (float)v[j] for the low 8 signed bytes of v. */
static inline void lc_avx2_store8_i8(float *y, __m256 d, __m128i v) {
    _mm256_storeu_ps(y, _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(v))));
}

/* y[0..15] = d * (float)v[j] for the 16 signed bytes of v. */
static inline void lc_avx2_store16_i8(float *y, __m256 d, __m128i v) {
    lc_avx2_store8_i8(y, d, v);
    lc_avx2_store8_i8(y + 8, d, _mm_srli_si128(v, 8));
}

/* ---- one decoded group of 8 values (quant/dq_decode.h), as the reference computes it ---- */

/* y[0..7] = with_sign(db * g) for the 8 floats g of an IQ2/IQ3 group. */
static inline void lc_avx2_store8_signed(float *y, const lc_iq_grp8 *grp, __m256 g) {
    const __m256 prod = _mm256_mul_ps(_mm256_set1_ps(grp->db), g);
    _mm256_storeu_ps(y, _mm256_xor_ps(prod, lc_avx2_signs8(grp->signs)));
}

/* An IQ2 group: one 8-byte grid entry. */
static inline void lc_avx2_iq2_grp8(const lc_iq_grp8 *grp, float *y) {
    lc_avx2_store8_signed(y, grp, lc_avx2_u8x8_ps(grp->grid[0]));
}

/* An IQ3 group: two 4-byte grid entries. */
static inline void lc_avx2_iq3_grp8(const lc_iq_grp8 *grp, float *y) {
    lc_avx2_store8_signed(y, grp, lc_avx2_u8x4x2_ps(grp->grid[0], grp->grid[1]));
}

/* An IQ1 group: y = dl * ((float)grid + delta), the add first; delta's sign set by XOR,
 * without a branch (the sign bits are random). */
static inline void lc_avx2_iq1_grp8(const lc_iq1_grp8 *grp, float *y) {
    const __m256 sign = _mm256_castsi256_ps(_mm256_set1_epi32((int)grp->delta_sign));
    const __m256 delta = _mm256_xor_ps(_mm256_set1_ps(LC_IQ1S_DELTA), sign);
    const __m256 g = lc_avx2_i8x8_ps(grp->grid);
    _mm256_storeu_ps(y, _mm256_mul_ps(_mm256_set1_ps(grp->dl), _mm256_add_ps(g, delta)));
}

/* y[0..31] = d * lut[q] for the 32 nibbles of the 16 bytes at qs (low nibbles first),
 * as IQ4_NL and MXFP4 store them. */
static inline void lc_avx2_store32_lut(float *y, __m256 d, __m128i lut, const uint8_t *qs) {
    __m128i lo, hi;
    lc_avx2_lut_nibbles(lut, _mm_loadu_si128((const __m128i *)(const void *)qs), &lo, &hi);
    lc_avx2_store16_i8(y, d, lo);
    lc_avx2_store16_i8(y + 16, d, hi);
}

#endif
