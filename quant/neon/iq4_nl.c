/* quant/neon/iq4_nl.c: IQ4_NL dequantize with NEON, bit-identical to the reference
 * (quant/ref_iq.c): x = d * kvalues[q], the 16 levels looked up with TBL. */
#include <arm_neon.h>

#include "quant/blocks.h"
#include "quant/iq_tables.h"
#include "quant/neon/dq.h"
#include "quant/neon/kernels.h"
#include "quant/quant_impl.h"

void lc_iq4_nl_dequantize_neon(const void *restrict vx, float *restrict y, size_t n) {
    const lc_block_iq4_nl *x = vx;
    const int8x16_t lut = vld1q_s8(lc_kvalues_iq4nl);
    for (size_t b = 0; b < n / LC_QK4_NL; b++, y += LC_QK4_NL)
        lc_neon_store32_lut(y, vdupq_n_f32(lc_q_f16_to_f32(x[b].d)), lut, x[b].qs);
}
