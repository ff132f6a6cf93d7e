/* quant/avx2/iq3_xxs.c: IQ3_XXS dequantize with AVX2, bit-identical to the reference
 * (quant/ref_iq.c): db = d * (0.5 + ls) * 0.5 per 32 values as in ref, then for each
 * pair of 4-value grid entries x = with_sign(db * grid), the sign a XOR of the ksigns
 * bits. */
#include <immintrin.h>

#include "libconvert/bytes.h"
#include "quant/avx2/dq.h"
#include "quant/avx2/kernels.h"
#include "quant/blocks.h"
#include "quant/iq_tables.h"
#include "quant/quant_impl.h"

void lc_iq3_xxs_dequantize_avx2(const void *restrict vx, float *restrict y, size_t n) {
    const lc_block_iq3_xxs *x = vx;
    for (size_t b = 0; b < n / LC_QK_K; b++) {
        const float d = lc_q_f16_to_f32(x[b].d);
        const uint8_t *qs = x[b].qs, *scales_and_signs = x[b].qs + LC_QK_K / 4;
        for (int ib = 0; ib < LC_QK_K / 32; ib++, qs += 8) {
            const uint32_t w = lc_load_le32(scales_and_signs + 4 * ib);
            const __m256 db = _mm256_set1_ps(d * (0.5f + (w >> 28)) * 0.5f);
            for (int l = 0; l < 4; l++, y += 8) {
                const __m256 g = lc_avx2_u8x4x2_ps(lc_iq3xxs_grid[qs[2 * l]],
                                                   lc_iq3xxs_grid[qs[2 * l + 1]]);
                const __m256 s = lc_avx2_signs8(lc_ksigns_iq2xs[(w >> 7 * l) & 127]);
                _mm256_storeu_ps(y, _mm256_xor_ps(_mm256_mul_ps(db, g), s));
            }
        }
    }
}
