/* quant/neon/mxfp4.c: MXFP4 dequantize with NEON, bit-identical to the reference
 * (quant/ref_dq.c): x = kvalues_fp4[q] * d with the shared E8M0 decode
 * (lc_q_e8m0_half), the levels looked up with TBL. */
#include <arm_neon.h>

#include "quant/blocks.h"
#include "quant/iq_tables.h"
#include "quant/neon/dq.h"
#include "quant/neon/kernels.h"
#include "quant/quant_impl.h"

void lc_mxfp4_dequantize_neon(const void *restrict vx, float *restrict y, size_t n) {
    const lc_block_mxfp4 *x = vx;
    const int8x16_t lut = vld1q_s8(lc_kvalues_fp4);
    for (size_t b = 0; b < n / LC_QK_MXFP4; b++, y += LC_QK_MXFP4)
        lc_neon_store32_lut(y, vdupq_n_f32(lc_q_e8m0_half(x[b].e)), lut, x[b].qs);
}
