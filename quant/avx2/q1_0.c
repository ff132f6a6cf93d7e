/* quant/avx2/q1_0.c: Q1_0 dequantize with AVX2, bit-identical to the reference
 * (quant/ref_dq.c): bit j of the block picks +d or -d (the reference's neg_d, a sign
 * flip: a NaN d keeps its payload either way). */
#include <immintrin.h>

#include "quant/avx2/kernels.h"
#include "quant/blocks.h"
#include "quant/quant_impl.h"

void lc_q1_0_dequantize_avx2(const void *restrict vx, float *restrict y, size_t n) {
    const lc_block_q1_0 *x = vx;
    const __m256i bit = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
    for (size_t b = 0; b < n / LC_QK1_0; b++, y += LC_QK1_0) {
        const float d = lc_q_f16_to_f32(x[b].d);
        const float neg_d = -d;
        const __m256 pos = _mm256_set1_ps(d), neg = _mm256_set1_ps(neg_d);
        for (int k = 0; k < LC_QK1_0 / 8; k++) {
            const __m256i set = _mm256_cmpeq_epi32(
                _mm256_and_si256(_mm256_set1_epi32(x[b].qs[k]), bit), bit);
            _mm256_storeu_ps(y + 8 * k, _mm256_blendv_ps(neg, pos, _mm256_castsi256_ps(set)));
        }
    }
}
