/* quant/neon/q4_K.c: Q4_K with NEON, byte-identical to the scalar reference
 * (quant/ref_k.c).
 * Quantize: the lane kernel of quant/lanes.h over this folder's 16-lane vocabulary
 * (quant/neon/lanes.h), two super-blocks per group, one sub-block per lane.
 * Dequantize: x = d1*q - m1 per sub-block, a multiply then a subtract, as in ref. */
#include <arm_neon.h>

#include "quant/neon/kernels.h"
#include "quant/neon/lanes.h"
#include "quant/lanes.h"

void lc_q4_K_quantize_neon(const float *restrict x, void *restrict y, size_t n) {
    lanes_q4_K_quantize(x, y, n);
}

/* y[0..15] = d*q - m for the 16 bytes of q, as floats. */
static inline void q4_K_store16(float *y, uint8x16_t q, float32x4_t d, float32x4_t m) {
    const uint16x8_t lo = vmovl_u8(vget_low_u8(q)), hi = vmovl_u8(vget_high_u8(q));
    const uint16x4_t part[4] = { vget_low_u16(lo), vget_high_u16(lo), vget_low_u16(hi),
                                 vget_high_u16(hi) };
    for (int k = 0; k < 4; k++)
        vst1q_f32(y + 4 * k, vsubq_f32(vmulq_f32(d, vcvtq_f32_u32(vmovl_u16(part[k]))), m));
}

void lc_q4_K_dequantize_neon(const void *restrict vx, float *restrict y, size_t n) {
    const lc_block_q4_K *x = vx;
    for (size_t b = 0; b < n / LC_QK_K; b++) {
        const float d = lc_q_f16_to_f32(x[b].d), dmin = lc_q_f16_to_f32(x[b].dmin);
        const uint8_t *q = x[b].qs;
        for (int s = 0; s < 8; s += 2, q += 32, y += 64) {
            uint8_t sc, mn;
            lanes_scale_min_k4(s, x[b].scales, &sc, &mn);
            const float32x4_t d1 = vdupq_n_f32(d * sc), m1 = vdupq_n_f32(dmin * mn);
            lanes_scale_min_k4(s + 1, x[b].scales, &sc, &mn);
            const float32x4_t d2 = vdupq_n_f32(d * sc), m2 = vdupq_n_f32(dmin * mn);
            for (int h = 0; h < 2; h++) {
                const uint8x16_t v = vld1q_u8(q + 16 * h);
                q4_K_store16(y + 16 * h, vandq_u8(v, vdupq_n_u8(0x0f)), d1, m1);
                q4_K_store16(y + 32 + 16 * h, vshrq_n_u8(v, 4), d2, m2);
            }
        }
    }
}
