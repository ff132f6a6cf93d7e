/* quant/avx2/iq_search.c: the grid i-quants' (IQ2_XXS ... IQ1_M) row entries with AVX2
 * neighbour distances, eight neighbours per vector. Each lane runs the reference's
 * sequence for its neighbour (lc_iq_dist_ref: diff = scale*q - x, w*diff, *diff, then the
 * add, i = 0..dim-1 in order; no FMA, as -ffp-contract=off keeps the reference), so the
 * distances, and the pick the shared search makes from them, are the reference's bits.
 * A neighbour's levels come from one gather of its packed index; a level becomes its
 * value by a permute of the 8-value lut, not a second gather. */
#include <immintrin.h>
#include <string.h>

#include "quant/avx2/kernels.h"
#include "quant/iq_grid_impl.h"

static void dist_avx2(const lc_iq_grid *g, const uint16_t *nb, int n, const float *lut,
                      const float *x, const float *w, float scale, float *d2) {
    const __m256 vlut = _mm256_loadu_ps(lut);
    const __m256 vscale = _mm256_set1_ps(scale);
    const __m256i mask = _mm256_set1_epi32((1 << g->bits) - 1);
    const __m128i shift = _mm_cvtsi32_si128(g->bits);
    __m256 vx[8], vw[8];
    for (int i = 0; i < g->dim; i++) {
        vx[i] = _mm256_set1_ps(x[i]);
        vw[i] = _mm256_set1_ps(w[i]);
    }
    for (int j = 0; j < n; j += 8) {
        const int m = n - j < 8 ? n - j : 8;
        uint16_t ids[8];
        const uint16_t *p = nb + j;
        if (m < 8) {                    /* the tail's spare lanes repeat a real entry */
            for (int k = 0; k < 8; k++)
                ids[k] = nb[j + (k < m ? k : 0)];
            p = ids;
        }
        const __m256i e = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)p));
        __m256i idx = _mm256_i32gather_epi32(g->index, e, 4);
        __m256 s = _mm256_setzero_ps();
        for (int i = 0; i < g->dim; i++) {
            const __m256 q = _mm256_permutevar8x32_ps(vlut, _mm256_and_si256(idx, mask));
            idx = _mm256_srl_epi32(idx, shift);
            const __m256 diff = _mm256_sub_ps(_mm256_mul_ps(vscale, q), vx[i]);
            s = _mm256_add_ps(s, _mm256_mul_ps(_mm256_mul_ps(vw[i], diff), diff));
        }
        if (m == 8) {
            _mm256_storeu_ps(d2 + j, s);
        } else {
            float t[8];
            _mm256_storeu_ps(t, s);
            memcpy(d2 + j, t, (size_t)m * sizeof *t);
        }
    }
}

#define ROWS_AVX2(T, stem) LC_IQ_ROWS_VARIANT(T, stem, avx2, dist_avx2)
LC_IQ_ROWS_WITH(ROWS_AVX2)
