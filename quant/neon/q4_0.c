/* quant/neon/q4_0.c: Q4_0 with NEON, byte-identical to the scalar reference (quant/ref.c).
 *
 * Q4_0 (18 B): | d:2 | qs[16] |  byte j = q[j] | q[j+16] << 4,  x = d*(q-8)
 * d = v/-8, v the first element of largest magnitude; q = min(15, (int8_t)trunc(x*id + 8.5)).
 * Blocks holding a NaN go to the reference. */
#include <arm_neon.h>

#include "quant/blocks.h"
#include "quant/neon/kernels.h"
#include "quant/neon/simd.h"
#include "quant/quant_impl.h"

void lc_q4_0_quantize_neon(const float *restrict x, void *restrict vy, size_t n) {
    lc_block_q4_0 *y = vy;
    for (size_t b = 0; b < n / LC_QK4_0; b++, x += LC_QK4_0) {
        float32x4_t v[8];
        lc_neon_load32(x, v);
        if (lc_neon_any_nan32(v)) {
            lc_q4_0_quantize_ref(x, &y[b], LC_QK4_0);
            continue;
        }
        const float d = lc_neon_signed_extreme32(v, x) / -8.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[b].d = lc_q_scale_f16(d);
        const float32x4_t vid = vdupq_n_f32(id), bias = vdupq_n_f32(8.5f);
        int32x4_t q[8];
        for (int k = 0; k < 8; k++)
            q[k] = vminq_s32(lc_neon_trunc_i8(vaddq_f32(vmulq_f32(v[k], vid), bias)), vdupq_n_s32(15));
        lc_neon_store_nibbles(y[b].qs, q, q + 4);
    }
}

void lc_q4_0_dequantize_neon(const void *restrict vx, float *restrict y, size_t n) {
    const lc_block_q4_0 *x = vx;
    for (size_t b = 0; b < n / LC_QK4_0; b++, y += LC_QK4_0) {
        const float32x4_t d = vdupq_n_f32(lc_q_f16_to_f32(x[b].d));
        int32x4_t q[8];
        lc_neon_load_nibbles(x[b].qs, q);
        for (int k = 0; k < 8; k++)
            vst1q_f32(y + 4 * k, vmulq_f32(vcvtq_f32_s32(vsubq_s32(q[k], vdupq_n_s32(8))), d));
    }
}
