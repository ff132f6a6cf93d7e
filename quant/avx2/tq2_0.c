/* quant/avx2/tq2_0.c: TQ2_0 dequantize with AVX2, bit-identical to the reference
 * (quant/ref_dq.c): per 32 bytes and shift l, x = (float)(((q >> 2l) & 3) - 1) * d. */
#include <immintrin.h>

#include "quant/avx2/kernels.h"
#include "quant/blocks.h"
#include "quant/quant_impl.h"

void lc_tq2_0_dequantize_avx2(const void *restrict vx, float *restrict y, size_t n) {
    const lc_block_tq2_0 *x = vx;
    const __m256i three = _mm256_set1_epi8(3), one = _mm256_set1_epi8(1);
    for (size_t b = 0; b < n / LC_QK_K; b++) {
        const __m256 d = _mm256_set1_ps(lc_q_f16_to_f32(x[b].d));
        for (size_t j = 0; j < sizeof x->qs; j += 32) {
            const __m256i q = _mm256_loadu_si256((const __m256i *)(const void *)(x[b].qs + j));
            for (int l = 0; l < 4; l++, y += 32) {
                const __m256i v = _mm256_sub_epi8(
                    _mm256_and_si256(_mm256_srli_epi16(q, 2 * l), three), one);   /* -1..2 */
                const __m128i h[2] = { _mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1) };
                for (int k = 0; k < 4; k++) {
                    const __m128i s = k & 1 ? _mm_srli_si128(h[k / 2], 8) : h[k / 2];
                    const __m256 f = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(s));
                    _mm256_storeu_ps(y + 8 * k, _mm256_mul_ps(f, d));
                }
            }
        }
    }
}
