/* quant/avx2/q4_1.c: Q4_1 with AVX2, byte-identical to the scalar reference (quant/ref.c).
 * Built with the folder's flags (quant/avx2/kernels.h); shared steps are in simd.h.
 *
 * Q4_1 (20 B): | d:2 | m:2 | qs[16] |  byte j = q[j] | q[j+16] << 4,  x = d*q + m
 *
 * min, max: the reference's strict-comparison search from FLT_MAX / -FLT_MAX
 * (lc_avx2_min_max32: lane-wise min/max, then the first zero's sign for a zero extreme).
 * d = (max - min)/15, id = 1/d (0 when d is 0), m = min, all in scalar f32 as in ref.
 * q = min(15, (int8_t)trunc((x - min)*id + 0.5)): subtract, multiply, add, each rounded.
 * Blocks holding a NaN go to the reference, whose search skips NaN. */
#include <immintrin.h>
#include <stdint.h>

#include "quant/avx2/kernels.h"
#include "quant/avx2/simd.h"
#include "quant/blocks.h"
#include "quant/quant.h"
#include "quant/quant_impl.h"

/* min(15, (int8_t)trunc((x - min)*id + 0.5)) on 8 lanes. */
static inline __m256i q4_1_q(__m256 v, __m256 vmin, __m256 vid) {
    const __m256 t = _mm256_add_ps(_mm256_mul_ps(_mm256_sub_ps(v, vmin), vid),
                                   _mm256_set1_ps(0.5f));
    return _mm256_min_epi32(lc_avx2_trunc_i8(t), _mm256_set1_epi32(15));
}

void lc_q4_1_quantize_avx2(const float *restrict x, void *restrict vy, size_t n) {
    lc_block_q4_1 *y = vy;
    for (size_t b = 0; b < n / LC_QK4_1; b++, x += LC_QK4_1) {
        __m256 v[4];
        for (int k = 0; k < 4; k++)
            v[k] = _mm256_loadu_ps(x + 8 * k);
        if (lc_avx2_any_nan32(v[0], v[1], v[2], v[3])) {
            lc_q4_1_quantize_ref(x, &y[b], LC_QK4_1);
            continue;
        }
        float min, max;
        lc_avx2_min_max32(v[0], v[1], v[2], v[3], x, &min, &max);
        const float d = (max - min) / 15.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[b].d = lc_avx2_scale_f16(d);
        y[b].m = lc_avx2_scale_f16(min);
        const __m256 vmin = _mm256_set1_ps(min), vid = _mm256_set1_ps(id);
        lc_avx2_store_nibbles(y[b].qs, q4_1_q(v[0], vmin, vid), q4_1_q(v[1], vmin, vid),
                              q4_1_q(v[2], vmin, vid), q4_1_q(v[3], vmin, vid));
    }
}

void lc_q4_1_dequantize_avx2(const void *restrict vx, float *restrict y, size_t n) {
    const lc_block_q4_1 *x = vx;
    for (size_t b = 0; b < n / LC_QK4_1; b++, y += LC_QK4_1) {
        const __m256 d = _mm256_set1_ps(lc_q_f16_to_f32(x[b].d));
        const __m256 m = _mm256_set1_ps(lc_q_f16_to_f32(x[b].m));
        __m256i q[4];
        lc_avx2_load_nibbles(x[b].qs, q);
        for (int k = 0; k < 4; k++)      /* d*q, then + m: two roundings, as in ref */
            _mm256_storeu_ps(y + 8 * k, _mm256_add_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(q[k]), d), m));
    }
}
