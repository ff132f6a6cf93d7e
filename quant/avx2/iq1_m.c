/* quant/avx2/iq1_m.c: IQ1_M dequantize with AVX2, bit-identical to the reference
 * (quant/ref_iq.c): d rebuilt from the scales' top nibbles, dl and delta per 8 values as
 * in ref, then x = dl * ((float)grid + delta), the add first, as in ref. */
#include <immintrin.h>

#include "libconvert/bytes.h"
#include "quant/avx2/dq.h"
#include "quant/avx2/kernels.h"
#include "quant/blocks.h"
#include "quant/iq_tables.h"
#include "quant/quant_impl.h"

void lc_iq1_m_dequantize_avx2(const void *restrict vx, float *restrict y, size_t n) {
    const lc_block_iq1_m *x = vx;
    const __m256 pos_delta = _mm256_set1_ps(LC_IQ1S_DELTA);
    for (size_t b = 0; b < n / LC_QK_K; b++) {
        unsigned sc[4];
        for (int i = 0; i < 4; i++)
            sc[i] = lc_load_le16(x[b].scales + 2 * i);
        const uint16_t dbits = (uint16_t)((sc[0] >> 12) | ((sc[1] >> 8) & 0x00f0) |
                                          ((sc[2] >> 4) & 0x0f00) | (sc[3] & 0xf000));
        const float d = lc_q_f16_to_f32(dbits);
        const uint8_t *qs = x[b].qs, *qh = x[b].qh;
        for (int ib = 0; ib < LC_QK_K / 32; ib++, qs += 4, qh += 2) {
            const float dl1 = d * (2 * ((sc[ib / 2] >> (6 * (ib % 2) + 0)) & 0x7) + 1);
            const float dl2 = d * (2 * ((sc[ib / 2] >> (6 * (ib % 2) + 3)) & 0x7) + 1);
            const unsigned idx[4] = { qs[0] | ((qh[0] << 8) & 0x700u),
                                      qs[1] | ((qh[0] << 4) & 0x700u),
                                      qs[2] | ((qh[1] << 8) & 0x700u),
                                      qs[3] | ((qh[1] << 4) & 0x700u) };
            /* +-LC_IQ1S_DELTA by its sign bit, without a branch (the bits are random) */
            const uint32_t hbits[4] = { (qh[0] & 0x08u) << 28, (qh[0] & 0x80u) << 24,
                                        (qh[1] & 0x08u) << 28, (qh[1] & 0x80u) << 24 };
            for (int l = 0; l < 4; l++, y += 8) {
                const __m256 sign = _mm256_castsi256_ps(_mm256_set1_epi32((int)hbits[l]));
                const __m256 delta = _mm256_xor_ps(pos_delta, sign);
                const __m256 dl = _mm256_set1_ps(l < 2 ? dl1 : dl2);
                const __m256 g = lc_avx2_i8x8_ps(lc_iq1s_grid[idx[l]]);
                _mm256_storeu_ps(y, _mm256_mul_ps(dl, _mm256_add_ps(g, delta)));
            }
        }
    }
}
