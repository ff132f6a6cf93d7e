/* quant/avx2/q5_K.c: Q5_K with AVX2, byte-identical to the scalar reference
 * (quant/ref_k.c).
 *
 * Quantize: Q4_K's lane kernel with levels 0..31 and the search's constants -0.5 and 15
 * (quant/lanes.h lanes_k4_group), two super-blocks per group, one sub-block per lane.
 * Dequantize: x = d1*(q + 16*h) - m1 per sub-block, a multiply then a subtract. */
#include <immintrin.h>
#include <stdint.h>

#include "quant/avx2/kernels.h"
#include "quant/avx2/lanes.h"
#include "quant/lanes.h"

void lc_q5_K_quantize_avx2(const float *restrict x, void *restrict y, size_t n) {
    lanes_q5_K_quantize(x, y, n);
}

/* y[0..31] = d*q - m for the 32 levels (0..31) in the bytes of q. */
static inline void q5_K_store32(float *y, __m256i q, __m256 d, __m256 m) {
    const __m128i lo = _mm256_castsi256_si128(q), hi = _mm256_extracti128_si256(q, 1);
    const __m128i part[4] = { lo, _mm_srli_si128(lo, 8), hi, _mm_srli_si128(hi, 8) };
    for (int k = 0; k < 4; k++) {
        const __m256 v = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(part[k]));
        _mm256_storeu_ps(y + 8 * k, _mm256_sub_ps(_mm256_mul_ps(d, v), m));
    }
}

void lc_q5_K_dequantize_avx2(const void *restrict vx, float *restrict y, size_t n) {
    const lc_block_q5_K *x = vx;
    const __m256i nib = _mm256_set1_epi8(0x0f), sixteen = _mm256_set1_epi8(16);
    for (size_t b = 0; b < n / LC_QK_K; b++) {
        const float d = lc_q_f16_to_f32(x[b].d), dmin = lc_q_f16_to_f32(x[b].dmin);
        const __m256i qh = _mm256_loadu_si256((const __m256i *)(const void *)x[b].qh);
        const uint8_t *ql = x[b].qs;
        for (int s = 0; s < 8; s += 2, ql += 32, y += 64) {
            uint8_t sc, mn;
            lanes_scale_min_k4(s, x[b].scales, &sc, &mn);
            const __m256 d1 = _mm256_set1_ps(d * sc), m1 = _mm256_set1_ps(dmin * mn);
            lanes_scale_min_k4(s + 1, x[b].scales, &sc, &mn);
            const __m256 d2 = _mm256_set1_ps(d * sc), m2 = _mm256_set1_ps(dmin * mn);
            const __m256i q = _mm256_loadu_si256((const __m256i *)(const void *)ql);
            /* Bit s of qh[l] is bit 4 of element 32s + l: 16 where set, else 0. */
            const __m256i b1 = _mm256_set1_epi8((char)(1 << s)), b2 = _mm256_set1_epi8((char)(2 << s));
            const __m256i h1 = _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(qh, b1), b1), sixteen);
            const __m256i h2 = _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(qh, b2), b2), sixteen);
            q5_K_store32(y, _mm256_or_si256(_mm256_and_si256(q, nib), h1), d1, m1);
            q5_K_store32(y + 32, _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(q, 4), nib), h2),
                         d2, m2);
        }
    }
}
