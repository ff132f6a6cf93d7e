/* quant/neon/q8_K.c: Q8_K dequantize with NEON, bit-identical to the reference
 * (quant/ref_dq.c): x = d * (float)q with d the block's binary32 scale. */
#include <arm_neon.h>

#include "quant/blocks.h"
#include "quant/neon/dq.h"
#include "quant/neon/kernels.h"
#include "quant/quant_impl.h"

void lc_q8_K_dequantize_neon(const void *restrict vx, float *restrict y, size_t n) {
    const lc_block_q8_K *x = vx;
    for (size_t b = 0; b < n / LC_QK_K; b++, y += LC_QK_K) {
        const float32x4_t d = vdupq_n_f32(lc_q8_K_d(&x[b]));
        for (int k = 0; k < LC_QK_K / 16; k++)
            lc_neon_store16_i8(y + 16 * k, d, vld1q_s8(x[b].qs + 16 * k));
    }
}
