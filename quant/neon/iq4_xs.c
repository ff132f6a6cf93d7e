/* quant/neon/iq4_xs.c: IQ4_XS dequantize with NEON, bit-identical to the reference
 * (quant/ref_iq.c): per 32 values dl = d * (ls - 32) as in ref, then x = dl * kvalues[q],
 * the levels looked up with TBL. */
#include <arm_neon.h>

#include "libconvert/bytes.h"
#include "quant/blocks.h"
#include "quant/iq_tables.h"
#include "quant/neon/dq.h"
#include "quant/neon/kernels.h"
#include "quant/quant_impl.h"

void lc_iq4_xs_dequantize_neon(const void *restrict vx, float *restrict y, size_t n) {
    const lc_block_iq4_xs *x = vx;
    const int8x16_t lut = vld1q_s8(lc_kvalues_iq4nl);
    for (size_t b = 0; b < n / LC_QK_K; b++) {
        const float d = lc_q_f16_to_f32(x[b].d);
        const unsigned scales_h = lc_load_le16(x[b].scales_h);
        const uint8_t *qs = x[b].qs;
        for (int ib = 0; ib < LC_QK_K / 32; ib++, y += 32, qs += 16) {
            const int ls = (int)(((x[b].scales_l[ib / 2] >> 4 * (ib % 2)) & 0xf) |
                                 ((scales_h >> 2 * ib) & 3) << 4);
            const float32x4_t dl = vdupq_n_f32(d * (ls - 32));
            int8x16_t lo, hi;
            lc_neon_lut_nibbles(lut, vld1q_u8(qs), &lo, &hi);
            lc_neon_store16_i8(y, dl, lo);
            lc_neon_store16_i8(y + 16, dl, hi);
        }
    }
}
