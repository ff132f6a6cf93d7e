/* quant/avx2/iq2_xs.c: IQ2_XS dequantize with AVX2, bit-identical to the reference
 * (quant/ref_iq.c): two scales per 32 values computed as in ref, then for each 8-value
 * grid entry x = with_sign(db * grid), the sign a XOR of the ksigns bits. */
#include <immintrin.h>

#include "libconvert/bytes.h"
#include "quant/avx2/dq.h"
#include "quant/avx2/kernels.h"
#include "quant/blocks.h"
#include "quant/iq_tables.h"
#include "quant/quant_impl.h"

void lc_iq2_xs_dequantize_avx2(const void *restrict vx, float *restrict y, size_t n) {
    const lc_block_iq2_xs *x = vx;
    for (size_t b = 0; b < n / LC_QK_K; b++) {
        const float d = lc_q_f16_to_f32(x[b].d);
        for (int ib = 0; ib < LC_QK_K / 32; ib++) {
            const __m256 db[2] = { _mm256_set1_ps(d * (0.5f + (x[b].scales[ib] & 0xf)) * 0.25f),
                                   _mm256_set1_ps(d * (0.5f + (x[b].scales[ib] >> 4)) * 0.25f) };
            for (int l = 0; l < 4; l++, y += 8) {
                const unsigned v = lc_load_le16(x[b].qs + 2 * (4 * ib + l));
                const __m256 g = lc_avx2_u8x8_ps(lc_iq2xs_grid[v & 511]);
                const __m256 s = lc_avx2_signs8(lc_ksigns_iq2xs[v >> 9]);
                _mm256_storeu_ps(y, _mm256_xor_ps(_mm256_mul_ps(db[l / 2], g), s));
            }
        }
    }
}
