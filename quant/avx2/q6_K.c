/* quant/avx2/q6_K.c: Q6_K with AVX2, byte-identical to the scalar reference
 * (quant/ref_k.c). Built with the folder's flags (quant/avx2/kernels.h).
 *
 * Quantize: the lane kernel of quant/lanes.h over this folder's 16-lane vocabulary
 * (quant/avx2/lanes.h): one super-block per group, each of its 16 sub-blocks in its own
 * lane running the reference's scale search.
 * Dequantize: x = (d*sc)*q, two multiplies in the reference's order, 32 levels at a time
 * unpacked from ql and qh with byte shifts and masks. */
#include <immintrin.h>
#include <stdint.h>

#include "quant/avx2/kernels.h"
#include "quant/avx2/lanes.h"
#include "quant/lanes.h"

void lc_q6_K_quantize_avx2(const float *restrict x, void *restrict y, size_t n) {
    lanes_q6_K_quantize(x, y, n);
}

/* (d*sc[lo]) * q for elements 0..15 and (d*sc[hi]) * q for 16..31 of the 32 int8 in q. */
static inline void q6_K_store32(float *y, __m256i q, float d, int sc_lo, int sc_hi) {
    const __m256 dlo = _mm256_set1_ps(d * (float)sc_lo), dhi = _mm256_set1_ps(d * (float)sc_hi);
    const __m128i q0 = _mm256_castsi256_si128(q), q1 = _mm256_extracti128_si256(q, 1);
    const __m128i parts[4] = { q0, _mm_srli_si128(q0, 8), q1, _mm_srli_si128(q1, 8) };
    for (int k = 0; k < 4; k++) {
        const __m256 v = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(parts[k]));
        _mm256_storeu_ps(y + 8 * k, _mm256_mul_ps(k < 2 ? dlo : dhi, v));
    }
}

void lc_q6_K_dequantize_avx2(const void *restrict vx, float *restrict y, size_t n) {
    const lc_block_q6_K *x = vx;
    const __m256i m4 = _mm256_set1_epi8(0x0f), m2 = _mm256_set1_epi8(0x03);
    const __m256i off = _mm256_set1_epi8(32);
    for (size_t b = 0; b < n / LC_QK_K; b++) {
        const float d = lc_q_f16_to_f32(x[b].d);
        const uint8_t *ql = x[b].ql, *qh = x[b].qh;
        const int8_t *sc = x[b].scales;
        for (int j = 0; j < LC_QK_K; j += 128, y += 128, ql += 64, qh += 32, sc += 8) {
            const __m256i a = _mm256_loadu_si256((const __m256i *)(const void *)ql);
            const __m256i c = _mm256_loadu_si256((const __m256i *)(const void *)(ql + 32));
            const __m256i h = _mm256_loadu_si256((const __m256i *)(const void *)qh);
            /* Bytes shifted as 16-bit words, then masked: no bits cross into a byte. */
            const __m256i hi[4] = {
                _mm256_slli_epi16(_mm256_and_si256(h, m2), 4),
                _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 2), m2), 4),
                _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 4), m2), 4),
                _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 6), m2), 4),
            };
            const __m256i lo[4] = {
                _mm256_and_si256(a, m4), _mm256_and_si256(c, m4),
                _mm256_and_si256(_mm256_srli_epi16(a, 4), m4),
                _mm256_and_si256(_mm256_srli_epi16(c, 4), m4),
            };
            for (int k = 0; k < 4; k++)      /* q1..q4: elements 32k + l, scales 2k, 2k+1 */
                q6_K_store32(y + 32 * k, _mm256_sub_epi8(_mm256_or_si256(lo[k], hi[k]), off), d,
                             sc[2 * k], sc[2 * k + 1]);
        }
    }
}
