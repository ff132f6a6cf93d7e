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

#endif
