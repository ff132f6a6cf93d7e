/* quant/neon/q5_K.c: Q5_K with NEON, byte-identical to the scalar reference
 * (quant/ref_k.c).
 * Quantize: Q4_K's lane kernel with levels 0..31 (quant/lanes.h lanes_k4_group) over
 * this folder's 16-lane vocabulary. Dequantize: x = d1*(q + 16*h) - m1 per sub-block. */
#include <arm_neon.h>

#include "quant/neon/kernels.h"
#include "quant/neon/lanes.h"
#include "quant/lanes.h"

void lc_q5_K_quantize_neon(const float *restrict x, void *restrict y, size_t n) {
    lanes_q5_K_quantize(x, y, n);
}

/* y[0..15] = d*q - m for the 16 levels in the bytes of q. */
static inline void q5_K_store16(float *y, uint8x16_t q, float32x4_t d, float32x4_t m) {
    const uint16x8_t lo = vmovl_u8(vget_low_u8(q)), hi = vmovl_u8(vget_high_u8(q));
    const uint16x4_t part[4] = { vget_low_u16(lo), vget_high_u16(lo), vget_low_u16(hi),
                                 vget_high_u16(hi) };
    for (int k = 0; k < 4; k++)
        vst1q_f32(y + 4 * k, vsubq_f32(vmulq_f32(d, vcvtq_f32_u32(vmovl_u16(part[k]))), m));
}

void lc_q5_K_dequantize_neon(const void *restrict vx, float *restrict y, size_t n) {
    const lc_block_q5_K *x = vx;
    for (size_t b = 0; b < n / LC_QK_K; b++) {
        const float d = lc_q_f16_to_f32(x[b].d), dmin = lc_q_f16_to_f32(x[b].dmin);
        const uint8_t *ql = x[b].qs;
        for (int s = 0; s < 8; s += 2, ql += 32, y += 64) {
            uint8_t sc, mn;
            lanes_scale_min_k4(s, x[b].scales, &sc, &mn);
            const float32x4_t d1 = vdupq_n_f32(d * sc), m1 = vdupq_n_f32(dmin * mn);
            lanes_scale_min_k4(s + 1, x[b].scales, &sc, &mn);
            const float32x4_t d2 = vdupq_n_f32(d * sc), m2 = vdupq_n_f32(dmin * mn);
            for (int h = 0; h < 2; h++) {
                const uint8x16_t q = vld1q_u8(ql + 16 * h), qh = vld1q_u8(x[b].qh + 16 * h);
                /* Bit s of qh[l] is bit 4 of element 32s + l: 16 where set. */
                const uint8x16_t h1 = vandq_u8(vtstq_u8(qh, vdupq_n_u8((uint8_t)(1u << s))), vdupq_n_u8(16));
                const uint8x16_t h2 = vandq_u8(vtstq_u8(qh, vdupq_n_u8((uint8_t)(2u << s))), vdupq_n_u8(16));
                q5_K_store16(y + 16 * h, vorrq_u8(vandq_u8(q, vdupq_n_u8(0x0f)), h1), d1, m1);
                q5_K_store16(y + 32 + 16 * h, vorrq_u8(vshrq_n_u8(q, 4), h2), d2, m2);
            }
        }
    }
}
