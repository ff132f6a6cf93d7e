/* quant/neon/lanes.h: private to quant/neon/. The lane vocabulary of quant/lanes.h for
 * AArch64 Advanced SIMD: LC_LANES = 16 lanes as four float32x4_t (four independent
 * instructions per step, as the x86 folders issue two).
 *
 * Each operation is the one IEEE operation its name says, correctly rounded, on every
 * lane (the folder is built with -ffp-contract=off and nothing here fuses a multiply with
 * an add; Linux runs user code with FPCR's round to nearest even, no flush to zero and no
 * default-NaN mode). Comparisons are C's: false when either side is NaN, except lv_ne.
 * lv_min/lv_max are the reference's `a < b ? a : b` and `a > b ? a : b`, spelled as a
 * compare and a select: FMIN/FMAX differ from them on NaN and on -0 against +0. */
#ifndef LC_QUANT_NEON_LANES_H
#define LC_QUANT_NEON_LANES_H

#include <arm_neon.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#define LC_LANES 16
#define LC_LANES_ALIGN _Alignas(16)

typedef struct { float32x4_t h[4]; } lc_lv;    /* 16 floats */
typedef struct { int32x4_t h[4]; } lc_li;      /* 16 int32 */
typedef struct { uint32x4_t h[4]; } lc_lm;     /* 16 masks: all ones or all zeros */

#define LC_EACH4(expr)                                                                     \
    { { expr(0), expr(1), expr(2), expr(3) } }

static inline lc_lv lv_load(const float *p) {
#define LD(k) vld1q_f32(p + 4 * (k))
    return (lc_lv)LC_EACH4(LD);
#undef LD
}
static inline void lv_store(float *p, lc_lv a) {
    for (int k = 0; k < 4; k++)
        vst1q_f32(p + 4 * k, a.h[k]);
}
static inline lc_lv lv_set1(float f) {
    const float32x4_t v = vdupq_n_f32(f);
    return (lc_lv){ { v, v, v, v } };
}
#define LC_LV_OP2(name, op)                                                                \
    static inline lc_lv name(lc_lv a, lc_lv b) {                                           \
        return (lc_lv){ { op(a.h[0], b.h[0]), op(a.h[1], b.h[1]), op(a.h[2], b.h[2]),      \
                          op(a.h[3], b.h[3]) } };                                          \
    }
LC_LV_OP2(lv_add, vaddq_f32)
LC_LV_OP2(lv_sub, vsubq_f32)
LC_LV_OP2(lv_mul, vmulq_f32)
LC_LV_OP2(lv_div, vdivq_f32)
#define LC_LV_OP1(name, op)                                                                \
    static inline lc_lv name(lc_lv a) {                                                    \
        return (lc_lv){ { op(a.h[0]), op(a.h[1]), op(a.h[2]), op(a.h[3]) } };              \
    }
LC_LV_OP1(lv_sqrt, vsqrtq_f32)
LC_LV_OP1(lv_round, vrndnq_f32)      /* FRINTN: to nearest, ties to even */
LC_LV_OP1(lv_abs, vabsq_f32)         /* FABS clears the sign bit, NaN included */
LC_LV_OP1(lv_neg, vnegq_f32)         /* FNEG flips it */

#define LC_LV_CMP(name, op)                                                                \
    static inline lc_lm name(lc_lv a, lc_lv b) {                                           \
        return (lc_lm){ { op(a.h[0], b.h[0]), op(a.h[1], b.h[1]), op(a.h[2], b.h[2]),      \
                          op(a.h[3], b.h[3]) } };                                          \
    }
LC_LV_CMP(lv_lt, vcltq_f32)
LC_LV_CMP(lv_gt, vcgtq_f32)
LC_LV_CMP(lv_eq, vceqq_f32)
static inline lc_lm lv_ne(lc_lv a, lc_lv b) {
    const lc_lm e = lv_eq(a, b);
    return (lc_lm){ { vmvnq_u32(e.h[0]), vmvnq_u32(e.h[1]), vmvnq_u32(e.h[2]), vmvnq_u32(e.h[3]) } };
}
static inline lc_lm lv_isnan(lc_lv a) { return lv_ne(a, a); }
static inline lc_lm lm_and(lc_lm a, lc_lm b) {
    for (int k = 0; k < 4; k++)
        a.h[k] = vandq_u32(a.h[k], b.h[k]);
    return a;
}
static inline lc_lm lm_or(lc_lm a, lc_lm b) {
    for (int k = 0; k < 4; k++)
        a.h[k] = vorrq_u32(a.h[k], b.h[k]);
    return a;
}
static inline lc_lm lm_andnot(lc_lm a, lc_lm b) {       /* !a && b */
    for (int k = 0; k < 4; k++)
        a.h[k] = vbicq_u32(b.h[k], a.h[k]);
    return a;
}
static inline lc_lm lm_none(void) {
    const uint32x4_t z = vdupq_n_u32(0);
    return (lc_lm){ { z, z, z, z } };
}
static inline bool lm_any(lc_lm m) {
    return vmaxvq_u32(vorrq_u32(vorrq_u32(m.h[0], m.h[1]), vorrq_u32(m.h[2], m.h[3]))) != 0;
}
static inline bool lm_all(lc_lm m) {
    return vminvq_u32(vandq_u32(vandq_u32(m.h[0], m.h[1]), vandq_u32(m.h[2], m.h[3]))) != 0;
}
static inline lc_lv lv_sel(lc_lm m, lc_lv a, lc_lv b) {  /* m ? a : b */
    for (int k = 0; k < 4; k++)
        a.h[k] = vbslq_f32(m.h[k], a.h[k], b.h[k]);
    return a;
}
static inline lc_lv lv_min(lc_lv a, lc_lv b) { return lv_sel(lv_lt(a, b), a, b); }
static inline lc_lv lv_max(lc_lv a, lc_lv b) { return lv_sel(lv_gt(a, b), a, b); }

static inline lc_li li_set1(int32_t v) {
    const int32x4_t x = vdupq_n_s32(v);
    return (lc_li){ { x, x, x, x } };
}
static inline lc_li li_load(const int32_t *p) {
#define LD(k) vld1q_s32(p + 4 * (k))
    return (lc_li)LC_EACH4(LD);
#undef LD
}
static inline void li_store(int32_t *p, lc_li a) {
    for (int k = 0; k < 4; k++)
        vst1q_s32(p + 4 * k, a.h[k]);
}
static inline lc_li li_add(lc_li a, lc_li b) {
    for (int k = 0; k < 4; k++)
        a.h[k] = vaddq_s32(a.h[k], b.h[k]);
    return a;
}
/* max(lo, min(hi, a)): ggml's MAX(lo, MIN(hi, l)). */
static inline lc_li li_clamp(lc_li a, int32_t lo, int32_t hi) {
    const int32x4_t l = vdupq_n_s32(lo), h = vdupq_n_s32(hi);
    for (int k = 0; k < 4; k++)
        a.h[k] = vmaxq_s32(l, vminq_s32(h, a.h[k]));
    return a;
}
static inline lc_li li_sel(lc_lm m, lc_li a, lc_li b) {  /* m ? a : b */
    for (int k = 0; k < 4; k++)
        a.h[k] = vbslq_s32(m.h[k], a.h[k], b.h[k]);
    return a;
}
static inline lc_lv li_to_lv(lc_li a) {                 /* (float)l, exact below 2^24 */
    return (lc_lv){ { vcvtq_f32_s32(a.h[0]), vcvtq_f32_s32(a.h[1]), vcvtq_f32_s32(a.h[2]),
                      vcvtq_f32_s32(a.h[3]) } };
}
/* ggml's nearest_int on every lane: v + 1.5*2^23, then the mantissa bits minus 2^22. */
static inline lc_li lv_nearest(lc_lv v) {
    const float32x4_t magic = vdupq_n_f32(12582912.0f);
    const uint32x4_t mant = vdupq_n_u32(0x007fffff);
    const int32x4_t half = vdupq_n_s32(0x00400000);
    lc_li r;
    for (int k = 0; k < 4; k++)
        r.h[k] = vsubq_s32(vreinterpretq_s32_u32(vandq_u32(
                               vreinterpretq_u32_f32(vaddq_f32(v.h[k], magic)), mant)), half);
    return r;
}

/* A 4x4 transpose of floats: row k of r becomes column k. */
static inline void lc_neon_transpose4(float32x4_t r[4]) {
    const float32x4_t t0 = vtrn1q_f32(r[0], r[1]), t1 = vtrn2q_f32(r[0], r[1]);
    const float32x4_t t2 = vtrn1q_f32(r[2], r[3]), t3 = vtrn2q_f32(r[2], r[3]);
    r[0] = vreinterpretq_f32_f64(vtrn1q_f64(vreinterpretq_f64_f32(t0), vreinterpretq_f64_f32(t2)));
    r[1] = vreinterpretq_f32_f64(vtrn1q_f64(vreinterpretq_f64_f32(t1), vreinterpretq_f64_f32(t3)));
    r[2] = vreinterpretq_f32_f64(vtrn2q_f64(vreinterpretq_f64_f32(t0), vreinterpretq_f64_f32(t2)));
    r[3] = vreinterpretq_f32_f64(vtrn2q_f64(vreinterpretq_f64_f32(t1), vreinterpretq_f64_f32(t3)));
}

/* xt[i*LC_LANES + r] = x[r*len + i] for the LC_LANES rows of `len` floats at x (len a
 * multiple of 4): lane r then walks row r. */
static inline void lv_transpose_in(const float *x, int len, float *xt) {
    for (int r0 = 0; r0 < LC_LANES; r0 += 4) {
        for (int c = 0; c < len; c += 4) {
            float32x4_t r[4];
            for (int k = 0; k < 4; k++)
                r[k] = vld1q_f32(x + (size_t)(r0 + k) * (size_t)len + (size_t)c);
            lc_neon_transpose4(r);
            for (int k = 0; k < 4; k++)
                vst1q_f32(xt + (c + k) * LC_LANES + r0, r[k]);
        }
    }
}

/* out[r*len + i] = lt[i*LC_LANES + r] as a byte (values 0..255): the levels back in
 * element order. */
static inline void li_transpose_out_u8(const int32_t *lt, int len, uint8_t *out) {
    for (int i = 0; i < len; i++) {
        const int32_t *row = lt + i * LC_LANES;
        for (int r = 0; r < LC_LANES; r++)
            out[r * len + i] = (uint8_t)row[r];
    }
}

#endif
