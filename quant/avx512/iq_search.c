/* quant/avx512/iq_search.c: the grid i-quants' (IQ2_XXS ... IQ1_M) row entries with an
 * AVX-512 neighbour search, sixteen neighbours per vector, the tail masked. Each lane
 * runs the reference's sequence for its neighbour (lc_iq_best_ref; no FMA) and keeps its
 * first strictly least; the least of the lanes at its lowest position is the entry the
 * reference picks (quant/avx2/iq_search.c says why). */
#include <float.h>
#include <immintrin.h>

#include "quant/avx512/kernels.h"

#define LC_IQ1_W 16
#include "quant/iq1_split_vec.h"
#include "quant/iq_grid_impl.h"

static int best_avx512(const lc_iq_grid *g, const uint16_t *nb, const float *lut,
                       const float *x, const float *w, float scale) {
    const int n = nb[0];
    const uint16_t *list = nb + 1;
    /* Levels are below 8: the upper half of the lut vector is never read. */
    const __m512 vlut = _mm512_castps256_ps512(_mm256_loadu_ps(lut));
    const __m512 vscale = _mm512_set1_ps(scale);
    const __m512i mask = _mm512_set1_epi32((1 << g->bits) - 1);
    const __m128i shift = _mm_cvtsi32_si128(g->bits);
    if (n <= 16) {                      /* most lists: one vector, no per-lane bests */
        const __mmask16 k = (__mmask16)((1u << n) - 1);
        const __m512i e = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(k, list));
        __m512i idx = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), k, e, g->index, 4);
        __m512 s = _mm512_setzero_ps();
        for (int i = 0; i < g->dim; i++) {
            const __m512 q = _mm512_permutexvar_ps(_mm512_and_si512(idx, mask), vlut);
            idx = _mm512_srl_epi32(idx, shift);
            const __m512 diff = _mm512_sub_ps(_mm512_mul_ps(vscale, q), _mm512_set1_ps(x[i]));
            s = _mm512_add_ps(s, _mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(w[i]), diff), diff));
        }
        /* The candidates: lanes below FLT_MAX (ordered: not NaN); the others count as
         * FLT_MAX in the min, the first candidate equal to it is the scan's pick. */
        const __mmask16 ok = _mm512_mask_cmp_ps_mask(k, s, _mm512_set1_ps(FLT_MAX), _CMP_LT_OQ);
        if (!ok)
            return -1;
        const float m = _mm512_reduce_min_ps(_mm512_mask_mov_ps(_mm512_set1_ps(FLT_MAX), ok, s));
        const __mmask16 eq = _mm512_mask_cmp_ps_mask(ok, s, _mm512_set1_ps(m), _CMP_EQ_OQ);
        return list[__builtin_ctz((unsigned)eq)];
    }
    __m512 bestv = _mm512_set1_ps(FLT_MAX);
    __m512i bestj = _mm512_set1_epi32(-1);
    __m512i jv = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    for (int j = 0; j < n; j += 16) {
        const __mmask16 k = n - j >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - j)) - 1);
        const __m512i e = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(k, list + j));
        __m512i idx = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), k, e, g->index, 4);
        __m512 s = _mm512_setzero_ps();
        for (int i = 0; i < g->dim; i++) {
            const __m512 q = _mm512_permutexvar_ps(_mm512_and_si512(idx, mask), vlut);
            idx = _mm512_srl_epi32(idx, shift);
            const __m512 diff = _mm512_sub_ps(_mm512_mul_ps(vscale, q), _mm512_set1_ps(x[i]));
            s = _mm512_add_ps(s, _mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(w[i]), diff), diff));
        }
        const __mmask16 lt = _mm512_mask_cmp_ps_mask(k, s, bestv, _CMP_LT_OQ);
        bestv = _mm512_mask_mov_ps(bestv, lt, s);
        bestj = _mm512_mask_mov_epi32(bestj, lt, jv);
        jv = _mm512_add_epi32(jv, _mm512_set1_epi32(16));
    }
    const float m = _mm512_reduce_min_ps(bestv);    /* no NaN: only compares set lanes */
    if (!(m < FLT_MAX))
        return -1;
    const __mmask16 eq = _mm512_cmp_ps_mask(bestv, _mm512_set1_ps(m), _CMP_EQ_OQ);
    return list[_mm512_mask_reduce_min_epi32(eq, bestj)];
}

/* IQ1_S/IQ1_M's split searches: quant/iq1_split_vec.h, 16 splits per vector. */
static const lc_iq_ops OPS = { best_avx512, iq1s_split_vec, iq1m_split_vec };

#define ROWS_AVX512(T, stem) LC_IQ_ROWS_VARIANT(T, stem, avx512, &OPS)
LC_IQ_ROWS_WITH(ROWS_AVX512)
