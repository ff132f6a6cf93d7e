/* quant/neon/iq2_xxs.c: IQ2_XXS dequantize with NEON, bit-identical to the reference
 * (quant/ref_iq.c): db = d * (0.5 + ls) * 0.25 per 32 values as in ref, then for each
 * 8-value grid entry x = with_sign(db * grid), the sign a XOR of the ksigns bits. */
#include <arm_neon.h>

#include "libconvert/bytes.h"
#include "quant/blocks.h"
#include "quant/iq_tables.h"
#include "quant/neon/dq.h"
#include "quant/neon/kernels.h"
#include "quant/quant_impl.h"

void lc_iq2_xxs_dequantize_neon(const void *restrict vx, float *restrict y, size_t n) {
    const lc_block_iq2_xxs *x = vx;
    for (size_t b = 0; b < n / LC_QK_K; b++) {
        const float d = lc_q_f16_to_f32(x[b].d);
        for (int ib = 0; ib < LC_QK_K / 32; ib++) {
            const uint8_t *q = x[b].qs + 8 * ib;
            const uint32_t w = lc_load_le32(q + 4);
            const float32x4_t db = vdupq_n_f32(d * (0.5f + (w >> 28)) * 0.25f);
            for (int l = 0; l < 4; l++, y += 8) {
                float32x4_t g[2];
                lc_neon_u8x8_f32(vld1_u8(lc_iq2xxs_grid[q[l]]), g);
                lc_neon_store8_signed(y, db, g, lc_ksigns_iq2xs[(w >> 7 * l) & 127]);
            }
        }
    }
}
