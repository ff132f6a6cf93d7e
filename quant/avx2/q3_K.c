/* quant/avx2/q3_K.c: Q3_K with AVX2, byte-identical to the scalar reference
 * (quant/ref_k.c).
 *
 * Quantize: the lane kernel of quant/lanes.h (lanes_q3_K_group), one super-block per
 * group, each of its 16 sub-blocks of 16 in its own lane running make_q3_quants.
 * Dequantize: x = dl*(q - 4 + 4*h) per sub-block of 16, q the two bits in qs and h the bit
 * in hmask, one multiply as in ref. */
#include <immintrin.h>
#include <stdint.h>

#include "quant/avx2/kernels.h"
#include "quant/avx2/lanes.h"
#include "quant/lanes.h"

void lc_q3_K_quantize_avx2(const float *restrict x, void *restrict y, size_t n) {
    lanes_q3_K_quantize(x, y, n);
}

/* y[0..15] = dl*q for the 16 signed levels (bytes 0..15) in q. */
static inline void q3_K_store16(float *y, __m128i q, float dl) {
    const __m256 d = _mm256_set1_ps(dl);
    for (int k = 0; k < 2; k++) {
        const __m256 v = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(k ? _mm_srli_si128(q, 8) : q));
        _mm256_storeu_ps(y + 8 * k, _mm256_mul_ps(d, v));
    }
}

void lc_q3_K_dequantize_avx2(const void *restrict vx, float *restrict y, size_t n) {
    const lc_block_q3_K *x = vx;
    const __m256i three = _mm256_set1_epi8(3), four = _mm256_set1_epi8(4);
    for (size_t b = 0; b < n / LC_QK_K; b++) {
        const float d_all = lc_q_f16_to_f32(x[b].d);
        const __m256i hm = _mm256_loadu_si256((const __m256i *)(const void *)x[b].hmask);
        const uint8_t *q = x[b].qs;
        int s = 0;
        unsigned m = 1;
        for (int j = 0; j < LC_QK_K; j += 128, q += 32) {
            const __m256i qv = _mm256_loadu_si256((const __m256i *)(const void *)q);
            for (int shift = 0; shift < 8; shift += 2, m <<= 1, y += 32) {
                const __m256i bit = _mm256_set1_epi8((char)m);
                const __m256i high = _mm256_cmpeq_epi8(_mm256_and_si256(hm, bit), bit);
                /* (q >> shift) & 3, minus 4 where the hmask bit is clear */
                const __m256i lo = _mm256_and_si256(_mm256_srli_epi16(qv, shift), three);
                const __m256i v = _mm256_sub_epi8(lo, _mm256_andnot_si256(high, four));
                q3_K_store16(y, _mm256_castsi256_si128(v),
                             d_all * (float)(lanes_scale_k3(s, x[b].scales) - 32));
                q3_K_store16(y + 16, _mm256_extracti128_si256(v, 1),
                             d_all * (float)(lanes_scale_k3(s + 1, x[b].scales) - 32));
                s += 2;
            }
        }
    }
}
