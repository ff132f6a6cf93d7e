/* quant/neon/q2_0.c: Q2_0 dequantize with NEON, bit-identical to the reference
 * (quant/ref_dq.c): x = (float)(q - 1) * d, eight 2-bit q from each pair of bytes. */
#include <arm_neon.h>

#include "libconvert/bytes.h"
#include "quant/blocks.h"
#include "quant/neon/kernels.h"
#include "quant/quant_impl.h"

void lc_q2_0_dequantize_neon(const void *restrict vx, float *restrict y, size_t n) {
    const lc_block_q2_0 *x = vx;
    static const int32_t shifts[8] = { 0, -2, -4, -6, -8, -10, -12, -14 };   /* right */
    const int32x4_t shift[2] = { vld1q_s32(shifts), vld1q_s32(shifts + 4) };
    for (size_t b = 0; b < n / LC_QK2_0; b++, y += LC_QK2_0) {
        const float32x4_t d = vdupq_n_f32(lc_q_f16_to_f32(x[b].d));
        for (int k = 0; k < LC_QK2_0 / 8; k++) {
            const uint32x4_t w = vdupq_n_u32(lc_load_le16(x[b].qs + 2 * k));
            for (int h = 0; h < 2; h++) {
                const uint32x4_t q = vandq_u32(vshlq_u32(w, shift[h]), vdupq_n_u32(3));
                const int32x4_t v = vsubq_s32(vreinterpretq_s32_u32(q), vdupq_n_s32(1));
                vst1q_f32(y + 8 * k + 4 * h, vmulq_f32(vcvtq_f32_s32(v), d));
            }
        }
    }
}
