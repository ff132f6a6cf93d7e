/* quant/avx2/q8_1.c: Q8_1 dequantize with AVX2, bit-identical to the reference
 * (quant/ref_dq.c): x = (float)q * d, as Q8_0 (the sum s is not read). */
#include <immintrin.h>

#include "quant/avx2/dq.h"
#include "quant/avx2/kernels.h"
#include "quant/blocks.h"
#include "quant/quant_impl.h"

void lc_q8_1_dequantize_avx2(const void *restrict vx, float *restrict y, size_t n) {
    const lc_block_q8_1 *x = vx;
    for (size_t b = 0; b < n / LC_QK8_1; b++, y += LC_QK8_1) {
        const __m256 d = _mm256_set1_ps(lc_q_f16_to_f32(x[b].d));
        for (int k = 0; k < 4; k++)
            _mm256_storeu_ps(y + 8 * k, _mm256_mul_ps(lc_avx2_i8x8_ps(x[b].qs + 8 * k), d));
    }
}
