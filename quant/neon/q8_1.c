/* quant/neon/q8_1.c: Q8_1 dequantize with NEON, bit-identical to the reference
 * (quant/ref_dq.c): x = (float)q * d, as Q8_0 (the sum s is not read). */
#include <arm_neon.h>

#include "quant/blocks.h"
#include "quant/neon/dq.h"
#include "quant/neon/kernels.h"
#include "quant/quant_impl.h"

void lc_q8_1_dequantize_neon(const void *restrict vx, float *restrict y, size_t n) {
    const lc_block_q8_1 *x = vx;
    for (size_t b = 0; b < n / LC_QK8_1; b++, y += LC_QK8_1) {
        const float32x4_t d = vdupq_n_f32(lc_q_f16_to_f32(x[b].d));
        lc_neon_store16_i8(y, d, vld1q_s8(x[b].qs));
        lc_neon_store16_i8(y + 16, d, vld1q_s8(x[b].qs + 16));
    }
}
