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
        for (int ib = 0; ib < LC_QK_K / 32; ib++, y += 32)
            lc_neon_store32_lut(y, vdupq_n_f32(lc_iq4_xs_dl(&x[b], d, ib)), lut,
                                x[b].qs + 16 * ib);
    }
}
