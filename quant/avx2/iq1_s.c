/* quant/avx2/iq1_s.c: IQ1_S dequantize with AVX2, bit-identical to the reference
 * (quant/ref_iq.c): dl = d * (2*ls + 1) and delta per 32 values as in ref, then
 * x = dl * ((float)grid + delta), the add first, as in ref. */
#include <immintrin.h>

#include "libconvert/bytes.h"
#include "quant/avx2/dq.h"
#include "quant/avx2/kernels.h"
#include "quant/blocks.h"
#include "quant/iq_tables.h"
#include "quant/quant_impl.h"

void lc_iq1_s_dequantize_avx2(const void *restrict vx, float *restrict y, size_t n) {
    const lc_block_iq1_s *x = vx;
    for (size_t b = 0; b < n / LC_QK_K; b++) {
        const float d = lc_q_f16_to_f32(x[b].d);
        const uint8_t *qs = x[b].qs;
        for (int ib = 0; ib < LC_QK_K / 32; ib++, qs += 4) {
            const unsigned qh = lc_load_le16(x[b].qh + 2 * ib);
            const __m256 dl = _mm256_set1_ps(d * (2 * ((qh >> 12) & 7) + 1));
            /* +-LC_IQ1S_DELTA by its sign bit, without a branch (the bits are random) */
            const __m256 sign = _mm256_castsi256_ps(_mm256_set1_epi32((int)((qh & 0x8000u) << 16)));
            const __m256 delta = _mm256_xor_ps(_mm256_set1_ps(LC_IQ1S_DELTA), sign);
            for (int l = 0; l < 4; l++, y += 8) {
                const __m256 g = lc_avx2_i8x8_ps(lc_iq1s_grid[qs[l] | ((qh >> 3 * l) & 7) << 8]);
                _mm256_storeu_ps(y, _mm256_mul_ps(dl, _mm256_add_ps(g, delta)));
            }
        }
    }
}
