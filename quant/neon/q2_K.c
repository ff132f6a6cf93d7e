/* quant/neon/q2_K.c: Q2_K with NEON, byte-identical to the scalar reference
 * (quant/ref_k.c).
 * Quantize: the lane kernel of quant/lanes.h (lanes_q2_K_group) over this folder's
 * 16-lane vocabulary. Dequantize: x = dl*q - ml per sub-block of 16. */
#include <arm_neon.h>

#include "quant/neon/kernels.h"
#include "quant/neon/lanes.h"
#include "quant/lanes.h"

void lc_q2_K_quantize_neon(const float *restrict x, void *restrict y, size_t n) {
    lanes_q2_K_quantize(x, y, n);
}

/* y[0..15] = dl*q - ml for the 16 levels in the bytes of q. */
static inline void q2_K_store16(float *y, uint8x16_t q, float dl, float ml) {
    const float32x4_t d = vdupq_n_f32(dl), m = vdupq_n_f32(ml);
    const uint16x8_t lo = vmovl_u8(vget_low_u8(q)), hi = vmovl_u8(vget_high_u8(q));
    const uint16x4_t part[4] = { vget_low_u16(lo), vget_high_u16(lo), vget_low_u16(hi),
                                 vget_high_u16(hi) };
    for (int k = 0; k < 4; k++)
        vst1q_f32(y + 4 * k, vsubq_f32(vmulq_f32(d, vcvtq_f32_u32(vmovl_u16(part[k]))), m));
}

void lc_q2_K_dequantize_neon(const void *restrict vx, float *restrict y, size_t n) {
    const lc_block_q2_K *x = vx;
    for (size_t b = 0; b < n / LC_QK_K; b++) {
        const float d = lc_q_f16_to_f32(x[b].d), min = lc_q_f16_to_f32(x[b].dmin);
        const uint8_t *q = x[b].qs, *sc = x[b].scales;
        for (int j = 0; j < LC_QK_K; j += 128, q += 32) {
            const uint8x16_t q0 = vld1q_u8(q), q1 = vld1q_u8(q + 16);
            for (int shift = 0; shift < 8; shift += 2, sc += 2, y += 32) {
                const int8x16_t sh = vdupq_n_s8((int8_t)-shift);   /* right shift */
                q2_K_store16(y, vandq_u8(vshlq_u8(q0, sh), vdupq_n_u8(3)), d * (sc[0] & 0xf),
                             min * (sc[0] >> 4));
                q2_K_store16(y + 16, vandq_u8(vshlq_u8(q1, sh), vdupq_n_u8(3)),
                             d * (sc[1] & 0xf), min * (sc[1] >> 4));
            }
        }
    }
}
