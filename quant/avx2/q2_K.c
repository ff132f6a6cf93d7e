/* quant/avx2/q2_K.c: Q2_K with AVX2, byte-identical to the scalar reference
 * (quant/ref_k.c).
 *
 * Quantize: the lane kernel of quant/lanes.h (lanes_q2_K_group), one super-block per
 * group, each of its 16 sub-blocks of 16 in its own lane running make_qkx2_quants.
 * Dequantize: x = dl*q - ml per sub-block of 16, a multiply then a subtract, as in ref. */
#include <immintrin.h>
#include <stdint.h>

#include "quant/avx2/kernels.h"
#include "quant/avx2/lanes.h"
#include "quant/lanes.h"

void lc_q2_K_quantize_avx2(const float *restrict x, void *restrict y, size_t n) {
    lanes_q2_K_quantize(x, y, n);
}

/* y[0..15] = dl*q - ml for the 16 levels (bytes 0..3) in q. */
static inline void q2_K_store16(float *y, __m128i q, float dl, float ml) {
    const __m256 d = _mm256_set1_ps(dl), m = _mm256_set1_ps(ml);
    for (int k = 0; k < 2; k++) {
        const __m256 v = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(k ? _mm_srli_si128(q, 8) : q));
        _mm256_storeu_ps(y + 8 * k, _mm256_sub_ps(_mm256_mul_ps(d, v), m));
    }
}

void lc_q2_K_dequantize_avx2(const void *restrict vx, float *restrict y, size_t n) {
    const lc_block_q2_K *x = vx;
    const __m256i three = _mm256_set1_epi8(3);
    for (size_t b = 0; b < n / LC_QK_K; b++) {
        const float d = lc_q_f16_to_f32(x[b].d), min = lc_q_f16_to_f32(x[b].dmin);
        const uint8_t *q = x[b].qs, *sc = x[b].scales;
        for (int j = 0; j < LC_QK_K; j += 128, q += 32) {
            const __m256i qv = _mm256_loadu_si256((const __m256i *)(const void *)q);
            for (int shift = 0; shift < 8; shift += 2, sc += 2, y += 32) {
                /* Bytes shifted as 16-bit words, then masked: no bits cross a byte. */
                const __m256i v = _mm256_and_si256(_mm256_srli_epi16(qv, shift), three);
                q2_K_store16(y, _mm256_castsi256_si128(v), d * (sc[0] & 0xf), min * (sc[0] >> 4));
                q2_K_store16(y + 16, _mm256_extracti128_si256(v, 1), d * (sc[1] & 0xf),
                             min * (sc[1] >> 4));
            }
        }
    }
}
