/* quant/ref.c: scalar reference quantizers for the 32-element block types. These
 * are the spec: each is bit-identical to ggml's quantize_row_<type>_ref and
 * dequantize_row_<type> (src/ggml-quants.c), so the order of float operations,
 * the rounding of each step and the comparison operators are ggml's, and the
 * file is built with -ffp-contract=off (no FMA contraction).
 *
 * Block layouts (little-endian; d, m are binary16):
 *   Q8_0 (34 B): | d:2 | qs[32]: int8 |                         x[j] = d*qs[j]
 *   Q4_0 (18 B): | d:2 | qs[16] |   byte j = q[j] | q[j+16] << 4,  x = d*(q-8)
 *   Q4_1 (20 B): | d:2 | m:2 | qs[16] |  nibbles as Q4_0,          x = d*q + m
 *   Q5_0 (22 B): | d:2 | qh:4 | qs[16] | low nibbles as Q4_0; bit j of the
 *                 u32 qh is bit 4 of q[j];                         x = d*(q-16)
 *   Q5_1 (24 B): | d:2 | m:2 | qh:4 | qs[16] |                     x = d*q + m
 *
 * How each scale is chosen (what identity with ggml hinges on):
 *   Q8_0       d = amax/127, id = 1/d (not 127/amax), q = roundf(x*id): ties
 *              away from zero. amax is folded as MAX(amax, |x|) = amax > |x| ?
 *              amax : |x|, in that operand order.
 *   Q4_0/Q5_0  d = v/-8 (-16) where v is the first element of largest magnitude,
 *              signed; q = min(15 (31), trunc(x*id + 8.5 (16.5))).
 *   Q4_1/Q5_1  d = (max-min)/15 (31), m = min; q = trunc((x-min)*id + 0.5);
 *              Q4_1 clamps with min(15, q), Q5_1 does not clamp at all.
 *
 * Non-finite inputs. ggml's float-to-integer casts are undefined in C for NaN
 * and out-of-range values; we reproduce what gcc's x86-64 build of ggml does
 * (quant_impl.h lc_q_trunc_*: NaN and infinities become 0), checked against
 * golden blocks from ggml itself (fixtures/quant/special.*). In short:
 *   - the min/max and signed-extreme searches skip NaN (comparisons with NaN
 *     are false). Q8_0's MAX(amax, |v|) does not: a NaN becomes amax and the
 *     next |v| replaces it, so a NaN restarts the search; larger elements before
 *     it then give x*id beyond 127, stored as the cast's low byte (wrapped). A
 *     NaN in a block's last slot leaves d = NaN (stored 0x7e00) and all q = 0;
 *   - a NaN element, or an infinite one once id is 0, quantizes to q = 0;
 *   - an infinite amax gives d = inf (0x7c00) and id = 1/inf = 0.
 * Scales that are binary32 subnormals cannot push x*id out of range: below
 * 2^-128 the reciprocal is already infinite, above it the scale keeps 21 bits.
 * Where two NaNs with different payloads meet in one operation (x86 returns the first
 * operand's), the result depends on the operand order the compiler picks: ggml's bytes
 * are gcc's, and so are ours when gcc builds us. A clang build agrees on every other
 * input, the default NaN included, but may store other scale bytes for blocks holding
 * NaNs with payloads (seen in Q6_K, whose scale search sums such NaNs). */
#include <float.h>
#include <math.h>
#include <string.h>

#include "libconvert/bytes.h"
#include "quant/blocks.h"
#include "quant/quant.h"
#include "quant/quant_impl.h"

/* ---- Q8_0 ---- */

void lc_q8_0_quantize_ref(const float *restrict x, void *restrict vy, size_t n) {
    lc_block_q8_0 *y = vy;
    for (size_t b = 0; b < n / LC_QK8_0; b++, x += LC_QK8_0) {
        float amax = 0.0f;
        for (int j = 0; j < LC_QK8_0; j++) {
            const float a = fabsf(x[j]);
            amax = amax > a ? amax : a;         /* ggml's MAX(amax, fabsf(v)) */
        }
        const float d = amax / 127.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;   /* NaN != 0: id is NaN */
        y[b].d = lc_q_scale_f16(d);
        for (int j = 0; j < LC_QK8_0; j++)
            y[b].qs[j] = (int8_t)lc_q_trunc_i8(roundf(x[j] * id));
    }
}

void lc_q8_0_dequantize_ref(const void *restrict vx, float *restrict y, size_t n) {
    const lc_block_q8_0 *x = vx;
    for (size_t b = 0; b < n / LC_QK8_0; b++, y += LC_QK8_0) {
        const float d = lc_q_f16_to_f32(x[b].d);
        for (int j = 0; j < LC_QK8_0; j++)
            y[j] = (float)x[b].qs[j] * d;
    }
}

/* ---- Q4_0 and Q5_0: symmetric, scale from the signed extreme ---- */

/* The signed value of the first element with the largest magnitude (0 if none). */
static float signed_extreme(const float *x, int n) {
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < n; j++) {
        if (amax < fabsf(x[j])) {
            amax = fabsf(x[j]);
            max = x[j];
        }
    }
    return max;
}

void lc_q4_0_quantize_ref(const float *restrict x, void *restrict vy, size_t n) {
    lc_block_q4_0 *y = vy;
    for (size_t b = 0; b < n / LC_QK4_0; b++, x += LC_QK4_0) {
        const float d = signed_extreme(x, LC_QK4_0) / -8.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[b].d = lc_q_scale_f16(d);
        for (int j = 0; j < LC_QK4_0 / 2; j++) {
            int q0 = lc_q_trunc_i8(x[j] * id + 8.5f);
            int q1 = lc_q_trunc_i8(x[j + LC_QK4_0 / 2] * id + 8.5f);
            q0 = q0 > 15 ? 15 : q0;             /* an upper clamp only, as in ggml */
            q1 = q1 > 15 ? 15 : q1;
            y[b].qs[j] = (uint8_t)((uint8_t)q0 | (uint8_t)q1 << 4);
        }
    }
}

void lc_q4_0_dequantize_ref(const void *restrict vx, float *restrict y, size_t n) {
    const lc_block_q4_0 *x = vx;
    for (size_t b = 0; b < n / LC_QK4_0; b++, y += LC_QK4_0) {
        const float d = lc_q_f16_to_f32(x[b].d);
        for (int j = 0; j < LC_QK4_0 / 2; j++) {
            y[j] = (float)((x[b].qs[j] & 0x0f) - 8) * d;
            y[j + LC_QK4_0 / 2] = (float)((x[b].qs[j] >> 4) - 8) * d;
        }
    }
}

void lc_q5_0_quantize_ref(const float *restrict x, void *restrict vy, size_t n) {
    lc_block_q5_0 *y = vy;
    for (size_t b = 0; b < n / LC_QK5_0; b++, x += LC_QK5_0) {
        const float d = signed_extreme(x, LC_QK5_0) / -16.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[b].d = lc_q_scale_f16(d);
        uint32_t qh = 0;
        for (int j = 0; j < LC_QK5_0 / 2; j++) {
            int q0 = lc_q_trunc_i8(x[j] * id + 16.5f);
            int q1 = lc_q_trunc_i8(x[j + LC_QK5_0 / 2] * id + 16.5f);
            const uint8_t u0 = (uint8_t)(q0 > 31 ? 31 : q0);
            const uint8_t u1 = (uint8_t)(q1 > 31 ? 31 : q1);
            y[b].qs[j] = (uint8_t)((u0 & 0x0f) | (u1 & 0x0f) << 4);
            qh |= (uint32_t)(u0 >> 4 & 1u) << j;
            qh |= (uint32_t)(u1 >> 4 & 1u) << (j + LC_QK5_0 / 2);
        }
        lc_store_le32(y[b].qh, qh);
    }
}

void lc_q5_0_dequantize_ref(const void *restrict vx, float *restrict y, size_t n) {
    const lc_block_q5_0 *x = vx;
    for (size_t b = 0; b < n / LC_QK5_0; b++, y += LC_QK5_0) {
        const float d = lc_q_f16_to_f32(x[b].d);
        const uint32_t qh = lc_load_le32(x[b].qh);
        for (int j = 0; j < LC_QK5_0 / 2; j++) {
            const int h0 = (int)(qh >> j & 1u) << 4;
            const int h1 = (int)(qh >> (j + LC_QK5_0 / 2) & 1u) << 4;
            y[j] = (float)(((x[b].qs[j] & 0x0f) | h0) - 16) * d;
            y[j + LC_QK5_0 / 2] = (float)(((x[b].qs[j] >> 4) | h1) - 16) * d;
        }
    }
}

/* ---- Q4_1 and Q5_1: asymmetric, scale and minimum ---- */

static void min_max(const float *x, int n, float *min, float *max) {
    float lo = FLT_MAX, hi = -FLT_MAX;
    for (int j = 0; j < n; j++) {
        if (x[j] < lo) lo = x[j];
        if (x[j] > hi) hi = x[j];
    }
    *min = lo;
    *max = hi;
}

void lc_q4_1_quantize_ref(const float *restrict x, void *restrict vy, size_t n) {
    lc_block_q4_1 *y = vy;
    for (size_t b = 0; b < n / LC_QK4_1; b++, x += LC_QK4_1) {
        float min, max;
        min_max(x, LC_QK4_1, &min, &max);
        const float d = (max - min) / 15.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[b].d = lc_q_scale_f16(d);
        y[b].m = lc_q_scale_f16(min);
        for (int j = 0; j < LC_QK4_1 / 2; j++) {
            int q0 = lc_q_trunc_i8((x[j] - min) * id + 0.5f);
            int q1 = lc_q_trunc_i8((x[j + LC_QK4_1 / 2] - min) * id + 0.5f);
            q0 = q0 > 15 ? 15 : q0;
            q1 = q1 > 15 ? 15 : q1;
            y[b].qs[j] = (uint8_t)((uint8_t)q0 | (uint8_t)q1 << 4);
        }
    }
}

void lc_q4_1_dequantize_ref(const void *restrict vx, float *restrict y, size_t n) {
    const lc_block_q4_1 *x = vx;
    for (size_t b = 0; b < n / LC_QK4_1; b++, y += LC_QK4_1) {
        const float d = lc_q_f16_to_f32(x[b].d), m = lc_q_f16_to_f32(x[b].m);
        for (int j = 0; j < LC_QK4_1 / 2; j++) {
            y[j] = (float)(x[b].qs[j] & 0x0f) * d + m;
            y[j + LC_QK4_1 / 2] = (float)(x[b].qs[j] >> 4) * d + m;
        }
    }
}

void lc_q5_1_quantize_ref(const float *restrict x, void *restrict vy, size_t n) {
    lc_block_q5_1 *y = vy;
    for (size_t b = 0; b < n / LC_QK5_1; b++, x += LC_QK5_1) {
        float min, max;
        min_max(x, LC_QK5_1, &min, &max);
        const float d = (max - min) / 31.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[b].d = lc_q_scale_f16(d);
        y[b].m = lc_q_scale_f16(min);
        uint32_t qh = 0;
        for (int j = 0; j < LC_QK5_1 / 2; j++) {
            const unsigned u0 = lc_q_trunc_u8((x[j] - min) * id + 0.5f);   /* no clamp */
            const unsigned u1 = lc_q_trunc_u8((x[j + LC_QK5_1 / 2] - min) * id + 0.5f);
            y[b].qs[j] = (uint8_t)((u0 & 0x0f) | (u1 & 0x0f) << 4);
            qh |= (u0 >> 4 & 1u) << j;
            qh |= (u1 >> 4 & 1u) << (j + LC_QK5_1 / 2);
        }
        lc_store_le32(y[b].qh, qh);
    }
}

void lc_q5_1_dequantize_ref(const void *restrict vx, float *restrict y, size_t n) {
    const lc_block_q5_1 *x = vx;
    for (size_t b = 0; b < n / LC_QK5_1; b++, y += LC_QK5_1) {
        const float d = lc_q_f16_to_f32(x[b].d), m = lc_q_f16_to_f32(x[b].m);
        const uint32_t qh = lc_load_le32(x[b].qh);
        for (int j = 0; j < LC_QK5_1 / 2; j++) {
            const unsigned h0 = (qh >> j & 1u) << 4;
            const unsigned h1 = (qh >> (j + LC_QK5_1 / 2) & 1u) << 4;
            y[j] = (float)((x[b].qs[j] & 0x0fu) | h0) * d + m;
            y[j + LC_QK5_1 / 2] = (float)((x[b].qs[j] >> 4) | h1) * d + m;
        }
    }
}
