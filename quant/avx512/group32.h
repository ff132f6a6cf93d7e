/* quant/avx512/group32.h: private to quant/avx512/. What its Q8_0 and Q4_0 kernels share:
 * eight 32-value blocks at a time, their maxima folded lane-wise and transposed so that
 * lane b holds block b's, then each block's d and id for all eight in one vdivps (IEEE
 * division, the scalar's bits) instead of a horizontal max and two dependent scalar
 * divisions per block: the latency that bounded quant/avx2/'s loops. */
#ifndef LC_QUANT_AVX512_GROUP32_H
#define LC_QUANT_AVX512_GROUP32_H

#include <immintrin.h>
#include <stdbool.h>

#include "quant/avx2/transpose.h"

enum { GROUP = 8 };      /* blocks of 32 values per group */

/* The maxima of |x| of eight 32-value blocks, lane b for block b; false when any of the
 * 256 values is NaN (the reference's fold restarts at a NaN: lanes cannot mimic it). */
static inline bool group_amax(const float *restrict x, __m256 *amax) {
    __m256 m[GROUP];
    __mmask16 nan = 0;
    /* Unrolled so that m stays in registers: as a loop, gcc 12 keeps m on the stack and
     * the transpose reloads it (half the kernel's time went there). */
#pragma GCC unroll 8
    for (int b = 0; b < GROUP; b++) {
        const __m512 v0 = _mm512_loadu_ps(x + 32 * b), v1 = _mm512_loadu_ps(x + 32 * b + 16);
        nan |= _mm512_cmp_ps_mask(v0, v1, _CMP_UNORD_Q);
        const __m512 a = _mm512_max_ps(_mm512_abs_ps(v0), _mm512_abs_ps(v1));
        m[b] = _mm256_max_ps(_mm512_castps512_ps256(a),
                             _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(a), 1)));
    }
    if (nan)
        return false;
    lc_x86_transpose8_ps(m);
    *amax = _mm256_max_ps(_mm256_max_ps(_mm256_max_ps(m[0], m[1]), _mm256_max_ps(m[2], m[3])),
                          _mm256_max_ps(_mm256_max_ps(m[4], m[5]), _mm256_max_ps(m[6], m[7])));
    return true;
}

/* id = d != 0 ? 1/d : 0 on eight lanes; d holds no NaN. */
static inline __m256 inverse_or_zero(__m256 d) {
    return _mm256_and_ps(_mm256_div_ps(_mm256_set1_ps(1.0f), d),
                         _mm256_cmp_ps(d, _mm256_setzero_ps(), _CMP_NEQ_OQ));
}

/* Lane b of v on all sixteen lanes. */
static inline __m512 lane(__m256 v, int b) {
    return _mm512_permutexvar_ps(_mm512_set1_epi32(b), _mm512_castps256_ps512(v));
}

#endif
