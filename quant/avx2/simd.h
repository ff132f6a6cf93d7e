/* quant/avx2/simd.h: private to quant/avx2/. Vector steps more than one kernel of the
 * folder shares, each equal to the reference's scalar step it replaces (the reasons are
 * spelled out in q8_0.c). static inline, so each file keeps its own AVX2 copy. */
#ifndef LC_QUANT_AVX2_SIMD_H
#define LC_QUANT_AVX2_SIMD_H

#include <immintrin.h>
#include <stdbool.h>

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

#endif
