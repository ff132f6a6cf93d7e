/* quant/neon/q3_K.c: Q3_K with NEON, byte-identical to the scalar reference
 * (quant/ref_k.c).
 * Quantize: the lane kernel of quant/lanes.h (lanes_q3_K_group) over this folder's
 * 16-lane vocabulary. Dequantize: x = dl*(q - 4 + 4*h) per sub-block of 16. */
#include <arm_neon.h>

#include "quant/neon/kernels.h"
#include "quant/neon/lanes.h"
#include "quant/lanes.h"

void lc_q3_K_quantize_neon(const float *restrict x, void *restrict y, size_t n) {
    lanes_q3_K_quantize(x, y, n);
}

/* y[0..15] = dl*q for the 16 signed levels in q. */
static inline void q3_K_store16(float *y, int8x16_t q, float dl) {
    const float32x4_t d = vdupq_n_f32(dl);
    const int16x8_t lo = vmovl_s8(vget_low_s8(q)), hi = vmovl_s8(vget_high_s8(q));
    const int16x4_t part[4] = { vget_low_s16(lo), vget_high_s16(lo), vget_low_s16(hi),
                                vget_high_s16(hi) };
    for (int k = 0; k < 4; k++)
        vst1q_f32(y + 4 * k, vmulq_f32(d, vcvtq_f32_s32(vmovl_s16(part[k]))));
}

void lc_q3_K_dequantize_neon(const void *restrict vx, float *restrict y, size_t n) {
    const lc_block_q3_K *x = vx;
    for (size_t b = 0; b < n / LC_QK_K; b++) {
        const float d_all = lc_q_f16_to_f32(x[b].d);
        const uint8_t *q = x[b].qs;
        int s = 0;
        unsigned m = 1;
        for (int j = 0; j < LC_QK_K; j += 128, q += 32) {
            for (int shift = 0; shift < 8; shift += 2, m <<= 1, y += 32) {
                const int8x16_t sh = vdupq_n_s8((int8_t)-shift);   /* right shift */
                for (int h = 0; h < 2; h++) {
                    const uint8x16_t lo = vandq_u8(vshlq_u8(vld1q_u8(q + 16 * h), sh), vdupq_n_u8(3));
                    const uint8x16_t set = vtstq_u8(vld1q_u8(x[b].hmask + 16 * h), vdupq_n_u8((uint8_t)m));
                    const int8x16_t v = vreinterpretq_s8_u8(vsubq_u8(lo, vbicq_u8(vdupq_n_u8(4), set)));
                    q3_K_store16(y + 16 * h, v, d_all * (float)(lanes_scale_k3(s + h, x[b].scales) - 32));
                }
                s += 2;
            }
        }
    }
}
