/* quant/neon/q8_0.c: Q8_0 with NEON, byte-identical to the scalar reference (quant/ref.c).
 *
 * Q8_0 (34 B): | d:2 | qs[32]: int8 |     d = amax/127, id = 1/d, q = roundf(x*id)
 *
 * amax: FMAX over the magnitudes (no NaN: blocks holding one go to the reference, whose
 * MAX restarts on it). roundf is FRINTA (to nearest, ties away from zero); the cast is
 * lc_neon_trunc_i32 (x86's INT32_MIN for NaN and out-of-range values), low byte kept. */
#include <arm_neon.h>

#include "quant/blocks.h"
#include "quant/neon/kernels.h"
#include "quant/neon/simd.h"
#include "quant/quant_impl.h"

void lc_q8_0_quantize_neon(const float *restrict x, void *restrict vy, size_t n) {
    lc_block_q8_0 *y = vy;
    for (size_t b = 0; b < n / LC_QK8_0; b++, x += LC_QK8_0) {
        float32x4_t v[8], a[8];
        lc_neon_load32(x, v);
        if (lc_neon_any_nan32(v)) {
            lc_q8_0_quantize_ref(x, &y[b], LC_QK8_0);
            continue;
        }
        for (int k = 0; k < 8; k++)
            a[k] = vabsq_f32(v[k]);
        const float d = lc_neon_max32(a) / 127.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[b].d = lc_q_scale_f16(d);
        const float32x4_t vid = vdupq_n_f32(id);
        int32x4_t q[8];
        for (int k = 0; k < 8; k++)
            q[k] = lc_neon_trunc_i32(vrndaq_f32(vmulq_f32(v[k], vid)));
        vst1q_u8((uint8_t *)y[b].qs, lc_neon_low_bytes16(q));
        vst1q_u8((uint8_t *)y[b].qs + 16, lc_neon_low_bytes16(q + 4));
    }
}

void lc_q8_0_dequantize_neon(const void *restrict vx, float *restrict y, size_t n) {
    const lc_block_q8_0 *x = vx;
    for (size_t b = 0; b < n / LC_QK8_0; b++, y += LC_QK8_0) {
        const float32x4_t d = vdupq_n_f32(lc_q_f16_to_f32(x[b].d));
        for (int h = 0; h < 2; h++) {
            const int8x16_t q = vld1q_s8(x[b].qs + 16 * h);
            const int16x8_t w[2] = { vmovl_s8(vget_low_s8(q)), vmovl_s8(vget_high_s8(q)) };
            for (int k = 0; k < 4; k++) {
                const int32x4_t i = vmovl_s16(k & 1 ? vget_high_s16(w[k / 2]) : vget_low_s16(w[k / 2]));
                vst1q_f32(y + 16 * h + 4 * k, vmulq_f32(vcvtq_f32_s32(i), d));
            }
        }
    }
}
