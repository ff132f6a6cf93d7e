/* quant/avx2/simd.h: private to quant/avx2/. Vector steps more than one kernel of the
 * folder shares, each equal to the reference's scalar step it replaces (the reasons are
 * spelled out here and in q8_0.c). static inline, so each file keeps its own AVX2 copy. */
#ifndef LC_QUANT_AVX2_SIMD_H
#define LC_QUANT_AVX2_SIMD_H

#include <float.h>
#include <immintrin.h>
#include <stdbool.h>
#include <stdint.h>

#include "quant/quant_impl.h"

/* True when any of the 32 lanes of v0..v3 is NaN. Blocks holding a NaN go to the
 * reference: its searches treat NaN in ways lanes cannot mimic. */
static inline bool lc_avx2_any_nan32(__m256 v0, __m256 v1, __m256 v2, __m256 v3) {
    const __m256 nan = _mm256_or_ps(
        _mm256_or_ps(_mm256_cmp_ps(v0, v0, _CMP_UNORD_Q), _mm256_cmp_ps(v1, v1, _CMP_UNORD_Q)),
        _mm256_or_ps(_mm256_cmp_ps(v2, v2, _CMP_UNORD_Q), _mm256_cmp_ps(v3, v3, _CMP_UNORD_Q)));
    return _mm256_movemask_ps(nan) != 0;
}

/* The largest of 32 magnitudes a0..a3 (no NaN among them). vmaxps(a, b) is
 * `a > b ? a : b`, the reference's MAX operand order; without NaN the max is
 * associative and commutative, so any folding order gives the sequential fold's value. */
static inline float lc_avx2_max32(__m256 a0, __m256 a1, __m256 a2, __m256 a3) {
    const __m256 m = _mm256_max_ps(_mm256_max_ps(a0, a1), _mm256_max_ps(a2, a3));
    __m128 h = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
    h = _mm_max_ps(h, _mm_movehl_ps(h, h));
    h = _mm_max_ss(h, _mm_movehdup_ps(h));
    return _mm_cvtss_f32(h);
}

/* The smallest of 32 values (no NaN among them; a zero's sign is arbitrary). */
static inline float lc_avx2_min32(__m256 a0, __m256 a1, __m256 a2, __m256 a3) {
    const __m256 m = _mm256_min_ps(_mm256_min_ps(a0, a1), _mm256_min_ps(a2, a3));
    __m128 h = _mm_min_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
    h = _mm_min_ps(h, _mm_movehl_ps(h, h));
    h = _mm_min_ss(h, _mm_movehdup_ps(h));
    return _mm_cvtss_f32(h);
}

/* Bit k set where lane k of the 32 lanes v0..v3 equals `value` (+0 and -0 are equal). */
static inline uint32_t lc_avx2_eq_mask32(__m256 v0, __m256 v1, __m256 v2, __m256 v3,
                                         float value) {
    const __m256 c = _mm256_set1_ps(value);
    return (uint32_t)_mm256_movemask_ps(_mm256_cmp_ps(v0, c, _CMP_EQ_OQ)) |
           (uint32_t)_mm256_movemask_ps(_mm256_cmp_ps(v1, c, _CMP_EQ_OQ)) << 8 |
           (uint32_t)_mm256_movemask_ps(_mm256_cmp_ps(v2, c, _CMP_EQ_OQ)) << 16 |
           (uint32_t)_mm256_movemask_ps(_mm256_cmp_ps(v3, c, _CMP_EQ_OQ)) << 24;
}

/* The reference's min/max search over a block x[0..31] (loaded as v0..v3, no NaN):
 *   lo = FLT_MAX, hi = -FLT_MAX; if (x[j] < lo) lo = x[j]; if (x[j] > hi) hi = x[j];
 * Its values are the min (max) of the 32 elements and the starting value: a block of
 * +inf keeps lo = FLT_MAX, one of -inf keeps hi = -FLT_MAX. Among equal elements the
 * strict comparison keeps the first, which only shows for zeros (-0 == +0): a zero
 * extreme takes the sign of the block's first zero. */
static inline void lc_avx2_min_max32(__m256 v0, __m256 v1, __m256 v2, __m256 v3,
                                     const float *x, float *min, float *max) {
    float lo = lc_avx2_min32(v0, v1, v2, v3), hi = lc_avx2_max32(v0, v1, v2, v3);
    lo = lo > FLT_MAX ? FLT_MAX : lo;
    hi = hi < -FLT_MAX ? -FLT_MAX : hi;
    if (lo == 0.0f || hi == 0.0f) {
        const float z = x[__builtin_ctz(lc_avx2_eq_mask32(v0, v1, v2, v3, 0.0f))];
        lo = lo == 0.0f ? z : lo;
        hi = hi == 0.0f ? z : hi;
    }
    *min = lo;
    *max = hi;
}

/* The reference's signed_extreme (Q4_0, Q5_0) over x[0..31] loaded as v0..v3, no NaN:
 * the signed value of the FIRST element of largest magnitude (the search replaces it
 * only on a strictly larger |x|), and +0 when every element is +-0 (it starts from +0:
 * -0 would flip d's sign). */
static inline float lc_avx2_signed_extreme32(__m256 v0, __m256 v1, __m256 v2, __m256 v3,
                                             const float *x) {
    const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    const __m256 a0 = _mm256_and_ps(v0, abs_mask), a1 = _mm256_and_ps(v1, abs_mask);
    const __m256 a2 = _mm256_and_ps(v2, abs_mask), a3 = _mm256_and_ps(v3, abs_mask);
    const float amax = lc_avx2_max32(a0, a1, a2, a3);
    if (amax == 0.0f)
        return 0.0f;
    /* hit != 0: amax is one of the |x| */
    return x[__builtin_ctz(lc_avx2_eq_mask32(a0, a1, a2, a3, amax))];
}

/* lc_q_scale_f16(f) with F16C: vcvtps2ph rounds to nearest even like the shared
 * converter on every non-NaN input (overflow to infinity and f16 subnormals included; the
 * folder never sets MXCSR's DAZ or FTZ); a NaN takes the shared converter's path. */
static inline uint16_t lc_avx2_scale_f16(float f) {
    if (f != f)
        return lc_q_scale_f16(f);
    return (uint16_t)_mm_extract_epi16(_mm_cvtps_ph(_mm_set_ss(f), _MM_FROUND_TO_NEAREST_INT), 0);
}

/* (int8_t)(int32_t)trunc(v) on 8 lanes, as lc_q_trunc_i8: vcvttps2dq gives INT32_MIN
 * for NaN and out-of-range values, as gcc's cvttss2si does, and the low byte is kept
 * sign-extended. */
static inline __m256i lc_avx2_trunc_i8(__m256 v) {
    const __m256i t = _mm256_cvttps_epi32(v);
    return _mm256_srai_epi32(_mm256_slli_epi32(t, 24), 24);
}

/* Stores the 16 bytes (lo[j] & 0xff | hi[j] << 4) & 0xff, j = 0..15, where lo0, lo1 hold
 * elements 0..7, 8..15 and hi0, hi1 elements 16..23, 24..31 of a block as int32 lanes:
 * the reference's `(uint8_t)q0 | (uint8_t)q1 << 4` stored into a uint8_t. */
static inline void lc_avx2_store_nibbles(uint8_t *qs, __m256i lo0, __m256i lo1, __m256i hi0,
                                         __m256i hi1) {
    const __m256i lo8 = _mm256_set1_epi32(0xff);
    const __m256i b0 = _mm256_and_si256(_mm256_or_si256(_mm256_and_si256(lo0, lo8),
                                                        _mm256_slli_epi32(hi0, 4)), lo8);
    const __m256i b1 = _mm256_and_si256(_mm256_or_si256(_mm256_and_si256(lo1, lo8),
                                                        _mm256_slli_epi32(hi1, 4)), lo8);
    /* 16 values 0..255: pack to u16 (per 128-bit half), restore order, pack to u8. */
    const __m256i w = _mm256_permute4x64_epi64(_mm256_packus_epi32(b0, b1), 0xd8);
    const __m128i bytes = _mm_packus_epi16(_mm256_castsi256_si128(w),
                                           _mm256_extracti128_si256(w, 1));
    _mm_storeu_si128((__m128i *)(void *)qs, bytes);
}

/* Bit 4 of each of the 32 int32 lanes q0..q3 (elements 0..31) as the u32 qh of Q5_0/Q5_1:
 * bit j = bit 4 of element j's low byte. */
static inline uint32_t lc_avx2_bit4_mask32(__m256i q0, __m256i q1, __m256i q2, __m256i q3) {
#define LC_BIT4(q) ((uint32_t)_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_slli_epi32(q, 27))))
    return LC_BIT4(q0) | LC_BIT4(q1) << 8 | LC_BIT4(q2) << 16 | LC_BIT4(q3) << 24;
#undef LC_BIT4
}

/* The 32 nibble values of a Q4/Q5 block's qs as int32 lanes: out[0], out[1] elements
 * 0..7, 8..15 (low nibbles), out[2], out[3] elements 16..31 (high nibbles). */
static inline void lc_avx2_load_nibbles(const uint8_t *qs, __m256i out[4]) {
    const __m128i nib = _mm_set1_epi8(0x0f);
    const __m128i q = _mm_loadu_si128((const __m128i *)(const void *)qs);
    const __m128i lo = _mm_and_si128(q, nib);
    const __m128i hi = _mm_and_si128(_mm_srli_epi16(q, 4), nib);
    out[0] = _mm256_cvtepu8_epi32(lo);
    out[1] = _mm256_cvtepu8_epi32(_mm_srli_si128(lo, 8));
    out[2] = _mm256_cvtepu8_epi32(hi);
    out[3] = _mm256_cvtepu8_epi32(_mm_srli_si128(hi, 8));
}

/* Bit 4 set from bit (8k + lane) of qh, for elements 8k..8k+7 of a Q5 block. */
static inline __m256i lc_avx2_qh_bit4(uint32_t qh, int k) {
    const __m256i shift = _mm256_add_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7),
                                           _mm256_set1_epi32(8 * k));
    const __m256i bit = _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32((int)qh), shift),
                                         _mm256_set1_epi32(1));
    return _mm256_slli_epi32(bit, 4);
}

#endif
