/* quant/avx2/q5_0.c: Q5_0 with AVX2, byte-identical to the scalar reference (quant/ref.c).
 * Built with the folder's flags (quant/avx2/kernels.h); shared steps are in simd.h.
 *
 * Q5_0 (22 B): | d:2 | qh:4 | qs[16] |  low nibbles as Q4_0; bit j of the u32 qh is
 * bit 4 of q[j];  x = d*(q - 16)
 *
 * d = v/-16 where v is the signed value of the first element of largest magnitude
 * (lc_avx2_signed_extreme32); u = (uint8_t)min(31, (int8_t)trunc(x*id + 16.5)).
 * Blocks holding a NaN go to the reference, whose search skips NaN. */
#include <immintrin.h>
#include <stdint.h>

#include "libconvert/bytes.h"
#include "quant/avx2/kernels.h"
#include "quant/avx2/simd.h"
#include "quant/blocks.h"
#include "quant/quant.h"
#include "quant/quant_impl.h"

/* min(31, (int8_t)trunc(x*id + 16.5)) on 8 lanes; its low byte is the reference's u. */
static inline __m256i q5_0_q(__m256 v, __m256 vid) {
    const __m256 t = _mm256_add_ps(_mm256_mul_ps(v, vid), _mm256_set1_ps(16.5f));
    return _mm256_min_epi32(lc_avx2_trunc_i8(t), _mm256_set1_epi32(31));
}

void lc_q5_0_quantize_avx2(const float *restrict x, void *restrict vy, size_t n) {
    lc_block_q5_0 *y = vy;
    const __m256i nib = _mm256_set1_epi32(0x0f);
    for (size_t b = 0; b < n / LC_QK5_0; b++, x += LC_QK5_0) {
        __m256 v[4];
        for (int k = 0; k < 4; k++)
            v[k] = _mm256_loadu_ps(x + 8 * k);
        if (lc_avx2_any_nan32(v[0], v[1], v[2], v[3])) {
            lc_q5_0_quantize_ref(x, &y[b], LC_QK5_0);
            continue;
        }
        const float d = lc_avx2_signed_extreme32(v[0], v[1], v[2], v[3], x) / -16.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[b].d = lc_avx2_scale_f16(d);
        const __m256 vid = _mm256_set1_ps(id);
        __m256i q[4];
        for (int k = 0; k < 4; k++)
            q[k] = q5_0_q(v[k], vid);
        lc_store_le32(y[b].qh, lc_avx2_bit4_mask32(q[0], q[1], q[2], q[3]));
        lc_avx2_store_nibbles(y[b].qs, _mm256_and_si256(q[0], nib), _mm256_and_si256(q[1], nib),
                              _mm256_and_si256(q[2], nib), _mm256_and_si256(q[3], nib));
    }
}

void lc_q5_0_dequantize_avx2(const void *restrict vx, float *restrict y, size_t n) {
    const lc_block_q5_0 *x = vx;
    const __m256i sixteen = _mm256_set1_epi32(16);
    for (size_t b = 0; b < n / LC_QK5_0; b++, y += LC_QK5_0) {
        const __m256 d = _mm256_set1_ps(lc_q_f16_to_f32(x[b].d));
        const uint32_t qh = lc_load_le32(x[b].qh);
        __m256i q[4];
        lc_avx2_load_nibbles(x[b].qs, q);
        for (int k = 0; k < 4; k++) {
            const __m256i v = _mm256_sub_epi32(_mm256_or_si256(q[k], lc_avx2_qh_bit4(qh, k)),
                                               sixteen);
            _mm256_storeu_ps(y + 8 * k, _mm256_mul_ps(_mm256_cvtepi32_ps(v), d));
        }
    }
}
