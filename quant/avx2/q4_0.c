/* quant/avx2/q4_0.c: Q4_0 with AVX2, byte-identical to the scalar reference (quant/ref.c).
 * Built with the folder's flags (quant/avx2/kernels.h); the steps it shares with the other
 * kernels (NaN test, signed extreme, truncation, nibble packing) are in simd.h, argued there
 * and in q8_0.c.
 *
 * Q4_0 (18 B): | d:2 | qs[16] |  byte j = q[j] | q[j+16] << 4,  x = d*(q-8)
 *
 * d = v/-8 where v is the signed value of the FIRST element of largest magnitude, +0 for
 * an all-zero block (lc_avx2_signed_extreme32).
 * q = min(15, (int8_t)trunc(x*id + 8.5)), a separate multiply and add as in ref.
 * Blocks holding a NaN go to the reference, whose search skips NaN. */
#include <immintrin.h>
#include <stdint.h>

#include "quant/avx2/kernels.h"
#include "quant/avx2/simd.h"
#include "quant/blocks.h"
#include "quant/quant.h"
#include "quant/quant_impl.h"

/* min(15, (int8_t)trunc(x*id + 8.5)) on 8 lanes. */
static inline __m256i q4_0_q(__m256 v, __m256 vid) {
    const __m256 t = _mm256_add_ps(_mm256_mul_ps(v, vid), _mm256_set1_ps(8.5f));
    return _mm256_min_epi32(lc_avx2_trunc_i8(t), _mm256_set1_epi32(15));
}

void lc_q4_0_quantize_avx2(const float *restrict x, void *restrict vy, size_t n) {
    lc_block_q4_0 *y = vy;
    for (size_t b = 0; b < n / LC_QK4_0; b++, x += LC_QK4_0) {
        __m256 v[4];
        for (int k = 0; k < 4; k++)
            v[k] = _mm256_loadu_ps(x + 8 * k);
        if (lc_avx2_any_nan32(v[0], v[1], v[2], v[3])) {
            lc_q4_0_quantize_ref(x, &y[b], LC_QK4_0);
            continue;
        }
        const float d = lc_avx2_signed_extreme32(v[0], v[1], v[2], v[3], x) / -8.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[b].d = lc_avx2_scale_f16(d);
        const __m256 vid = _mm256_set1_ps(id);
        lc_avx2_store_nibbles(y[b].qs, q4_0_q(v[0], vid), q4_0_q(v[1], vid), q4_0_q(v[2], vid),
                              q4_0_q(v[3], vid));
    }
}

void lc_q4_0_dequantize_avx2(const void *restrict vx, float *restrict y, size_t n) {
    const lc_block_q4_0 *x = vx;
    const __m256i eight = _mm256_set1_epi32(8);
    for (size_t b = 0; b < n / LC_QK4_0; b++, y += LC_QK4_0) {
        const __m256 d = _mm256_set1_ps(lc_q_f16_to_f32(x[b].d));
        __m256i q[4];
        lc_avx2_load_nibbles(x[b].qs, q);
        for (int k = 0; k < 4; k++)
            _mm256_storeu_ps(y + 8 * k,
                             _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(q[k], eight)), d));
    }
}
