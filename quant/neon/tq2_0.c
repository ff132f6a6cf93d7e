/* quant/neon/tq2_0.c: TQ2_0 dequantize with NEON, bit-identical to the reference
 * (quant/ref_dq.c): per 32 bytes and shift l, x = (float)(((q >> 2l) & 3) - 1) * d. */
#include <arm_neon.h>

#include "quant/blocks.h"
#include "quant/neon/dq.h"
#include "quant/neon/kernels.h"
#include "quant/quant_impl.h"

void lc_tq2_0_dequantize_neon(const void *restrict vx, float *restrict y, size_t n) {
    const lc_block_tq2_0 *x = vx;
    for (size_t b = 0; b < n / LC_QK_K; b++) {
        const float32x4_t d = vdupq_n_f32(lc_q_f16_to_f32(x[b].d));
        for (size_t j = 0; j < sizeof x->qs; j += 32) {
            const uint8x16_t q[2] = { vld1q_u8(x[b].qs + j), vld1q_u8(x[b].qs + j + 16) };
            for (int l = 0; l < 4; l++, y += 32) {
                const int8x16_t shift = vdupq_n_s8((int8_t)(-2 * l));   /* right by 2l */
                for (int h = 0; h < 2; h++) {
                    const uint8x16_t v = vandq_u8(vshlq_u8(q[h], shift), vdupq_n_u8(3));
                    const int8x16_t s = vsubq_s8(vreinterpretq_s8_u8(v), vdupq_n_s8(1));
                    lc_neon_store16_i8(y + 16 * h, d, s);       /* d * (float)(q - 1) */
                }
            }
        }
    }
}
