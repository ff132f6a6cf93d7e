/* quant/neon/q5_1.c: Q5_1 with NEON, byte-identical to the scalar reference (quant/ref.c).
 *
 * Q5_1 (24 B): | d:2 | m:2 | qh:4 | qs[16] |  x = d*q + m
 * min, max, d, id and m as Q4_1 with d = (max - min)/31;
 * u = (uint8_t)trunc((x - min)*id + 0.5), no clamp. NaN: reference. */
#include <arm_neon.h>

#include "libconvert/bytes.h"
#include "quant/blocks.h"
#include "quant/neon/kernels.h"
#include "quant/neon/simd.h"
#include "quant/quant_impl.h"

void lc_q5_1_quantize_neon(const float *restrict x, void *restrict vy, size_t n) {
    lc_block_q5_1 *y = vy;
    for (size_t b = 0; b < n / LC_QK5_1; b++, x += LC_QK5_1) {
        float32x4_t v[8];
        lc_neon_load32(x, v);
        if (lc_neon_any_nan32(v)) {
            lc_q5_1_quantize_ref(x, &y[b], LC_QK5_1);
            continue;
        }
        float min, max;
        lc_neon_min_max32(v, x, &min, &max);
        const float d = (max - min) / 31.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[b].d = lc_q_scale_f16(d);
        y[b].m = lc_q_scale_f16(min);
        const float32x4_t vmin = vdupq_n_f32(min), vid = vdupq_n_f32(id);
        int32x4_t q[8], nib[8];
        for (int k = 0; k < 8; k++) {    /* the low byte of each lane is u */
            q[k] = lc_neon_trunc_i32(
                vaddq_f32(vmulq_f32(vsubq_f32(v[k], vmin), vid), vdupq_n_f32(0.5f)));
            nib[k] = vandq_s32(q[k], vdupq_n_s32(0x0f));
        }
        lc_store_le32(y[b].qh, lc_neon_bit4_mask32(q));
        lc_neon_store_nibbles(y[b].qs, nib, nib + 4);
    }
}

void lc_q5_1_dequantize_neon(const void *restrict vx, float *restrict y, size_t n) {
    const lc_block_q5_1 *x = vx;
    for (size_t b = 0; b < n / LC_QK5_1; b++, y += LC_QK5_1) {
        const float32x4_t d = vdupq_n_f32(lc_q_f16_to_f32(x[b].d));
        const float32x4_t m = vdupq_n_f32(lc_q_f16_to_f32(x[b].m));
        const uint32_t qh = lc_load_le32(x[b].qh);
        int32x4_t q[8];
        lc_neon_load_nibbles(x[b].qs, q);
        for (int k = 0; k < 8; k++) {
            const int32x4_t v = vorrq_s32(q[k], lc_neon_qh_bit4(qh, k));
            vst1q_f32(y + 4 * k, vaddq_f32(vmulq_f32(vcvtq_f32_s32(v), d), m));
        }
    }
}
