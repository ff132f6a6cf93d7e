/* quant/neon/iq2_xs.c: IQ2_XS dequantize with NEON, bit-identical to the reference
 * (quant/ref_iq.c): two scales per 32 values computed as in ref, then for each 8-value
 * grid entry x = with_sign(db * grid), the sign a XOR of the ksigns bits. */
#include <arm_neon.h>

#include "libconvert/bytes.h"
#include "quant/blocks.h"
#include "quant/iq_tables.h"
#include "quant/neon/dq.h"
#include "quant/neon/kernels.h"
#include "quant/quant_impl.h"

void lc_iq2_xs_dequantize_neon(const void *restrict vx, float *restrict y, size_t n) {
    const lc_block_iq2_xs *x = vx;
    for (size_t b = 0; b < n / LC_QK_K; b++) {
        const float d = lc_q_f16_to_f32(x[b].d);
        for (int ib = 0; ib < LC_QK_K / 32; ib++) {
            const float32x4_t db[2] = { vdupq_n_f32(d * (0.5f + (x[b].scales[ib] & 0xf)) * 0.25f),
                                        vdupq_n_f32(d * (0.5f + (x[b].scales[ib] >> 4)) * 0.25f) };
            for (int l = 0; l < 4; l++, y += 8) {
                const unsigned v = lc_load_le16(x[b].qs + 2 * (4 * ib + l));
                float32x4_t g[2];
                lc_neon_u8x8_f32(vld1_u8(lc_iq2xs_grid[v & 511]), g);
                lc_neon_store8_signed(y, db[l / 2], g, lc_ksigns_iq2xs[v >> 9]);
            }
        }
    }
}
