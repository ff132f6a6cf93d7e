/* quant/neon/tq1_0.c: TQ1_0 dequantize with NEON, bit-identical to the reference
 * (quant/ref_dq.c). Digit n of byte q is ((uint8_t)(q * 3^n) * 3) >> 8, computed on 8
 * bytes at once in 16-bit lanes (q * 81 < 2^15, and (q * 3^n & 0xff) * 3 < 2^10), then
 * x = (float)(digit - 1) * d. */
#include <arm_neon.h>
#include <string.h>

#include "quant/blocks.h"
#include "quant/neon/kernels.h"
#include "quant/quant_impl.h"

/* digit - 1 for the 8 u16 lanes q, each multiplied first by its lane of pow (3^n). */
static inline int16x8_t trits(uint16x8_t q, uint16x8_t pow) {
    const uint16x8_t v = vandq_u16(vmulq_u16(q, pow), vdupq_n_u16(0xff));
    const uint16x8_t t = vshrq_n_u16(vmulq_u16(v, vdupq_n_u16(3)), 8);
    return vsubq_s16(vreinterpretq_s16_u16(t), vdupq_n_s16(1));
}

/* y[0..7] = (float)t[j] * d for the 8 int16 lanes t. */
static inline void store8(float *y, int16x8_t t, float32x4_t d) {
    vst1q_f32(y, vmulq_f32(vcvtq_f32_s32(vmovl_s16(vget_low_s16(t))), d));
    vst1q_f32(y + 4, vmulq_f32(vcvtq_f32_s32(vmovl_s16(vget_high_s16(t))), d));
}

void lc_tq1_0_dequantize_neon(const void *restrict vx, float *restrict y, size_t n) {
    const lc_block_tq1_0 *x = vx;
    static const uint16_t pow3[5] = { 1, 3, 9, 27, 81 };
    static const uint16_t pow_qh[16] = { 1, 1, 1, 1, 3, 3, 3, 3, 9, 9, 9, 9, 27, 27, 27, 27 };
    for (size_t b = 0; b < n / LC_QK_K; b++) {
        const float32x4_t d = vdupq_n_f32(lc_q_f16_to_f32(x[b].d));
        uint16x8_t q[6];                                 /* qs[0..47], 8 per vector */
        for (int k = 0; k < 3; k++) {
            const uint8x16_t v = vld1q_u8(x[b].qs + 16 * k);
            q[2 * k] = vmovl_u8(vget_low_u8(v));
            q[2 * k + 1] = vmovl_u8(vget_high_u8(v));
        }
        for (int t = 0; t < 5; t++, y += 32) {          /* qs[0..31]: values 32t + m */
            const uint16x8_t pow = vdupq_n_u16(pow3[t]);
            for (int k = 0; k < 4; k++)
                store8(y + 8 * k, trits(q[k], pow), d);
        }
        for (int t = 0; t < 5; t++, y += 16) {          /* qs[32..47]: 160 + 16t + m */
            const uint16x8_t pow = vdupq_n_u16(pow3[t]);
            store8(y, trits(q[4], pow), d);
            store8(y + 8, trits(q[5], pow), d);
        }
        /* qh[0..3]: value 240 + 4t + j is digit t of qh[j] */
        uint32_t h4;
        memcpy(&h4, x[b].qh, 4);
        const uint16x8_t qh = vmovl_u8(vreinterpret_u8_u32(vdup_n_u32(h4)));   /* qh x2 */
        store8(y, trits(qh, vld1q_u16(pow_qh)), d);
        store8(y + 8, trits(qh, vld1q_u16(pow_qh + 8)), d);
        y += 16;
    }
}
