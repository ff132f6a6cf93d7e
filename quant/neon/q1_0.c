/* quant/neon/q1_0.c: Q1_0 dequantize with NEON, bit-identical to the reference
 * (quant/ref_dq.c): bit j of the block picks +d or -d (the reference's neg_d, a sign
 * flip: a NaN d keeps its payload either way). */
#include <arm_neon.h>

#include "quant/blocks.h"
#include "quant/neon/kernels.h"
#include "quant/quant_impl.h"

void lc_q1_0_dequantize_neon(const void *restrict vx, float *restrict y, size_t n) {
    const lc_block_q1_0 *x = vx;
    static const uint32_t bits[8] = { 1, 2, 4, 8, 16, 32, 64, 128 };
    const uint32x4_t bit[2] = { vld1q_u32(bits), vld1q_u32(bits + 4) };
    for (size_t b = 0; b < n / LC_QK1_0; b++, y += LC_QK1_0) {
        const float d = lc_q_f16_to_f32(x[b].d);
        const float neg_d = -d;
        const float32x4_t pos = vdupq_n_f32(d), neg = vdupq_n_f32(neg_d);
        for (int k = 0; k < LC_QK1_0 / 8; k++) {
            const uint32x4_t v = vdupq_n_u32(x[b].qs[k]);
            vst1q_f32(y + 8 * k, vbslq_f32(vtstq_u32(v, bit[0]), pos, neg));
            vst1q_f32(y + 8 * k + 4, vbslq_f32(vtstq_u32(v, bit[1]), pos, neg));
        }
    }
}
