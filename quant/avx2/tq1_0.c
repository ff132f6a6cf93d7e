/* quant/avx2/tq1_0.c: TQ1_0 dequantize with AVX2, bit-identical to the reference
 * (quant/ref_dq.c). Digit n of byte q is ((uint8_t)(q * 3^n) * 3) >> 8, computed on 16
 * bytes at once in 16-bit lanes (q * 81 < 2^15, and (q * 3^n & 0xff) * 3 < 2^10), then
 * x = (float)(digit - 1) * d. */
#include <immintrin.h>

#include "quant/avx2/kernels.h"
#include "quant/blocks.h"
#include "quant/quant_impl.h"

/* digit - 1 for the 16 u16 lanes q, each multiplied first by its lane of pow (3^n). */
static inline __m256i trits(__m256i q, __m256i pow) {
    const __m256i v = _mm256_and_si256(_mm256_mullo_epi16(q, pow), _mm256_set1_epi16(0xff));
    const __m256i t = _mm256_srli_epi16(_mm256_mullo_epi16(v, _mm256_set1_epi16(3)), 8);
    return _mm256_sub_epi16(t, _mm256_set1_epi16(1));
}

/* y[0..15] = (float)t[j] * d for the 16 int16 lanes t. */
static inline void store16(float *y, __m256i t, __m256 d) {
    const __m256 lo = _mm256_cvtepi32_ps(_mm256_cvtepi16_epi32(_mm256_castsi256_si128(t)));
    const __m256 hi = _mm256_cvtepi32_ps(_mm256_cvtepi16_epi32(_mm256_extracti128_si256(t, 1)));
    _mm256_storeu_ps(y, _mm256_mul_ps(lo, d));
    _mm256_storeu_ps(y + 8, _mm256_mul_ps(hi, d));
}

static inline __m256i load16_u16(const uint8_t *p) {
    return _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(const void *)p));
}

void lc_tq1_0_dequantize_avx2(const void *restrict vx, float *restrict y, size_t n) {
    const lc_block_tq1_0 *x = vx;
    static const int16_t pow3[5] = { 1, 3, 9, 27, 81 };
    const __m256i pow_qh = _mm256_setr_epi16(1, 1, 1, 1, 3, 3, 3, 3, 9, 9, 9, 9, 27, 27, 27, 27);
    for (size_t b = 0; b < n / LC_QK_K; b++) {
        const __m256 d = _mm256_set1_ps(lc_q_f16_to_f32(x[b].d));
        const __m256i q0 = load16_u16(x[b].qs), q1 = load16_u16(x[b].qs + 16);
        const __m256i q2 = load16_u16(x[b].qs + 32);
        for (int t = 0; t < 5; t++, y += 32) {          /* qs[0..31]: values 32t + m */
            const __m256i pow = _mm256_set1_epi16(pow3[t]);
            store16(y, trits(q0, pow), d);
            store16(y + 16, trits(q1, pow), d);
        }
        for (int t = 0; t < 5; t++, y += 16)            /* qs[32..47]: 160 + 16t + m */
            store16(y, trits(q2, _mm256_set1_epi16(pow3[t])), d);
        /* qh[0..3]: value 240 + 4t + j is digit t of qh[j] */
        const uint8_t *h = x[b].qh;
        const __m256i qh = _mm256_setr_epi16(h[0], h[1], h[2], h[3], h[0], h[1], h[2], h[3],
                                             h[0], h[1], h[2], h[3], h[0], h[1], h[2], h[3]);
        store16(y, trits(qh, pow_qh), d);
        y += 16;
    }
}
