/* quant/avx2/lanes.h: private to quant/avx2/. The lane vocabulary of quant/lanes.h for
 * AVX2: LC_LANES = 16 lanes as two __m256, so that every step of a lane kernel issues
 * two independent instructions (the searches are long chains of dependent adds; two
 * chains keep the adders busy).
 *
 * Each operation is the one IEEE operation its name says, correctly rounded, on every
 * lane (the folder is built with -ffp-contract=off, and nothing here fuses a multiply
 * with an add). Comparisons are C's: false when either side is NaN, except lv_ne, which
 * is C's != (true for NaN). lv_min/lv_max are the reference's `a < b ? a : b` and
 * `a > b ? a : b` (vminps/vmaxps return their second operand when the comparison is
 * false: NaN, or equal values such as -0 and +0). */
#ifndef LC_QUANT_AVX2_LANES_H
#define LC_QUANT_AVX2_LANES_H

#include <immintrin.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "quant/avx2/transpose.h"

#define LC_LANES 16
#define LC_LANES_ALIGN _Alignas(32)

typedef struct { __m256 h[2]; } lc_lv;    /* 16 floats */
typedef struct { __m256i h[2]; } lc_li;   /* 16 int32 */
typedef struct { __m256 h[2]; } lc_lm;    /* 16 masks: all ones or all zeros */

#define LC_LV2(op, a, b) ((lc_lv){ { op((a).h[0], (b).h[0]), op((a).h[1], (b).h[1]) } })

static inline lc_lv lv_load(const float *p) {          /* p: LC_LANES_ALIGN */
    return (lc_lv){ { _mm256_load_ps(p), _mm256_load_ps(p + 8) } };
}
static inline void lv_store(float *p, lc_lv a) {
    _mm256_store_ps(p, a.h[0]);
    _mm256_store_ps(p + 8, a.h[1]);
}
static inline lc_lv lv_set1(float f) {
    const __m256 v = _mm256_set1_ps(f);
    return (lc_lv){ { v, v } };
}
static inline lc_lv lv_add(lc_lv a, lc_lv b) { return LC_LV2(_mm256_add_ps, a, b); }
static inline lc_lv lv_sub(lc_lv a, lc_lv b) { return LC_LV2(_mm256_sub_ps, a, b); }
static inline lc_lv lv_mul(lc_lv a, lc_lv b) { return LC_LV2(_mm256_mul_ps, a, b); }
static inline lc_lv lv_div(lc_lv a, lc_lv b) { return LC_LV2(_mm256_div_ps, a, b); }
static inline lc_lv lv_min(lc_lv a, lc_lv b) { return LC_LV2(_mm256_min_ps, a, b); }
static inline lc_lv lv_max(lc_lv a, lc_lv b) { return LC_LV2(_mm256_max_ps, a, b); }
static inline lc_lv lv_sqrt(lc_lv a) {
    return (lc_lv){ { _mm256_sqrt_ps(a.h[0]), _mm256_sqrt_ps(a.h[1]) } };
}
/* Round to the nearest integer, ties to even (roundps with the rounding in the
 * instruction, not MXCSR's). */
#define LC_ROUND_NEAREST (_MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
static inline lc_lv lv_round(lc_lv a) {
    return (lc_lv){ { _mm256_round_ps(a.h[0], LC_ROUND_NEAREST),
                      _mm256_round_ps(a.h[1], LC_ROUND_NEAREST) } };
}
static inline lc_lv lv_abs(lc_lv a) {                   /* fabsf: clears the sign bit */
    const __m256 m = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    return (lc_lv){ { _mm256_and_ps(a.h[0], m), _mm256_and_ps(a.h[1], m) } };
}
static inline lc_lv lv_neg(lc_lv a) {                   /* unary minus: flips the sign bit */
    const __m256 s = _mm256_set1_ps(-0.0f);
    return (lc_lv){ { _mm256_xor_ps(a.h[0], s), _mm256_xor_ps(a.h[1], s) } };
}

#define LC_LM2(a, b, pred)                                                                 \
    ((lc_lm){ { _mm256_cmp_ps((a).h[0], (b).h[0], pred), _mm256_cmp_ps((a).h[1], (b).h[1], pred) } })
static inline lc_lm lv_lt(lc_lv a, lc_lv b) { return LC_LM2(a, b, _CMP_LT_OQ); }
static inline lc_lm lv_gt(lc_lv a, lc_lv b) { return LC_LM2(a, b, _CMP_GT_OQ); }
static inline lc_lm lv_eq(lc_lv a, lc_lv b) { return LC_LM2(a, b, _CMP_EQ_OQ); }
static inline lc_lm lv_ne(lc_lv a, lc_lv b) { return LC_LM2(a, b, _CMP_NEQ_UQ); }
static inline lc_lm lv_isnan(lc_lv a) { return LC_LM2(a, a, _CMP_UNORD_Q); }
static inline lc_lm lm_and(lc_lm a, lc_lm b) {
    return (lc_lm){ { _mm256_and_ps(a.h[0], b.h[0]), _mm256_and_ps(a.h[1], b.h[1]) } };
}
static inline lc_lm lm_or(lc_lm a, lc_lm b) {
    return (lc_lm){ { _mm256_or_ps(a.h[0], b.h[0]), _mm256_or_ps(a.h[1], b.h[1]) } };
}
static inline lc_lm lm_andnot(lc_lm a, lc_lm b) {       /* !a && b */
    return (lc_lm){ { _mm256_andnot_ps(a.h[0], b.h[0]), _mm256_andnot_ps(a.h[1], b.h[1]) } };
}
static inline lc_lm lm_none(void) {
    return (lc_lm){ { _mm256_setzero_ps(), _mm256_setzero_ps() } };
}
static inline bool lm_any(lc_lm m) {
    return _mm256_movemask_ps(_mm256_or_ps(m.h[0], m.h[1])) != 0;
}
static inline bool lm_all(lc_lm m) {
    return _mm256_movemask_ps(_mm256_and_ps(m.h[0], m.h[1])) == 0xff;
}
static inline lc_lv lv_sel(lc_lm m, lc_lv a, lc_lv b) {  /* m ? a : b */
    return (lc_lv){ { _mm256_blendv_ps(b.h[0], a.h[0], m.h[0]),
                      _mm256_blendv_ps(b.h[1], a.h[1], m.h[1]) } };
}

static inline lc_li li_set1(int32_t v) {
    const __m256i x = _mm256_set1_epi32(v);
    return (lc_li){ { x, x } };
}
static inline lc_li li_load(const int32_t *p) {         /* p: LC_LANES_ALIGN */
    return (lc_li){ { _mm256_load_si256((const __m256i *)(const void *)p),
                      _mm256_load_si256((const __m256i *)(const void *)(p + 8)) } };
}
static inline void li_store(int32_t *p, lc_li a) {
    _mm256_store_si256((__m256i *)(void *)p, a.h[0]);
    _mm256_store_si256((__m256i *)(void *)(p + 8), a.h[1]);
}
static inline lc_li li_add(lc_li a, lc_li b) {
    return (lc_li){ { _mm256_add_epi32(a.h[0], b.h[0]), _mm256_add_epi32(a.h[1], b.h[1]) } };
}
/* max(lo, min(hi, a)): ggml's MAX(lo, MIN(hi, l)). */
static inline lc_li li_clamp(lc_li a, int32_t lo, int32_t hi) {
    const __m256i l = _mm256_set1_epi32(lo), h = _mm256_set1_epi32(hi);
    return (lc_li){ { _mm256_max_epi32(l, _mm256_min_epi32(h, a.h[0])),
                      _mm256_max_epi32(l, _mm256_min_epi32(h, a.h[1])) } };
}
static inline lc_li li_sel(lc_lm m, lc_li a, lc_li b) {  /* m ? a : b */
    return (lc_li){ { _mm256_castps_si256(_mm256_blendv_ps(_mm256_castsi256_ps(b.h[0]),
                                                           _mm256_castsi256_ps(a.h[0]), m.h[0])),
                      _mm256_castps_si256(_mm256_blendv_ps(_mm256_castsi256_ps(b.h[1]),
                                                           _mm256_castsi256_ps(a.h[1]), m.h[1])) } };
}
static inline lc_lv li_to_lv(lc_li a) {                 /* (float)l, exact below 2^24 */
    return (lc_lv){ { _mm256_cvtepi32_ps(a.h[0]), _mm256_cvtepi32_ps(a.h[1]) } };
}
/* ggml's nearest_int on every lane: v + 1.5*2^23, then the mantissa bits minus 2^22
 * (the same bits as lc_q_nearest_int for every v, NaN and infinities included). */
static inline lc_li lv_nearest(lc_lv v) {
    const __m256 magic = _mm256_set1_ps(12582912.0f);
    const __m256i mant = _mm256_set1_epi32(0x007fffff), half = _mm256_set1_epi32(0x00400000);
    lc_li r;
    for (int k = 0; k < 2; k++)
        r.h[k] = _mm256_sub_epi32(
            _mm256_and_si256(_mm256_castps_si256(_mm256_add_ps(v.h[k], magic)), mant), half);
    return r;
}

/* xt[i*LC_LANES + r] = x[r*len + i] for the LC_LANES rows of `len` floats at x (len a
 * multiple of 8): lane r then walks row r. */
static inline void lv_transpose_in(const float *x, int len, float *xt) {
    for (int r0 = 0; r0 < LC_LANES; r0 += 8) {
        for (int c = 0; c < len; c += 8) {
            __m256 r[8];
            for (int k = 0; k < 8; k++)
                r[k] = _mm256_loadu_ps(x + (size_t)(r0 + k) * (size_t)len + (size_t)c);
            lc_x86_transpose8_ps(r);
            for (int k = 0; k < 8; k++)
                _mm256_store_ps(xt + (c + k) * LC_LANES + r0, r[k]);
        }
    }
}

/* The 16 int32 at p (each 0..255) as 16 bytes. */
static inline __m128i lc_avx2_lane_bytes(const int32_t *p) {
    const __m256i a = _mm256_load_si256((const __m256i *)(const void *)p);
    const __m256i b = _mm256_load_si256((const __m256i *)(const void *)(p + 8));
    const __m256i w = _mm256_permute4x64_epi64(_mm256_packus_epi32(a, b), 0xd8);
    return _mm_packus_epi16(_mm256_castsi256_si128(w), _mm256_extracti128_si256(w, 1));
}

/* out[r*len + i] = lt[i*LC_LANES + r] as a byte, for len 16 or 32 and values 0..255: the
 * levels back in element order. Rows 0..15 go to the low halves, 16..31 to the high
 * halves of one byte transpose. */
static inline void li_transpose_out_u8(const int32_t *lt, int len, uint8_t *out) {
    __m256i r[16];
    for (int i = 0; i < 16; i++) {
        const __m128i lo = lc_avx2_lane_bytes(lt + i * LC_LANES);
        const __m128i hi = len > 16 ? lc_avx2_lane_bytes(lt + (16 + i) * LC_LANES)
                                    : _mm_setzero_si128();
        r[i] = _mm256_inserti128_si256(_mm256_castsi128_si256(lo), hi, 1);
    }
    lc_x86_transpose16_epi8(r);
    for (int k = 0; k < LC_LANES; k++) {
        if (len > 16)
            _mm256_storeu_si256((__m256i *)(void *)(out + 32 * k), r[k]);
        else
            _mm_storeu_si128((__m128i *)(void *)(out + 16 * k), _mm256_castsi256_si128(r[k]));
    }
}

#endif
