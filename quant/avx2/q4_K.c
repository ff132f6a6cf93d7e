/* quant/avx2/q4_K.c: Q4_K with AVX2, byte-identical to the scalar reference
 * (quant/ref_k.c). Built with the folder's flags (quant/avx2/kernels.h).
 *
 * Quantize: the lane kernel of quant/lanes.h over this folder's 16-lane vocabulary
 * (quant/avx2/lanes.h): two super-blocks per group, each of the 16 sub-blocks in its own
 * lane running the reference's scale search.
 * Dequantize: x = d1*q - m1 per sub-block, a multiply then a subtract, as in ref. */
#include <immintrin.h>
#include <stdint.h>

#include "quant/avx2/kernels.h"
#include "quant/avx2/lanes.h"
#include "quant/lanes.h"

void lc_q4_K_quantize_avx2(const float *restrict x, void *restrict y, size_t n) {
    lanes_q4_K_quantize(x, y, n);
}

void lc_q4_K_dequantize_avx2(const void *restrict vx, float *restrict y, size_t n) {
    const lc_block_q4_K *x = vx;
    const __m256i nib = _mm256_set1_epi8(0x0f);
    for (size_t b = 0; b < n / LC_QK_K; b++) {
        const float d = lc_q_f16_to_f32(x[b].d), dmin = lc_q_f16_to_f32(x[b].dmin);
        const uint8_t *q = x[b].qs;
        for (int s = 0; s < 8; s += 2, q += 32, y += 64) {
            uint8_t sc, mn;
            lanes_scale_min_k4(s, x[b].scales, &sc, &mn);
            const __m256 d1 = _mm256_set1_ps(d * sc), m1 = _mm256_set1_ps(dmin * mn);
            lanes_scale_min_k4(s + 1, x[b].scales, &sc, &mn);
            const __m256 d2 = _mm256_set1_ps(d * sc), m2 = _mm256_set1_ps(dmin * mn);
            const __m256i qv = _mm256_loadu_si256((const __m256i *)(const void *)q);
            const __m256i lo = _mm256_and_si256(qv, nib);
            const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(qv, 4), nib);
            for (int k = 0; k < 4; k++) {
                const __m128i l8 = k < 2 ? _mm256_castsi256_si128(lo) : _mm256_extracti128_si256(lo, 1);
                const __m128i h8 = k < 2 ? _mm256_castsi256_si128(hi) : _mm256_extracti128_si256(hi, 1);
                const __m128i ls = k & 1 ? _mm_srli_si128(l8, 8) : l8;
                const __m128i hs = k & 1 ? _mm_srli_si128(h8, 8) : h8;
                const __m256 lf = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(ls));
                const __m256 hf = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(hs));
                _mm256_storeu_ps(y + 8 * k, _mm256_sub_ps(_mm256_mul_ps(d1, lf), m1));
                _mm256_storeu_ps(y + 32 + 8 * k, _mm256_sub_ps(_mm256_mul_ps(d2, hf), m2));
            }
        }
    }
}
