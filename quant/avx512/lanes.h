/* quant/avx512/lanes.h: private to quant/avx512/. The lane vocabulary of quant/lanes.h
 * for AVX-512 (F, BW, VL): LC_LANES = 32 lanes as two __m512, so that every step issues
 * two independent instructions (as quant/avx2/lanes.h does with two __m256), and masks
 * in opmask registers.
 *
 * Each operation is the one IEEE operation its name says, correctly rounded, on every
 * lane (the folder is built with -ffp-contract=off and nothing here fuses a multiply with
 * an add; the instructions' embedded rounding is never used, so MXCSR's round to nearest
 * even applies). Comparisons are C's: false when either side is NaN, except lv_ne, which
 * is C's !=. lv_min/lv_max are `a < b ? a : b` and `a > b ? a : b` (vminps/vmaxps return
 * their second operand when the comparison is false). Only AVX-512F instructions are used
 * on zmm (no DQ: the logic on floats goes through the integer forms). */
#ifndef LC_QUANT_AVX512_LANES_H
#define LC_QUANT_AVX512_LANES_H

#include <immintrin.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "quant/avx2/transpose.h"

#define LC_LANES 32
#define LC_LANES_ALIGN _Alignas(64)

typedef struct { __m512 h[2]; } lc_lv;       /* 32 floats */
typedef struct { __m512i h[2]; } lc_li;      /* 32 int32 */
typedef struct { __mmask16 h[2]; } lc_lm;    /* 32 mask bits */

#define LC_LV2(op, a, b) ((lc_lv){ { op((a).h[0], (b).h[0]), op((a).h[1], (b).h[1]) } })

static inline lc_lv lv_load(const float *p) {          /* p: LC_LANES_ALIGN */
    return (lc_lv){ { _mm512_load_ps(p), _mm512_load_ps(p + 16) } };
}
static inline void lv_store(float *p, lc_lv a) {
    _mm512_store_ps(p, a.h[0]);
    _mm512_store_ps(p + 16, a.h[1]);
}
static inline lc_lv lv_set1(float f) {
    const __m512 v = _mm512_set1_ps(f);
    return (lc_lv){ { v, v } };
}
static inline lc_lv lv_add(lc_lv a, lc_lv b) { return LC_LV2(_mm512_add_ps, a, b); }
static inline lc_lv lv_sub(lc_lv a, lc_lv b) { return LC_LV2(_mm512_sub_ps, a, b); }
static inline lc_lv lv_mul(lc_lv a, lc_lv b) { return LC_LV2(_mm512_mul_ps, a, b); }
static inline lc_lv lv_div(lc_lv a, lc_lv b) { return LC_LV2(_mm512_div_ps, a, b); }
static inline lc_lv lv_min(lc_lv a, lc_lv b) { return LC_LV2(_mm512_min_ps, a, b); }
static inline lc_lv lv_max(lc_lv a, lc_lv b) { return LC_LV2(_mm512_max_ps, a, b); }
static inline lc_lv lv_sqrt(lc_lv a) {
    return (lc_lv){ { _mm512_sqrt_ps(a.h[0]), _mm512_sqrt_ps(a.h[1]) } };
}
/* Round to the nearest integer, ties to even (vrndscaleps with scale 0). */
#define LC_ROUND_NEAREST (_MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
static inline lc_lv lv_round(lc_lv a) {
    return (lc_lv){ { _mm512_roundscale_ps(a.h[0], LC_ROUND_NEAREST),
                      _mm512_roundscale_ps(a.h[1], LC_ROUND_NEAREST) } };
}
static inline __m512 lc_avx512_bits(__m512 a, int32_t mask, bool xor) {
    const __m512i m = _mm512_set1_epi32(mask), v = _mm512_castps_si512(a);
    return _mm512_castsi512_ps(xor ? _mm512_xor_si512(v, m) : _mm512_and_si512(v, m));
}
static inline lc_lv lv_abs(lc_lv a) {                   /* fabsf: clears the sign bit */
    return (lc_lv){ { lc_avx512_bits(a.h[0], 0x7fffffff, false),
                      lc_avx512_bits(a.h[1], 0x7fffffff, false) } };
}
static inline lc_lv lv_neg(lc_lv a) {                   /* unary minus: flips the sign bit */
    return (lc_lv){ { lc_avx512_bits(a.h[0], INT32_MIN, true),
                      lc_avx512_bits(a.h[1], INT32_MIN, true) } };
}

#define LC_LM2(a, b, pred)                                                                 \
    ((lc_lm){ { _mm512_cmp_ps_mask((a).h[0], (b).h[0], pred),                             \
                _mm512_cmp_ps_mask((a).h[1], (b).h[1], pred) } })
static inline lc_lm lv_lt(lc_lv a, lc_lv b) { return LC_LM2(a, b, _CMP_LT_OQ); }
static inline lc_lm lv_gt(lc_lv a, lc_lv b) { return LC_LM2(a, b, _CMP_GT_OQ); }
static inline lc_lm lv_eq(lc_lv a, lc_lv b) { return LC_LM2(a, b, _CMP_EQ_OQ); }
static inline lc_lm lv_ne(lc_lv a, lc_lv b) { return LC_LM2(a, b, _CMP_NEQ_UQ); }
static inline lc_lm lv_isnan(lc_lv a) { return LC_LM2(a, a, _CMP_UNORD_Q); }
static inline lc_lm lm_and(lc_lm a, lc_lm b) {
    return (lc_lm){ { (__mmask16)(a.h[0] & b.h[0]), (__mmask16)(a.h[1] & b.h[1]) } };
}
static inline lc_lm lm_or(lc_lm a, lc_lm b) {
    return (lc_lm){ { (__mmask16)(a.h[0] | b.h[0]), (__mmask16)(a.h[1] | b.h[1]) } };
}
static inline lc_lm lm_andnot(lc_lm a, lc_lm b) {       /* !a && b */
    return (lc_lm){ { (__mmask16)(~a.h[0] & b.h[0]), (__mmask16)(~a.h[1] & b.h[1]) } };
}
static inline lc_lm lm_none(void) { return (lc_lm){ { 0, 0 } }; }
static inline bool lm_any(lc_lm m) { return (m.h[0] | m.h[1]) != 0; }
static inline bool lm_all(lc_lm m) { return (m.h[0] & m.h[1]) == 0xffff; }
static inline lc_lv lv_sel(lc_lm m, lc_lv a, lc_lv b) {  /* m ? a : b */
    return (lc_lv){ { _mm512_mask_blend_ps(m.h[0], b.h[0], a.h[0]),
                      _mm512_mask_blend_ps(m.h[1], b.h[1], a.h[1]) } };
}

static inline lc_li li_set1(int32_t v) {
    const __m512i x = _mm512_set1_epi32(v);
    return (lc_li){ { x, x } };
}
static inline lc_li li_load(const int32_t *p) {         /* p: LC_LANES_ALIGN */
    return (lc_li){ { _mm512_load_si512(p), _mm512_load_si512(p + 16) } };
}
static inline void li_store(int32_t *p, lc_li a) {
    _mm512_store_si512(p, a.h[0]);
    _mm512_store_si512(p + 16, a.h[1]);
}
static inline lc_li li_add(lc_li a, lc_li b) {
    return (lc_li){ { _mm512_add_epi32(a.h[0], b.h[0]), _mm512_add_epi32(a.h[1], b.h[1]) } };
}
/* max(lo, min(hi, a)): ggml's MAX(lo, MIN(hi, l)). */
static inline lc_li li_clamp(lc_li a, int32_t lo, int32_t hi) {
    const __m512i l = _mm512_set1_epi32(lo), h = _mm512_set1_epi32(hi);
    return (lc_li){ { _mm512_max_epi32(l, _mm512_min_epi32(h, a.h[0])),
                      _mm512_max_epi32(l, _mm512_min_epi32(h, a.h[1])) } };
}
static inline lc_li li_sel(lc_lm m, lc_li a, lc_li b) {  /* m ? a : b */
    return (lc_li){ { _mm512_mask_blend_epi32(m.h[0], b.h[0], a.h[0]),
                      _mm512_mask_blend_epi32(m.h[1], b.h[1], a.h[1]) } };
}
static inline lc_lv li_to_lv(lc_li a) {                 /* (float)l, exact below 2^24 */
    return (lc_lv){ { _mm512_cvtepi32_ps(a.h[0]), _mm512_cvtepi32_ps(a.h[1]) } };
}
/* ggml's nearest_int on every lane: v + 1.5*2^23, then the mantissa bits minus 2^22. */
static inline lc_li lv_nearest(lc_lv v) {
    const __m512 magic = _mm512_set1_ps(12582912.0f);
    const __m512i mant = _mm512_set1_epi32(0x007fffff), half = _mm512_set1_epi32(0x00400000);
    lc_li r;
    for (int k = 0; k < 2; k++)
        r.h[k] = _mm512_sub_epi32(
            _mm512_and_si512(_mm512_castps_si512(_mm512_add_ps(v.h[k], magic)), mant), half);
    return r;
}

/* A 16x16 transpose of floats: row k of r becomes column k. */
static inline void lc_avx512_transpose16_ps(__m512 r[16]) {
    __m512 t[16];
    for (int k = 0; k < 16; k += 2) {
        t[k] = _mm512_unpacklo_ps(r[k], r[k + 1]);
        t[k + 1] = _mm512_unpackhi_ps(r[k], r[k + 1]);
    }
    for (int k = 0; k < 16; k += 4) {
        r[k] = _mm512_shuffle_ps(t[k], t[k + 2], 0x44);
        r[k + 1] = _mm512_shuffle_ps(t[k], t[k + 2], 0xee);
        r[k + 2] = _mm512_shuffle_ps(t[k + 1], t[k + 3], 0x44);
        r[k + 3] = _mm512_shuffle_ps(t[k + 1], t[k + 3], 0xee);
    }
    for (int h = 0; h < 16; h += 8) {
        for (int k = 0; k < 4; k++) {
            t[h + k] = _mm512_shuffle_f32x4(r[h + k], r[h + k + 4], 0x88);
            t[h + k + 4] = _mm512_shuffle_f32x4(r[h + k], r[h + k + 4], 0xdd);
        }
    }
    for (int k = 0; k < 8; k++) {
        r[k] = _mm512_shuffle_f32x4(t[k], t[k + 8], 0x88);
        r[k + 8] = _mm512_shuffle_f32x4(t[k], t[k + 8], 0xdd);
    }
}

/* xt[i*LC_LANES + r] = x[r*len + i] for the LC_LANES rows of `len` floats at x (len a
 * multiple of 16): lane r then walks row r. */
static inline void lv_transpose_in(const float *x, int len, float *xt) {
    for (int r0 = 0; r0 < LC_LANES; r0 += 16) {
        for (int c = 0; c < len; c += 16) {
            __m512 r[16];
            for (int k = 0; k < 16; k++)
                r[k] = _mm512_loadu_ps(x + (size_t)(r0 + k) * (size_t)len + (size_t)c);
            lc_avx512_transpose16_ps(r);
            for (int k = 0; k < 16; k++)
                _mm512_store_ps(xt + (c + k) * LC_LANES + r0, r[k]);
        }
    }
}

/* The 32 int32 of row i (each 0..255) as 32 bytes: lanes 0..15 low, 16..31 high. */
static inline __m256i lc_avx512_lane_bytes(const int32_t *p) {
    const __m128i lo = _mm512_cvtepi32_epi8(_mm512_load_si512(p));
    const __m128i hi = _mm512_cvtepi32_epi8(_mm512_load_si512(p + 16));
    return _mm256_inserti128_si256(_mm256_castsi128_si256(lo), hi, 1);
}

/* out[r*len + i] = lt[i*LC_LANES + r] as a byte, for len 16 or 32 and values 0..255: the
 * levels back in element order. Each group of 16 rows is one byte transpose, lanes 0..15
 * in the low halves and 16..31 in the high halves. */
static inline void li_transpose_out_u8(const int32_t *lt, int len, uint8_t *out) {
    __m256i t[2][16];
    for (int c = 0; c < len / 16; c++) {
        for (int i = 0; i < 16; i++)
            t[c][i] = lc_avx512_lane_bytes(lt + (16 * c + i) * LC_LANES);
        lc_x86_transpose16_epi8(t[c]);
    }
    for (int k = 0; k < 16; k++) {
        if (len > 16) {
            _mm256_storeu_si256((__m256i *)(void *)(out + 32 * k),
                                _mm256_permute2x128_si256(t[0][k], t[1][k], 0x20));
            _mm256_storeu_si256((__m256i *)(void *)(out + 32 * (16 + k)),
                                _mm256_permute2x128_si256(t[0][k], t[1][k], 0x31));
        } else {
            _mm_storeu_si128((__m128i *)(void *)(out + 16 * k), _mm256_castsi256_si128(t[0][k]));
            _mm_storeu_si128((__m128i *)(void *)(out + 16 * (16 + k)),
                             _mm256_extracti128_si256(t[0][k], 1));
        }
    }
}

#endif
