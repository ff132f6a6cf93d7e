/* quant/avx512/iq_search.c: the grid i-quants' (IQ2_XXS ... IQ1_M) row entries with
 * AVX-512 neighbour distances, sixteen neighbours per vector, the tail masked. Each lane
 * runs the reference's sequence for its neighbour (lc_iq_dist_ref; no FMA), so the
 * distances are the reference's bits (quant/avx2/iq_search.c says how). */
#include <immintrin.h>

#include "quant/avx512/kernels.h"
#include "quant/iq_grid_impl.h"

static void dist_avx512(const lc_iq_grid *g, const uint16_t *nb, int n, const float *lut,
                        const float *x, const float *w, float scale, float *d2) {
    /* Levels are below 8: the upper half of the lut vector is never read. */
    const __m512 vlut = _mm512_castps256_ps512(_mm256_loadu_ps(lut));
    const __m512 vscale = _mm512_set1_ps(scale);
    const __m512i mask = _mm512_set1_epi32((1 << g->bits) - 1);
    const __m128i shift = _mm_cvtsi32_si128(g->bits);
    for (int j = 0; j < n; j += 16) {
        const __mmask16 k = n - j >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - j)) - 1);
        const __m512i e = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(k, nb + j));
        __m512i idx = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), k, e, g->index, 4);
        __m512 s = _mm512_setzero_ps();
        for (int i = 0; i < g->dim; i++) {
            const __m512 q = _mm512_permutexvar_ps(_mm512_and_si512(idx, mask), vlut);
            idx = _mm512_srl_epi32(idx, shift);
            const __m512 diff = _mm512_sub_ps(_mm512_mul_ps(vscale, q), _mm512_set1_ps(x[i]));
            s = _mm512_add_ps(s, _mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(w[i]), diff), diff));
        }
        _mm512_mask_storeu_ps(d2 + j, k, s);
    }
}

#define ROWS_AVX512(T, stem) LC_IQ_ROWS_VARIANT(T, stem, avx512, dist_avx512)
LC_IQ_ROWS_WITH(ROWS_AVX512)
