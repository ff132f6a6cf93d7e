/* quant/avx2/q8_K.c: Q8_K dequantize with AVX2, bit-identical to the reference
 * (quant/ref_dq.c): x = d * (float)q with d the block's binary32 scale. */
#include <immintrin.h>

#include "quant/avx2/dq.h"
#include "quant/avx2/kernels.h"
#include "quant/blocks.h"
#include "quant/quant_impl.h"

void lc_q8_K_dequantize_avx2(const void *restrict vx, float *restrict y, size_t n) {
    const lc_block_q8_K *x = vx;
    for (size_t b = 0; b < n / LC_QK_K; b++, y += LC_QK_K) {
        const __m256 d = _mm256_set1_ps(lc_q8_K_d(&x[b]));
        for (int k = 0; k < LC_QK_K / 16; k++)
            lc_avx2_store16_i8(y + 16 * k, d,
                               _mm_loadu_si128((const __m128i *)(const void *)(x[b].qs + 16 * k)));
    }
}
