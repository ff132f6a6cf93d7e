/* quant/avx512/q4_0.c: Q4_0 quantize with AVX-512, byte-identical to the scalar
 * reference (quant/ref.c), eight blocks at a time (group32.h); why the steps give the
 * reference's bits: quant/avx512/q8_0.c's header and quant/avx2/q4_0.c's. */
#include <immintrin.h>
#include <stdint.h>

#include "quant/avx512/group32.h"
#include "quant/avx512/kernels.h"
#include "quant/blocks.h"
#include "quant/quant_impl.h"

/* min(15, (int8_t)trunc(x*id + 8.5)) on sixteen lanes (the reference's upper clamp only). */
static inline __m512i q4_0_q(__m512 v, __m512 vid) {
    const __m512i t = _mm512_cvttps_epi32(_mm512_add_ps(_mm512_mul_ps(v, vid),
                                                        _mm512_set1_ps(8.5f)));
    const __m512i i8 = _mm512_srai_epi32(_mm512_slli_epi32(t, 24), 24);
    return _mm512_min_epi32(i8, _mm512_set1_epi32(15));
}

static void q4_0_group(const float *restrict x, lc_block_q4_0 *restrict y) {
    __m256 amax;
    if (!group_amax(x, &amax)) {
        lc_q4_0_quantize_avx2(x, y, GROUP * LC_QK4_0);
        return;
    }
    /* The reference's signed extreme: the value of the FIRST element whose magnitude is
     * the block's largest, +0 for a block of zeros (its search starts from +0). */
    float amaxs[GROUP], extreme[GROUP];
    _mm256_storeu_ps(amaxs, amax);
    for (int b = 0; b < GROUP; b++) {
        const float *xb = x + 32 * b;
        const __m512 m = _mm512_set1_ps(amaxs[b]);
        const uint32_t hit =
            (uint32_t)_mm512_cmp_ps_mask(_mm512_abs_ps(_mm512_loadu_ps(xb)), m, _CMP_EQ_OQ) |
            (uint32_t)_mm512_cmp_ps_mask(_mm512_abs_ps(_mm512_loadu_ps(xb + 16)), m, _CMP_EQ_OQ)
                << 16;
        extreme[b] = amaxs[b] == 0.0f ? 0.0f : xb[__builtin_ctz(hit)];
    }
    const __m256 d = _mm256_div_ps(_mm256_loadu_ps(extreme), _mm256_set1_ps(-8.0f));
    const __m256 id = inverse_or_zero(d);
    uint16_t d16[GROUP];
    _mm_storeu_si128((__m128i *)(void *)d16, _mm256_cvtps_ph(d, _MM_FROUND_TO_NEAREST_INT));
    for (int b = 0; b < GROUP; b++) {
        const __m512 vid = lane(id, b);
        const __m512i lo = q4_0_q(_mm512_loadu_ps(x + 32 * b), vid);
        const __m512i hi = q4_0_q(_mm512_loadu_ps(x + 32 * b + 16), vid);
        y[b].d = d16[b];
        /* The low byte of lo | hi << 4 is (uint8_t)lo | (uint8_t)(hi << 4), the
         * reference's byte, negative levels included. */
        _mm_storeu_si128((__m128i *)(void *)y[b].qs,
                         _mm512_cvtepi32_epi8(_mm512_or_si512(lo, _mm512_slli_epi32(hi, 4))));
    }
}

void lc_q4_0_quantize_avx512(const float *restrict x, void *restrict vy, size_t n) {
    lc_block_q4_0 *y = vy;
    const size_t nb = n / LC_QK4_0;
    size_t b = 0;
    for (; b + GROUP <= nb; b += GROUP)
        q4_0_group(x + b * LC_QK4_0, &y[b]);
    if (b < nb)
        lc_q4_0_quantize_avx2(x + b * LC_QK4_0, &y[b], (nb - b) * LC_QK4_0);
}
