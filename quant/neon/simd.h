/* quant/neon/simd.h: private to quant/neon/. Vector steps the NEON kernels of the 32-element
 * types share, each equal to the reference's scalar step it replaces (the reasons are the
 * AVX2 folder's, quant/avx2/simd.h and q8_0.c, unless said here). static inline. */
#ifndef LC_QUANT_NEON_SIMD_H
#define LC_QUANT_NEON_SIMD_H

#include <arm_neon.h>
#include <float.h>
#include <stdbool.h>
#include <stdint.h>

static inline void lc_neon_load32(const float *x, float32x4_t v[8]) {
    for (int k = 0; k < 8; k++)
        v[k] = vld1q_f32(x + 4 * k);
}

/* True when any of the 32 values is NaN. */
static inline bool lc_neon_any_nan32(const float32x4_t v[8]) {
    uint32x4_t ok = vceqq_f32(v[0], v[0]);
    for (int k = 1; k < 8; k++)
        ok = vandq_u32(ok, vceqq_f32(v[k], v[k]));
    return vminvq_u32(ok) == 0;
}

/* The largest and smallest of 32 values without NaN (the sign of a zero arbitrary: FMAX
 * and FMIN order -0 below +0, the reference keeps the first; callers fix zeros). */
static inline float lc_neon_max32(const float32x4_t v[8]) {
    float32x4_t m = v[0];
    for (int k = 1; k < 8; k++)
        m = vmaxq_f32(m, v[k]);
    return vmaxvq_f32(m);
}
static inline float lc_neon_min32(const float32x4_t v[8]) {
    float32x4_t m = v[0];
    for (int k = 1; k < 8; k++)
        m = vminq_f32(m, v[k]);
    return vminvq_f32(m);
}

/* The index of the first of the 32 values equal to `value` (+0 == -0); 32 if none. */
static inline unsigned lc_neon_first_eq32(const float32x4_t v[8], float value) {
    static const uint32_t base[4] = { 0, 1, 2, 3 };
    const float32x4_t c = vdupq_n_f32(value);
    const uint32x4_t none = vdupq_n_u32(32);
    uint32x4_t idx = vld1q_u32(base), best = none;
    for (int k = 0; k < 8; k++, idx = vaddq_u32(idx, vdupq_n_u32(4)))
        best = vminq_u32(best, vbslq_u32(vceqq_f32(v[k], c), idx, none));
    return vminvq_u32(best);
}

/* The reference's min/max search from FLT_MAX / -FLT_MAX over x[0..31] (no NaN): the
 * values are the min and max of the block and the starting values; a zero extreme takes
 * the sign of the block's first zero (lc_avx2_min_max32). */
static inline void lc_neon_min_max32(const float32x4_t v[8], const float *x, float *min,
                                     float *max) {
    float lo = lc_neon_min32(v), hi = lc_neon_max32(v);
    lo = lo > FLT_MAX ? FLT_MAX : lo;
    hi = hi < -FLT_MAX ? -FLT_MAX : hi;
    if (lo == 0.0f || hi == 0.0f) {
        const float z = x[lc_neon_first_eq32(v, 0.0f)];
        lo = lo == 0.0f ? z : lo;
        hi = hi == 0.0f ? z : hi;
    }
    *min = lo;
    *max = hi;
}

/* The reference's signed_extreme over x[0..31] (no NaN): the signed value of the first
 * element of largest magnitude, +0 for an all-zero block. */
static inline float lc_neon_signed_extreme32(const float32x4_t v[8], const float *x) {
    float32x4_t a[8];
    for (int k = 0; k < 8; k++)
        a[k] = vabsq_f32(v[k]);
    const float amax = lc_neon_max32(a);
    if (amax == 0.0f)
        return 0.0f;
    return x[lc_neon_first_eq32(a, amax)];
}

/* lc_q_trunc_i32 on 4 lanes: what x86's cvttss2si gives, INT32_MIN for NaN and for values
 * outside int32 (FCVTZS would saturate them and send NaN to 0). */
static inline int32x4_t lc_neon_trunc_i32(float32x4_t v) {
    const uint32x4_t in = vandq_u32(vcgeq_f32(v, vdupq_n_f32(-2147483648.0f)),
                                    vcltq_f32(v, vdupq_n_f32(2147483648.0f)));
    return vbslq_s32(in, vcvtq_s32_f32(v), vdupq_n_s32(INT32_MIN));
}

/* lc_q_trunc_i8: the low byte of lc_q_trunc_i32, sign-extended. */
static inline int32x4_t lc_neon_trunc_i8(float32x4_t v) {
    return vshrq_n_s32(vshlq_n_s32(lc_neon_trunc_i32(v), 24), 24);
}

/* The low bytes of 16 int32 lanes q[0..3], in order. */
static inline uint8x16_t lc_neon_low_bytes16(const int32x4_t q[4]) {
    const int16x8_t a = vcombine_s16(vmovn_s32(q[0]), vmovn_s32(q[1]));
    const int16x8_t b = vcombine_s16(vmovn_s32(q[2]), vmovn_s32(q[3]));
    return vreinterpretq_u8_s8(vcombine_s8(vmovn_s16(a), vmovn_s16(b)));
}

/* Stores (lo[j] & 0xff | hi[j] << 4) & 0xff, j = 0..15: lo holds elements 0..15 and hi
 * elements 16..31 of a block as int32 (the reference's (uint8_t)q0 | (uint8_t)q1 << 4). */
static inline void lc_neon_store_nibbles(uint8_t *qs, const int32x4_t lo[4], const int32x4_t hi[4]) {
    const uint8x16_t l = lc_neon_low_bytes16(lo), h = lc_neon_low_bytes16(hi);
    vst1q_u8(qs, vorrq_u8(l, vshlq_n_u8(h, 4)));
}

/* Bit 4 of each of the 32 int32 lanes q[0..7] (elements 0..31) as Q5's u32 qh. */
static inline uint32_t lc_neon_bit4_mask32(const int32x4_t q[8]) {
    static const uint8_t w[8] = { 1, 2, 4, 8, 16, 32, 64, 128 };
    const uint8x8_t weight = vld1_u8(w);
    const uint8x16_t b0 = vandq_u8(vshrq_n_u8(lc_neon_low_bytes16(q), 4), vdupq_n_u8(1));
    const uint8x16_t b1 = vandq_u8(vshrq_n_u8(lc_neon_low_bytes16(q + 4), 4), vdupq_n_u8(1));
    return (uint32_t)vaddv_u8(vmul_u8(vget_low_u8(b0), weight)) |
           (uint32_t)vaddv_u8(vmul_u8(vget_high_u8(b0), weight)) << 8 |
           (uint32_t)vaddv_u8(vmul_u8(vget_low_u8(b1), weight)) << 16 |
           (uint32_t)vaddv_u8(vmul_u8(vget_high_u8(b1), weight)) << 24;
}

/* The 32 nibble values of a Q4/Q5 block's qs as int32: q[0..3] elements 0..15 (low
 * nibbles), q[4..7] elements 16..31 (high nibbles). */
static inline void lc_neon_load_nibbles(const uint8_t *qs, int32x4_t q[8]) {
    const uint8x16_t b = vld1q_u8(qs);
    const uint8x16_t half[2] = { vandq_u8(b, vdupq_n_u8(0x0f)), vshrq_n_u8(b, 4) };
    for (int h = 0; h < 2; h++) {
        const uint16x8_t lo = vmovl_u8(vget_low_u8(half[h])), hi = vmovl_u8(vget_high_u8(half[h]));
        q[4 * h + 0] = vreinterpretq_s32_u32(vmovl_u16(vget_low_u16(lo)));
        q[4 * h + 1] = vreinterpretq_s32_u32(vmovl_u16(vget_high_u16(lo)));
        q[4 * h + 2] = vreinterpretq_s32_u32(vmovl_u16(vget_low_u16(hi)));
        q[4 * h + 3] = vreinterpretq_s32_u32(vmovl_u16(vget_high_u16(hi)));
    }
}

/* Bit 4 set from bit j of qh for elements j = 4k..4k+3 of a Q5 block. */
static inline int32x4_t lc_neon_qh_bit4(uint32_t qh, int k) {
    static const int32_t base[4] = { 0, -1, -2, -3 };      /* right shifts as negative */
    const int32x4_t shift = vsubq_s32(vld1q_s32(base), vdupq_n_s32(4 * k));
    const uint32x4_t bit = vandq_u32(vshlq_u32(vdupq_n_u32(qh), shift), vdupq_n_u32(1));
    return vreinterpretq_s32_u32(vshlq_n_u32(bit, 4));
}

#endif
