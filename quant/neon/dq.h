/* quant/neon/dq.h: private to quant/neon/. The steps the dequantize-only kernels share
 * (quant/types.h LC_DEQUANT_TYPES), as quant/avx2/dq.h: small integers become floats
 * exactly, then each value gets the reference's own IEEE operations in its order. A
 * product of a scale and an integer-valued float commutes bit for bit (at most one
 * operand can be NaN; FMUL returns it quieted, FPCR.DN being clear). static inline. */
#ifndef LC_QUANT_NEON_DQ_H
#define LC_QUANT_NEON_DQ_H

#include <arm_neon.h>
#include <stdint.h>
#include <string.h>

#include "quant/dq_decode.h"

/* (float) of 8 unsigned (signed) bytes: out[0] lanes 0..3, out[1] lanes 4..7. */
static inline void lc_neon_u8x8_f32(uint8x8_t b, float32x4_t out[2]) {
    const uint16x8_t w = vmovl_u8(b);
    out[0] = vcvtq_f32_u32(vmovl_u16(vget_low_u16(w)));
    out[1] = vcvtq_f32_u32(vmovl_u16(vget_high_u16(w)));
}
static inline void lc_neon_i8x8_f32(int8x8_t b, float32x4_t out[2]) {
    const int16x8_t w = vmovl_s8(b);
    out[0] = vcvtq_f32_s32(vmovl_s16(vget_low_s16(w)));
    out[1] = vcvtq_f32_s32(vmovl_s16(vget_high_s16(w)));
}

/* (float) of the two 4-byte grid entries at g1, g2 (unsigned bytes), g1's first. */
static inline void lc_neon_u8x4x2_f32(const uint8_t *g1, const uint8_t *g2, float32x4_t out[2]) {
    uint32_t a, b;
    memcpy(&a, g1, 4);
    memcpy(&b, g2, 4);
    lc_neon_u8x8_f32(vreinterpret_u8_u32(vset_lane_u32(b, vdup_n_u32(a), 1)), out);
}

/* The IQ sign byte s as sign masks: lane j of the 8 (out[0]: 0..3, out[1]: 4..7) holds
 * bit 31 set where bit j of s is set. XOR with it is the reference's with_sign, a
 * negation (a NaN's sign flips too). */
static inline void lc_neon_signs8(unsigned s, uint32x4_t out[2]) {
    static const int32_t shift[8] = { 31, 30, 29, 28, 27, 26, 25, 24 };
    const uint32x4_t v = vdupq_n_u32(s), top = vdupq_n_u32(0x80000000u);
    out[0] = vandq_u32(vshlq_u32(v, vld1q_s32(shift)), top);
    out[1] = vandq_u32(vshlq_u32(v, vld1q_s32(shift + 4)), top);
}

/* y[0..7] = with_sign(db * g) for the 8 floats g and the sign byte s. */
static inline void lc_neon_store8_signed(float *y, float32x4_t db, const float32x4_t g[2],
                                         unsigned s) {
    uint32x4_t m[2];
    lc_neon_signs8(s, m);
    for (int k = 0; k < 2; k++)
        vst1q_f32(y + 4 * k, vreinterpretq_f32_u32(veorq_u32(
                                 vreinterpretq_u32_f32(vmulq_f32(db, g[k])), m[k])));
}

/* The 16 signed table values lut[q & 0xf] (*lo) and lut[q >> 4] (*hi) for the 16 bytes q. */
static inline void lc_neon_lut_nibbles(int8x16_t lut, uint8x16_t q, int8x16_t *lo, int8x16_t *hi) {
    *lo = vqtbl1q_s8(lut, vandq_u8(q, vdupq_n_u8(0x0f)));
    *hi = vqtbl1q_s8(lut, vshrq_n_u8(q, 4));
}

/* y[0..7] = d * (float)v[j] for the 8 signed bytes v. */
static inline void lc_neon_store8_i8(float *y, float32x4_t d, int8x8_t v) {
    float32x4_t f[2];
    lc_neon_i8x8_f32(v, f);
    vst1q_f32(y, vmulq_f32(d, f[0]));
    vst1q_f32(y + 4, vmulq_f32(d, f[1]));
}

/* y[0..15] = d * (float)v[j] for the 16 signed bytes v. */
static inline void lc_neon_store16_i8(float *y, float32x4_t d, int8x16_t v) {
    lc_neon_store8_i8(y, d, vget_low_s8(v));
    lc_neon_store8_i8(y + 8, d, vget_high_s8(v));
}

/* ---- one decoded group of 8 values (quant/dq_decode.h), as the reference computes it ---- */

/* An IQ2 group: one 8-byte grid entry. */
static inline void lc_neon_iq2_grp8(const lc_iq_grp8 *grp, float *y) {
    float32x4_t g[2];
    lc_neon_u8x8_f32(vld1_u8(grp->grid[0]), g);
    lc_neon_store8_signed(y, vdupq_n_f32(grp->db), g, grp->signs);
}

/* An IQ3 group: two 4-byte grid entries. */
static inline void lc_neon_iq3_grp8(const lc_iq_grp8 *grp, float *y) {
    float32x4_t g[2];
    lc_neon_u8x4x2_f32(grp->grid[0], grp->grid[1], g);
    lc_neon_store8_signed(y, vdupq_n_f32(grp->db), g, grp->signs);
}

/* An IQ1 group: y = dl * ((float)grid + delta), the add first; delta's sign set by XOR,
 * without a branch (the sign bits are random). */
static inline void lc_neon_iq1_grp8(const lc_iq1_grp8 *grp, float *y) {
    const uint32x4_t pos = vreinterpretq_u32_f32(vdupq_n_f32(LC_IQ1S_DELTA));
    const float32x4_t delta = vreinterpretq_f32_u32(veorq_u32(pos, vdupq_n_u32(grp->delta_sign)));
    const float32x4_t dl = vdupq_n_f32(grp->dl);
    float32x4_t g[2];
    lc_neon_i8x8_f32(vld1_s8(grp->grid), g);
    vst1q_f32(y, vmulq_f32(dl, vaddq_f32(g[0], delta)));
    vst1q_f32(y + 4, vmulq_f32(dl, vaddq_f32(g[1], delta)));
}

/* y[0..31] = d * lut[q] for the 32 nibbles of the 16 bytes at qs (low nibbles first),
 * as IQ4_NL and MXFP4 store them. */
static inline void lc_neon_store32_lut(float *y, float32x4_t d, int8x16_t lut, const uint8_t *qs) {
    int8x16_t lo, hi;
    lc_neon_lut_nibbles(lut, vld1q_u8(qs), &lo, &hi);
    lc_neon_store16_i8(y, d, lo);
    lc_neon_store16_i8(y + 16, d, hi);
}

#endif
