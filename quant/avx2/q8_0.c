/* quant/avx2/q8_0.c: Q8_0 with AVX2, byte-identical to the scalar reference (quant/ref.c).
 * Built with the folder's flags (quant/avx2/kernels.h).
 *
 * Q8_0 (34 B): | d:2 | qs[32]: int8 |     d = amax/127, id = 1/d, q = roundf(x*id)
 *
 * Why each step gives the reference's bits:
 *   amax   vmaxps(a, b) is `a > b ? a : b`, the reference's MAX operand order.
 *          Without NaN this max is associative and commutative (fabsf clears the
 *          sign, so +-0 cannot differ), so lane-wise folding then a horizontal
 *          max equals the sequential fold, infinities included (lc_avx2_max32). A
 *          NaN restarts the reference's fold (ref.c "Non-finite inputs"), which
 *          lanes cannot mimic: blocks holding a NaN go to lc_q8_0_quantize_ref.
 *   d, id  computed in scalar f32 exactly as the reference does.
 *   round  (int)roundf(v) (ties away from zero) as trunc(v + copysign(0.49999997, v)),
 *          0.49999997 being the float just below 0.5: below 2^23 a value at least
 *          half-way to the next integer away from zero is carried past it by the add
 *          (a tie k + 0.5 + 0.49999997 rounds up to k + 1) and anything less is not;
 *          from 2^23 on, v is an integer and the add rounds back to v. Only the integer
 *          is kept, so the sign of a zero does not matter. Checked for all 2^32 floats
 *          against t = trunc(v), t += copysign(1, v) if |v - t| >= 0.5 (itself checked
 *          against roundf), NaN and infinities included, when written.
 *   cast   vcvttps2dq gives INT32_MIN for NaN and out-of-range values, which is
 *          lc_q_trunc_i32 (gcc's cvttss2si); the low byte is kept as lc_q_trunc_i8.
 *   scale  lc_q_scale_f16, the shared converter. */
#include <immintrin.h>
#include <math.h>

#include "quant/avx2/kernels.h"
#include "quant/avx2/simd.h"
#include "quant/avx2/transpose.h"
#include "quant/blocks.h"
#include "quant/quant.h"
#include "quant/quant_impl.h"

/* (int32_t)roundf(v) on 8 lanes, as vcvttps2dq of the rounded value would give it (see
 * the header comment). */
static inline __m256i round_away_i32(__m256 v) {
    const __m256 half = _mm256_or_ps(_mm256_and_ps(v, _mm256_set1_ps(-0.0f)),
                                     _mm256_set1_ps(0.49999997f));
    return _mm256_cvttps_epi32(_mm256_add_ps(v, half));
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

/* One block the plain way: a horizontal max and scalar d, id. Blocks holding a NaN, and
 * the blocks past the last whole group of eight. */
static void quantize_one(const float *restrict x, lc_block_q8_0 *restrict y) {
    const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    const __m256 v0 = _mm256_loadu_ps(x), v1 = _mm256_loadu_ps(x + 8);
    const __m256 v2 = _mm256_loadu_ps(x + 16), v3 = _mm256_loadu_ps(x + 24);
    if (lc_avx2_any_nan32(v0, v1, v2, v3)) {
        lc_q8_0_quantize_ref(x, y, LC_QK8_0);
        return;
    }
    /* Magnitudes inline, not in an array beside v: with one, gcc 12 copies the block to
     * the stack in 16-byte halves and reloads it whole (a store-forwarding stall per
     * block, a third of the speed). */
    const __m256 a0 = _mm256_and_ps(v0, abs_mask), a1 = _mm256_and_ps(v1, abs_mask);
    const __m256 a2 = _mm256_and_ps(v2, abs_mask), a3 = _mm256_and_ps(v3, abs_mask);
    const float amax = lc_avx2_max32(a0, a1, a2, a3);
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y->d = lc_avx2_scale_f16(d);
    const __m256 vid = _mm256_set1_ps(id);
    /* Four named results, not an array: an array of them is spilled and reloaded too. */
    const __m256i q0 = round_away_i32(_mm256_mul_ps(v0, vid));
    const __m256i q1 = round_away_i32(_mm256_mul_ps(v1, vid));
    const __m256i q2 = round_away_i32(_mm256_mul_ps(v2, vid));
    const __m256i q3 = round_away_i32(_mm256_mul_ps(v3, vid));
    _mm256_storeu_si256((__m256i *)(void *)y->qs, low_bytes(q0, q1, q2, q3));
}

/* Eight blocks at once: their maxima folded lane-wise and transposed so that lane b holds
 * block b's amax, then d and id for all eight in one vdivps each (IEEE division, the
 * scalar's bits) and their f16 scales in one vcvtps2ph. Per block, this saves the
 * horizontal max and two dependent scalar divisions: the latency that bounded the loop. */
static void quantize_eight(const float *restrict x, lc_block_q8_0 *restrict y) {
    const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    __m256 m[8], nan = _mm256_setzero_ps();
    for (int b = 0; b < 8; b++) {
        const float *xb = x + b * LC_QK8_0;
        const __m256 v0 = _mm256_loadu_ps(xb), v1 = _mm256_loadu_ps(xb + 8);
        const __m256 v2 = _mm256_loadu_ps(xb + 16), v3 = _mm256_loadu_ps(xb + 24);
        nan = _mm256_or_ps(nan, _mm256_or_ps(_mm256_cmp_ps(v0, v1, _CMP_UNORD_Q),
                                             _mm256_cmp_ps(v2, v3, _CMP_UNORD_Q)));
        m[b] = _mm256_max_ps(_mm256_max_ps(_mm256_and_ps(v0, abs_mask), _mm256_and_ps(v1, abs_mask)),
                             _mm256_max_ps(_mm256_and_ps(v2, abs_mask), _mm256_and_ps(v3, abs_mask)));
    }
    if (_mm256_movemask_ps(nan)) {      /* a NaN restarts the reference's fold */
        for (int b = 0; b < 8; b++)
            quantize_one(x + b * LC_QK8_0, &y[b]);
        return;
    }
    lc_x86_transpose8_ps(m);
    const __m256 amax = _mm256_max_ps(_mm256_max_ps(_mm256_max_ps(m[0], m[1]), _mm256_max_ps(m[2], m[3])),
                                      _mm256_max_ps(_mm256_max_ps(m[4], m[5]), _mm256_max_ps(m[6], m[7])));
    const __m256 d = _mm256_div_ps(amax, _mm256_set1_ps(127.0f));
    const __m256 id = _mm256_and_ps(_mm256_div_ps(_mm256_set1_ps(1.0f), d),
                                    _mm256_cmp_ps(d, _mm256_setzero_ps(), _CMP_NEQ_OQ));
    /* d holds no NaN, so vcvtps2ph is lc_avx2_scale_f16 on each lane. */
    const __m128i d16 = _mm256_cvtps_ph(d, _MM_FROUND_TO_NEAREST_INT);
    uint16_t dh[8];
    _mm_storeu_si128((__m128i *)(void *)dh, d16);
    for (int b = 0; b < 8; b++) {
        const float *xb = x + b * LC_QK8_0;
        const __m256 vid = _mm256_permutevar8x32_ps(id, _mm256_set1_epi32(b));
        const __m256i q0 = round_away_i32(_mm256_mul_ps(_mm256_loadu_ps(xb), vid));
        const __m256i q1 = round_away_i32(_mm256_mul_ps(_mm256_loadu_ps(xb + 8), vid));
        const __m256i q2 = round_away_i32(_mm256_mul_ps(_mm256_loadu_ps(xb + 16), vid));
        const __m256i q3 = round_away_i32(_mm256_mul_ps(_mm256_loadu_ps(xb + 24), vid));
        y[b].d = dh[b];
        _mm256_storeu_si256((__m256i *)(void *)y[b].qs, low_bytes(q0, q1, q2, q3));
    }
}

void lc_q8_0_quantize_avx2(const float *restrict x, void *restrict vy, size_t n) {
    lc_block_q8_0 *y = vy;
    const size_t nb = n / LC_QK8_0;
    size_t b = 0;
    for (; b + 8 <= nb; b += 8)
        quantize_eight(x + b * LC_QK8_0, &y[b]);
    for (; b < nb; b++)
        quantize_one(x + b * LC_QK8_0, &y[b]);
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
