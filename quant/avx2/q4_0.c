/* quant/avx2/q4_0.c: Q4_0 with AVX2, byte-identical to the scalar reference (quant/ref.c).
 * Built with the folder's flags (quant/avx2/kernels.h); the steps it shares with Q8_0
 * (NaN test, largest magnitude) are in simd.h and argued in q8_0.c.
 *
 * Q4_0 (18 B): | d:2 | qs[16] |  byte j = q[j] | q[j+16] << 4,  x = d*(q-8)
 *
 * d = v/-8 where v is the signed value of the FIRST element of largest magnitude
 * (the reference replaces it only on a strictly larger |x|), and +0 when every
 * element is +-0 (the reference starts from +0: -0 would flip d's sign).
 * q = min(15, (int8_t)trunc(x*id + 8.5)), a separate multiply and add as in ref.
 * Blocks holding a NaN go to the reference, whose search skips NaN. */
#include <immintrin.h>
#include <stdint.h>

#include "quant/avx2/kernels.h"
#include "quant/avx2/simd.h"
#include "quant/blocks.h"
#include "quant/quant.h"
#include "quant/quant_impl.h"

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
        if (lc_avx2_any_nan32(v[0], v[1], v[2], v[3])) {
            lc_q4_0_quantize_ref(x, &y[b], LC_QK4_0);
            continue;
        }
        const float amax = lc_avx2_max32(a[0], a[1], a[2], a[3]);
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
