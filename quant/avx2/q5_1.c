/* quant/avx2/q5_1.c: Q5_1 with AVX2, byte-identical to the scalar reference (quant/ref.c).
 * Built with the folder's flags (quant/avx2/kernels.h); shared steps are in simd.h.
 *
 * Q5_1 (24 B): | d:2 | m:2 | qh:4 | qs[16] |  nibbles and qh as Q5_0,  x = d*q + m
 *
 * min, max, d, id and m as Q4_1 (quant/avx2/q4_1.c), with d = (max - min)/31;
 * u = (uint8_t)trunc((x - min)*id + 0.5), no clamp (ggml has none for Q5_1).
 * Blocks holding a NaN go to the reference, whose search skips NaN. */
#include <immintrin.h>
#include <stdint.h>

#include "libconvert/bytes.h"
#include "quant/avx2/kernels.h"
#include "quant/avx2/simd.h"
#include "quant/blocks.h"
#include "quant/quant.h"
#include "quant/quant_impl.h"

void lc_q5_1_quantize_avx2(const float *restrict x, void *restrict vy, size_t n) {
    lc_block_q5_1 *y = vy;
    const __m256i nib = _mm256_set1_epi32(0x0f);
    for (size_t b = 0; b < n / LC_QK5_1; b++, x += LC_QK5_1) {
        __m256 v[4];
        for (int k = 0; k < 4; k++)
            v[k] = _mm256_loadu_ps(x + 8 * k);
        if (lc_avx2_any_nan32(v[0], v[1], v[2], v[3])) {
            lc_q5_1_quantize_ref(x, &y[b], LC_QK5_1);
            continue;
        }
        float min, max;
        lc_avx2_min_max32(v[0], v[1], v[2], v[3], x, &min, &max);
        const float d = (max - min) / 31.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[b].d = lc_avx2_scale_f16(d);
        y[b].m = lc_avx2_scale_f16(min);
        const __m256 vmin = _mm256_set1_ps(min), vid = _mm256_set1_ps(id);
        __m256i q[4];                            /* the low byte of each lane is u */
        for (int k = 0; k < 4; k++)
            q[k] = _mm256_cvttps_epi32(_mm256_add_ps(
                _mm256_mul_ps(_mm256_sub_ps(v[k], vmin), vid), _mm256_set1_ps(0.5f)));
        lc_store_le32(y[b].qh, lc_avx2_bit4_mask32(q[0], q[1], q[2], q[3]));
        lc_avx2_store_nibbles(y[b].qs, _mm256_and_si256(q[0], nib), _mm256_and_si256(q[1], nib),
                              _mm256_and_si256(q[2], nib), _mm256_and_si256(q[3], nib));
    }
}

void lc_q5_1_dequantize_avx2(const void *restrict vx, float *restrict y, size_t n) {
    const lc_block_q5_1 *x = vx;
    for (size_t b = 0; b < n / LC_QK5_1; b++, y += LC_QK5_1) {
        const __m256 d = _mm256_set1_ps(lc_q_f16_to_f32(x[b].d));
        const __m256 m = _mm256_set1_ps(lc_q_f16_to_f32(x[b].m));
        const uint32_t qh = lc_load_le32(x[b].qh);
        __m256i q[4];
        lc_avx2_load_nibbles(x[b].qs, q);
        for (int k = 0; k < 4; k++) {
            const __m256i v = _mm256_or_si256(q[k], lc_avx2_qh_bit4(qh, k));
            _mm256_storeu_ps(y + 8 * k, _mm256_add_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(v), d), m));
        }
    }
}
