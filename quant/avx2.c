/* quant/avx2.c: AVX2 kernels, byte-identical to the scalar reference (quant/ref.c).
 * The only translation unit built with -mavx2 -mfma -mf16c (see the Makefile);
 * dispatch.c calls into it only after checking the CPU. Still -ffp-contract=off:
 * every multiply and add below is a separate, correctly rounded IEEE operation.
 *
 * Q8_0 (34 B): | d:2 | qs[32]: int8 |     d = amax/127, id = 1/d, q = roundf(x*id)
 *
 * Why each step gives the reference's bits:
 *   amax   vmaxps(a, b) is `a > b ? a : b`, the reference's MAX operand order.
 *          Without NaN this max is associative and commutative (fabsf clears the
 *          sign, so +-0 cannot differ), so lane-wise folding then a horizontal
 *          max equals the sequential fold, infinities included. A NaN restarts
 *          the reference's fold (ref.c "Non-finite inputs"), which lanes cannot
 *          mimic: blocks holding a NaN go to lc_q8_0_quantize_ref.
 *   d, id  computed in scalar f32 exactly as the reference does.
 *   round  roundf (ties away from zero) as t = trunc(v); if |v - t| >= 0.5 then
 *          t += copysign(1, v). v - trunc(v) is exact for every float, and t+-1 is
 *          exact where it can happen (|v| < 2^23; at or above, v is an integer and
 *          v - t = 0). NaN, infinities and -0 pass through unchanged, as in
 *          roundf; checked against roundf for all 2^32 floats when written.
 *   cast   vcvttps2dq gives INT32_MIN for NaN and out-of-range values, which is
 *          lc_q_trunc_i32 (gcc's cvttss2si); the low byte is kept as lc_q_trunc_i8.
 *   scale  lc_q_scale_f16, the shared converter. */
#include <immintrin.h>
#include <math.h>

#include "quant/blocks.h"
#include "quant/quant.h"
#include "quant/quant_impl.h"

/* roundf on 8 lanes: round half away from zero (see the header comment). */
static inline __m256 round_away(__m256 v) {
    const __m256 sign = _mm256_set1_ps(-0.0f);
    const __m256 t = _mm256_round_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    const __m256 frac = _mm256_andnot_ps(sign, _mm256_sub_ps(v, t));       /* |v - t| */
    const __m256 up = _mm256_cmp_ps(frac, _mm256_set1_ps(0.5f), _CMP_GE_OQ);
    const __m256 one = _mm256_or_ps(_mm256_and_ps(v, sign), _mm256_set1_ps(1.0f));
    /* A blend, not t + (up & one): adding +0 would turn roundf's -0 into +0. */
    return _mm256_blendv_ps(t, _mm256_add_ps(t, one), up);
}

/* The low bytes of four vectors of int32 (lanes 0..31 in order) as 32 int8. */
static inline __m256i low_bytes(__m256i a, __m256i b, __m256i c, __m256i d) {
    const __m256i m = _mm256_set1_epi32(0xff);
    /* Masked to 0..255, the saturating packs keep every value unchanged. */
    const __m256i ab = _mm256_packus_epi32(_mm256_and_si256(a, m), _mm256_and_si256(b, m));
    const __m256i cd = _mm256_packus_epi32(_mm256_and_si256(c, m), _mm256_and_si256(d, m));
    const __m256i abcd = _mm256_packus_epi16(ab, cd);
    /* The packs work per 128-bit half; lane k now sits in dword order 0 4 1 5 2 6 3 7. */
    return _mm256_permutevar8x32_epi32(abcd, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

void lc_q8_0_quantize_avx2(const float *restrict x, void *restrict vy, size_t n) {
    lc_block_q8_0 *y = vy;
    const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    for (size_t b = 0; b < n / LC_QK8_0; b++, x += LC_QK8_0) {
        __m256 v[4];
        for (int k = 0; k < 4; k++)
            v[k] = _mm256_loadu_ps(x + 8 * k);
        const __m256 nan = _mm256_or_ps(
            _mm256_or_ps(_mm256_cmp_ps(v[0], v[0], _CMP_UNORD_Q),
                         _mm256_cmp_ps(v[1], v[1], _CMP_UNORD_Q)),
            _mm256_or_ps(_mm256_cmp_ps(v[2], v[2], _CMP_UNORD_Q),
                         _mm256_cmp_ps(v[3], v[3], _CMP_UNORD_Q)));
        if (_mm256_movemask_ps(nan)) {
            lc_q8_0_quantize_ref(x, &y[b], LC_QK8_0);
            continue;
        }
        __m256 m = _mm256_max_ps(
            _mm256_max_ps(_mm256_and_ps(v[0], abs_mask), _mm256_and_ps(v[1], abs_mask)),
            _mm256_max_ps(_mm256_and_ps(v[2], abs_mask), _mm256_and_ps(v[3], abs_mask)));
        __m128 h = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
        h = _mm_max_ps(h, _mm_movehl_ps(h, h));
        h = _mm_max_ss(h, _mm_movehdup_ps(h));
        const float amax = _mm_cvtss_f32(h);
        const float d = amax / 127.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[b].d = lc_q_scale_f16(d);
        const __m256 vid = _mm256_set1_ps(id);
        __m256i q[4];
        for (int k = 0; k < 4; k++)
            q[k] = _mm256_cvttps_epi32(round_away(_mm256_mul_ps(v[k], vid)));
        _mm256_storeu_si256((__m256i *)(void *)y[b].qs, low_bytes(q[0], q[1], q[2], q[3]));
    }
}

void lc_q8_0_dequantize_avx2(const void *restrict vx, float *restrict y, size_t n) {
    const lc_block_q8_0 *x = vx;
    for (size_t b = 0; b < n / LC_QK8_0; b++, y += LC_QK8_0) {
        const __m256 d = _mm256_set1_ps(lc_q_f16_to_f32(x[b].d));
        for (int k = 0; k < 4; k++) {
            const __m128i q8 = _mm_loadl_epi64((const __m128i *)(const void *)(x[b].qs + 8 * k));
            const __m256 q = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q8));   /* exact */
            _mm256_storeu_ps(y + 8 * k, _mm256_mul_ps(q, d));
        }
    }
}

/* ---- Q4_0 (18 B): | d:2 | qs[16] |  byte j = q[j] | q[j+16] << 4,  x = d*(q-8) ----
 * d = v/-8 where v is the signed value of the FIRST element of largest magnitude
 * (the reference replaces it only on a strictly larger |x|), and +0 when every
 * element is +-0 (the reference starts from +0: -0 would flip d's sign).
 * q = min(15, (int8_t)trunc(x*id + 8.5)), a separate multiply and add as in ref.
 * Blocks holding a NaN go to the reference, whose search skips NaN. */

/* min(15, low byte of (int32)trunc(v) as int8), on 8 lanes: lc_q_trunc_i8 spelled
 * out in full, although with |x*id| <= 8 (or NaN/inf, giving INT32_MIN whose low
 * byte is 0) the sign extension and the byte masks below never change a value. */
static inline __m256i q4_0_q(__m256 v, __m256 vid) {
    const __m256i t = _mm256_cvttps_epi32(_mm256_add_ps(_mm256_mul_ps(v, vid),
                                                        _mm256_set1_ps(8.5f)));
    const __m256i i8 = _mm256_srai_epi32(_mm256_slli_epi32(t, 24), 24);
    return _mm256_min_epi32(i8, _mm256_set1_epi32(15));
}

void lc_q4_0_quantize_avx2(const float *restrict x, void *restrict vy, size_t n) {
    lc_block_q4_0 *y = vy;
    const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    const __m256i lo8 = _mm256_set1_epi32(0xff);
    for (size_t b = 0; b < n / LC_QK4_0; b++, x += LC_QK4_0) {
        __m256 v[4], a[4];
        for (int k = 0; k < 4; k++) {
            v[k] = _mm256_loadu_ps(x + 8 * k);
            a[k] = _mm256_and_ps(v[k], abs_mask);
        }
        const __m256 nan = _mm256_or_ps(
            _mm256_or_ps(_mm256_cmp_ps(v[0], v[0], _CMP_UNORD_Q),
                         _mm256_cmp_ps(v[1], v[1], _CMP_UNORD_Q)),
            _mm256_or_ps(_mm256_cmp_ps(v[2], v[2], _CMP_UNORD_Q),
                         _mm256_cmp_ps(v[3], v[3], _CMP_UNORD_Q)));
        if (_mm256_movemask_ps(nan)) {
            lc_q4_0_quantize_ref(x, &y[b], LC_QK4_0);
            continue;
        }
        const __m256 m = _mm256_max_ps(_mm256_max_ps(a[0], a[1]), _mm256_max_ps(a[2], a[3]));
        __m128 h = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
        h = _mm_max_ps(h, _mm_movehl_ps(h, h));
        h = _mm_max_ss(h, _mm_movehdup_ps(h));
        const float amax = _mm_cvtss_f32(h);
        float max = 0.0f;
        if (amax != 0.0f) {
            const __m256 va = _mm256_set1_ps(amax);
            uint32_t hit = 0;
            for (int k = 0; k < 4; k++)
                hit |= (uint32_t)_mm256_movemask_ps(_mm256_cmp_ps(a[k], va, _CMP_EQ_OQ)) << (8 * k);
            max = x[__builtin_ctz(hit)];         /* hit != 0: amax is one of the |x| */
        }
        const float d = max / -8.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[b].d = lc_q_scale_f16(d);
        const __m256 vid = _mm256_set1_ps(id);
        __m256i byte[2];
        for (int k = 0; k < 2; k++) {            /* elements 8k.. pair with 8k+16.. */
            const __m256i q0 = _mm256_and_si256(q4_0_q(v[k], vid), lo8);
            const __m256i q1 = _mm256_slli_epi32(q4_0_q(v[k + 2], vid), 4);
            byte[k] = _mm256_and_si256(_mm256_or_si256(q0, q1), lo8);
        }
        /* 16 values 0..255: pack to u16 (per 128-bit half), restore order, pack to u8. */
        const __m256i w = _mm256_permute4x64_epi64(_mm256_packus_epi32(byte[0], byte[1]), 0xd8);
        const __m128i bytes = _mm_packus_epi16(_mm256_castsi256_si128(w),
                                               _mm256_extracti128_si256(w, 1));
        _mm_storeu_si128((__m128i *)(void *)y[b].qs, bytes);
    }
}

void lc_q4_0_dequantize_avx2(const void *restrict vx, float *restrict y, size_t n) {
    const lc_block_q4_0 *x = vx;
    const __m128i nib = _mm_set1_epi8(0x0f);
    const __m256i eight = _mm256_set1_epi32(8);
    for (size_t b = 0; b < n / LC_QK4_0; b++, y += LC_QK4_0) {
        const __m256 d = _mm256_set1_ps(lc_q_f16_to_f32(x[b].d));
        const __m128i qs = _mm_loadu_si128((const __m128i *)(const void *)x[b].qs);
        const __m128i lo = _mm_and_si128(qs, nib);                      /* elements 0..15 */
        const __m128i hi = _mm_and_si128(_mm_srli_epi16(qs, 4), nib);   /* 16..31 */
        const __m128i src[4] = { lo, _mm_srli_si128(lo, 8), hi, _mm_srli_si128(hi, 8) };
        for (int k = 0; k < 4; k++) {
            const __m256i q = _mm256_sub_epi32(_mm256_cvtepu8_epi32(src[k]), eight);
            _mm256_storeu_ps(y + 8 * k, _mm256_mul_ps(_mm256_cvtepi32_ps(q), d));
        }
    }
}

const lc_qkernels lc_qk_avx2 = {
    .name = "avx2",
    .quantize = { [LC_DT_Q8_0] = lc_q8_0_quantize_avx2, [LC_DT_Q4_0] = lc_q4_0_quantize_avx2 },
    .dequantize = { [LC_DT_Q8_0] = lc_q8_0_dequantize_avx2,
                    [LC_DT_Q4_0] = lc_q4_0_dequantize_avx2 },
};
