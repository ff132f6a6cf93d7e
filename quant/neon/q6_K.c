/* quant/neon/q6_K.c: Q6_K with NEON, byte-identical to the scalar reference
 * (quant/ref_k.c).
 * Quantize: the lane kernel of quant/lanes.h over this folder's 16-lane vocabulary
 * (quant/neon/lanes.h), one super-block per group, one sub-block per lane.
 * Dequantize: x = (d*sc)*q, two multiplies in the reference's order. */
#include <arm_neon.h>

#include "quant/neon/kernels.h"
#include "quant/neon/lanes.h"
#include "quant/lanes.h"

void lc_q6_K_quantize_neon(const float *restrict x, void *restrict y, size_t n) {
    lanes_q6_K_quantize(x, y, n);
}

/* y[0..15] = ds*q for the 16 signed levels q. */
static inline void q6_K_store16(float *y, int8x16_t q, float ds) {
    const float32x4_t d = vdupq_n_f32(ds);
    const int16x8_t lo = vmovl_s8(vget_low_s8(q)), hi = vmovl_s8(vget_high_s8(q));
    const int16x4_t part[4] = { vget_low_s16(lo), vget_high_s16(lo), vget_low_s16(hi),
                                vget_high_s16(hi) };
    for (int k = 0; k < 4; k++)
        vst1q_f32(y + 4 * k, vmulq_f32(d, vcvtq_f32_s32(vmovl_s16(part[k]))));
}

void lc_q6_K_dequantize_neon(const void *restrict vx, float *restrict y, size_t n) {
    const lc_block_q6_K *x = vx;
    const uint8x16_t m4 = vdupq_n_u8(0x0f), m2 = vdupq_n_u8(0x03);
    const int8x16_t off = vdupq_n_s8(32);
    for (size_t b = 0; b < n / LC_QK_K; b++) {
        const float d = lc_q_f16_to_f32(x[b].d);
        const uint8_t *ql = x[b].ql, *qh = x[b].qh;
        const int8_t *sc = x[b].scales;
        for (int j = 0; j < LC_QK_K; j += 128, y += 128, ql += 64, qh += 32, sc += 8) {
            for (int h = 0; h < 2; h++) {          /* l = 16h .. 16h+15, scale index h */
                const uint8x16_t a = vld1q_u8(ql + 16 * h), c = vld1q_u8(ql + 32 + 16 * h);
                const uint8x16_t hb = vld1q_u8(qh + 16 * h);
                const uint8x16_t q[4] = {
                    vorrq_u8(vandq_u8(a, m4), vshlq_n_u8(vandq_u8(hb, m2), 4)),
                    vorrq_u8(vandq_u8(c, m4), vshlq_n_u8(vandq_u8(vshrq_n_u8(hb, 2), m2), 4)),
                    vorrq_u8(vshrq_n_u8(a, 4), vshlq_n_u8(vandq_u8(vshrq_n_u8(hb, 4), m2), 4)),
                    vorrq_u8(vshrq_n_u8(c, 4), vshlq_n_u8(vshrq_n_u8(hb, 6), 4)),
                };
                for (int k = 0; k < 4; k++)
                    q6_K_store16(y + 32 * k + 16 * h, vsubq_s8(vreinterpretq_s8_u8(q[k]), off),
                                 d * (float)sc[2 * k + h]);
            }
        }
    }
}
