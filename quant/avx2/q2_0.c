/* quant/avx2/q2_0.c: Q2_0 dequantize with AVX2, bit-identical to the reference
 * (quant/ref_dq.c): x = (float)(q - 1) * d, eight 2-bit q from each pair of bytes. */
#include <immintrin.h>

#include "libconvert/bytes.h"
#include "quant/avx2/kernels.h"
#include "quant/blocks.h"
#include "quant/quant_impl.h"

void lc_q2_0_dequantize_avx2(const void *restrict vx, float *restrict y, size_t n) {
    const lc_block_q2_0 *x = vx;
    const __m256i shift = _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14);
    const __m256i three = _mm256_set1_epi32(3), one = _mm256_set1_epi32(1);
    for (size_t b = 0; b < n / LC_QK2_0; b++, y += LC_QK2_0) {
        const __m256 d = _mm256_set1_ps(lc_q_f16_to_f32(x[b].d));
        for (int k = 0; k < LC_QK2_0 / 8; k++) {
            const __m256i w = _mm256_set1_epi32((int)lc_load_le16(x[b].qs + 2 * k));
            const __m256i q =
                _mm256_sub_epi32(_mm256_and_si256(_mm256_srlv_epi32(w, shift), three), one);
            _mm256_storeu_ps(y + 8 * k, _mm256_mul_ps(_mm256_cvtepi32_ps(q), d));
        }
    }
}
