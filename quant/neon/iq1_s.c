/* quant/neon/iq1_s.c: IQ1_S dequantize with NEON, bit-identical to the reference
 * (quant/ref_iq.c): dl = d * (2*ls + 1) and delta per 32 values as in ref, then
 * x = dl * ((float)grid + delta), the add first, as in ref. */
#include <arm_neon.h>

#include "libconvert/bytes.h"
#include "quant/blocks.h"
#include "quant/iq_tables.h"
#include "quant/neon/dq.h"
#include "quant/neon/kernels.h"
#include "quant/quant_impl.h"

void lc_iq1_s_dequantize_neon(const void *restrict vx, float *restrict y, size_t n) {
    const lc_block_iq1_s *x = vx;
    for (size_t b = 0; b < n / LC_QK_K; b++) {
        const float d = lc_q_f16_to_f32(x[b].d);
        const uint8_t *qs = x[b].qs;
        for (int ib = 0; ib < LC_QK_K / 32; ib++, qs += 4) {
            const unsigned qh = lc_load_le16(x[b].qh + 2 * ib);
            const float32x4_t dl = vdupq_n_f32(d * (2 * ((qh >> 12) & 7) + 1));
            /* +-LC_IQ1S_DELTA by its sign bit, without a branch (the bits are random) */
            const uint32x4_t pos = vreinterpretq_u32_f32(vdupq_n_f32(LC_IQ1S_DELTA));
            const float32x4_t delta =
                vreinterpretq_f32_u32(veorq_u32(pos, vdupq_n_u32((qh & 0x8000u) << 16)));
            for (int l = 0; l < 4; l++, y += 8) {
                float32x4_t g[2];
                lc_neon_i8x8_f32(vld1_s8(lc_iq1s_grid[qs[l] | ((qh >> 3 * l) & 7) << 8]), g);
                vst1q_f32(y, vmulq_f32(dl, vaddq_f32(g[0], delta)));
                vst1q_f32(y + 4, vmulq_f32(dl, vaddq_f32(g[1], delta)));
            }
        }
    }
}
