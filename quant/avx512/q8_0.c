/* quant/avx512/q8_0.c: Q8_0 quantize with AVX-512, byte-identical to the scalar
 * reference (quant/ref.c), eight blocks at a time (group32.h).
 *
 * Why it beats quant/avx2/q8_0.c, which ran at about half the speed of a plain read of
 * its input: a block is two registers here, not four; vpmovdb keeps each lane's low byte
 * in one instruction where AVX2 needs masks, two packs and a permute; and d, id and the
 * f16 scales of eight blocks come from one vdivps each and one vcvtps2ph.
 *
 * Why each step gives the reference's bits: the max, the rounding and the truncation are
 * quant/avx2/q8_0.c's (see its header: vmaxps without NaN folds in any order to the
 * sequential value; ties away from zero as trunc(v + copysign(0.49999997, v)); vcvttps2dq
 * as gcc's cvttss2si); vdivps is IEEE division as divss is; vcvtps2ph is the shared f16
 * converter on every non-NaN value, and d is never NaN once NaN blocks are out. A group
 * holding a NaN anywhere goes to quant/avx2/ (which sends the NaN blocks on to the
 * reference), as does the tail past the last whole group. */
#include <immintrin.h>
#include <stdint.h>

#include "quant/avx512/group32.h"
#include "quant/avx512/kernels.h"
#include "quant/blocks.h"
#include "quant/quant_impl.h"

/* (int32_t)roundf(v): ties away from zero (quant/avx2/q8_0.c's round_away_i32). */
static inline __m512i round_away_i32(__m512 v) {
    const __m512 half = _mm512_castsi512_ps(_mm512_or_si512(
        _mm512_and_si512(_mm512_castps_si512(v), _mm512_set1_epi32((int)0x80000000u)),
        _mm512_castps_si512(_mm512_set1_ps(0.49999997f))));
    return _mm512_cvttps_epi32(_mm512_add_ps(v, half));
}

static void q8_0_group(const float *restrict x, lc_block_q8_0 *restrict y) {
    __m256 amax;
    if (!group_amax(x, &amax)) {
        lc_q8_0_quantize_avx2(x, y, GROUP * LC_QK8_0);
        return;
    }
    const __m256 d = _mm256_div_ps(amax, _mm256_set1_ps(127.0f));
    const __m256 id = inverse_or_zero(d);
    uint16_t d16[GROUP];
    _mm_storeu_si128((__m128i *)(void *)d16, _mm256_cvtps_ph(d, _MM_FROUND_TO_NEAREST_INT));
    for (int b = 0; b < GROUP; b++) {
        const __m512 vid = lane(id, b);
        const __m512i q0 = round_away_i32(_mm512_mul_ps(_mm512_loadu_ps(x + 32 * b), vid));
        const __m512i q1 = round_away_i32(_mm512_mul_ps(_mm512_loadu_ps(x + 32 * b + 16), vid));
        y[b].d = d16[b];
        /* vpmovdb keeps each lane's low byte: lc_q_trunc_i8 of the rounded value. */
        _mm_storeu_si128((__m128i *)(void *)y[b].qs, _mm512_cvtepi32_epi8(q0));
        _mm_storeu_si128((__m128i *)(void *)(y[b].qs + 16), _mm512_cvtepi32_epi8(q1));
    }
}

void lc_q8_0_quantize_avx512(const float *restrict x, void *restrict vy, size_t n) {
    lc_block_q8_0 *y = vy;
    const size_t nb = n / LC_QK8_0;
    size_t b = 0;
    for (; b + GROUP <= nb; b += GROUP)
        q8_0_group(x + b * LC_QK8_0, &y[b]);
    if (b < nb)
        lc_q8_0_quantize_avx2(x + b * LC_QK8_0, &y[b], (nb - b) * LC_QK8_0);
}

