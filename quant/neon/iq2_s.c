/* quant/neon/iq2_s.c: IQ2_S dequantize with NEON, bit-identical to the reference
 * (quant/ref_iq.c): two scales per 32 values computed as in ref, then for each 8-value
 * grid entry x = with_sign(db * grid), the stored sign byte applied as a XOR. */
#include <arm_neon.h>

#include "quant/blocks.h"
#include "quant/iq_tables.h"
#include "quant/neon/dq.h"
#include "quant/neon/kernels.h"
#include "quant/quant_impl.h"

void lc_iq2_s_dequantize_neon(const void *restrict vx, float *restrict y, size_t n) {
    const lc_block_iq2_s *x = vx;
    for (size_t b = 0; b < n / LC_QK_K; b++) {
        const float d = lc_q_f16_to_f32(x[b].d);
        const uint8_t *qs = x[b].qs, *signs = x[b].qs + LC_QK_K / 8;
        for (int ib = 0; ib < LC_QK_K / 32; ib++, qs += 4, signs += 4) {
            const float32x4_t db[2] = { vdupq_n_f32(d * (0.5f + (x[b].scales[ib] & 0xf)) * 0.25f),
                                        vdupq_n_f32(d * (0.5f + (x[b].scales[ib] >> 4)) * 0.25f) };
            for (int l = 0; l < 4; l++, y += 8) {
                const unsigned idx = qs[l] | ((unsigned)x[b].qh[ib] << (8 - 2 * l) & 0x300);
                float32x4_t g[2];
                lc_neon_u8x8_f32(vld1_u8(lc_iq2s_grid[idx]), g);
                lc_neon_store8_signed(y, db[l / 2], g, signs[l]);
            }
        }
    }
}
