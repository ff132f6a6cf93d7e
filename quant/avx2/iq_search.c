/* quant/avx2/iq_search.c: the grid i-quants' (IQ2_XXS ... IQ1_M) row entries with an AVX2
 * neighbour search, eight neighbours per vector. Each lane runs the reference's sequence
 * for its neighbour (lc_iq_best_ref: diff = scale*q - x, w*diff, *diff, then the add,
 * i = 0..dim-1 in order; no FMA, as -ffp-contract=off keeps the reference), so the
 * distances are the reference's bits; each lane keeps its first strictly least (an
 * ordered compare: NaN never wins), and the least of the lanes at its lowest position is
 * the entry the reference's scan picks. A neighbour's levels come from one gather of its
 * packed index; a level becomes its value by a permute of the 8-value lut. */
#include <float.h>
#include <immintrin.h>

#include "quant/avx2/kernels.h"

#define LC_IQ1_W 8
#include "quant/iq1_split_vec.h"
#include "quant/iq_grid_impl.h"

/* The distances of the 8 entries e (their packed indices gathered), lane by lane. */
static inline __m256 dist8(const lc_iq_grid *g, __m256i e, __m256 vlut, __m256 vscale,
                           __m256i mask, __m128i shift, const __m256 *vx, const __m256 *vw) {
    __m256i idx = _mm256_i32gather_epi32(g->index, e, 4);
    __m256 s = _mm256_setzero_ps();
    for (int i = 0; i < g->dim; i++) {
        const __m256 q = _mm256_permutevar8x32_ps(vlut, _mm256_and_si256(idx, mask));
        idx = _mm256_srl_epi32(idx, shift);
        const __m256 diff = _mm256_sub_ps(_mm256_mul_ps(vscale, q), vx[i]);
        s = _mm256_add_ps(s, _mm256_mul_ps(_mm256_mul_ps(vw[i], diff), diff));
    }
    return s;
}

/* Entries j .. j+7 of list (n in all) widened; the tail's spare lanes entry 0. */
static inline __m256i entries8(const uint16_t *list, int j, int n) {
    if (n - j >= 8)
        return _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(list + j)));
    uint16_t ids[8] = { 0 };
    for (int k = 0; k < n - j; k++)
        ids[k] = list[j + k];
    return _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)ids));
}

static int best_avx2(const lc_iq_grid *g, const uint16_t *nb, const float *lut,
                     const float *x, const float *w, float scale) {
    const int n = nb[0];
    const uint16_t *list = nb + 1;
    const __m256 vlut = _mm256_loadu_ps(lut);
    const __m256 vscale = _mm256_set1_ps(scale);
    const __m256i mask = _mm256_set1_epi32((1 << g->bits) - 1);
    const __m128i shift = _mm_cvtsi32_si128(g->bits);
    const __m256i vn = _mm256_set1_epi32(n);
    const __m256 vmax = _mm256_set1_ps(FLT_MAX);
    __m256 vx[8], vw[8];
    for (int i = 0; i < g->dim; i++) {
        vx[i] = _mm256_set1_ps(x[i]);
        vw[i] = _mm256_set1_ps(w[i]);
    }
    __m256i jv = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    if (n <= 8) {                       /* most lists: one vector, no per-lane bests */
        const __m256 s = dist8(g, entries8(list, 0, n), vlut, vscale, mask, shift, vx, vw);
        /* The candidates: lanes below FLT_MAX (ordered: not NaN); the first one equal to
         * their least is the scan's pick. */
        const __m256 ok = _mm256_and_ps(_mm256_cmp_ps(s, vmax, _CMP_LT_OQ),
                                        _mm256_castsi256_ps(_mm256_cmpgt_epi32(vn, jv)));
        if (!_mm256_movemask_ps(ok))
            return -1;
        __m256 m = _mm256_blendv_ps(vmax, s, ok);
        m = _mm256_min_ps(m, _mm256_permute2f128_ps(m, m, 1));
        m = _mm256_min_ps(m, _mm256_shuffle_ps(m, m, 0x4e));
        m = _mm256_min_ps(m, _mm256_shuffle_ps(m, m, 0xb1));
        const int eq = _mm256_movemask_ps(_mm256_and_ps(_mm256_cmp_ps(s, m, _CMP_EQ_OQ), ok));
        return list[__builtin_ctz((unsigned)eq)];
    }
    __m256 bestv = vmax;
    __m256i bestj = _mm256_set1_epi32(-1);
    for (int j = 0; j < n; j += 8) {
        const __m256 s = dist8(g, entries8(list, j, n), vlut, vscale, mask, shift, vx, vw);
        const __m256 lt = _mm256_and_ps(_mm256_cmp_ps(s, bestv, _CMP_LT_OQ),
                                        _mm256_castsi256_ps(_mm256_cmpgt_epi32(vn, jv)));
        bestv = _mm256_blendv_ps(bestv, s, lt);
        bestj = _mm256_castps_si256(_mm256_blendv_ps(_mm256_castsi256_ps(bestj),
                                                     _mm256_castsi256_ps(jv), lt));
        jv = _mm256_add_epi32(jv, _mm256_set1_epi32(8));
    }
    float bv[8];
    int bj[8];
    _mm256_storeu_ps(bv, bestv);
    _mm256_storeu_si256((__m256i *)bj, bestj);
    float m = FLT_MAX;
    int at = -1;
    for (int k = 0; k < 8; k++)         /* the least; among equals, the lowest position */
        if (bv[k] < m || (bv[k] == m && at >= 0 && bj[k] < at)) {
            m = bv[k];
            at = bj[k];
        }
    return at < 0 ? -1 : list[at];
}

/* IQ1_S/IQ1_M's split searches: quant/iq1_split_vec.h, 8 splits per vector. */
static const lc_iq_ops OPS = { best_avx2, iq1s_split_vec, iq1m_split_vec };

#define ROWS_AVX2(T, stem) LC_IQ_ROWS_VARIANT(T, stem, avx2, &OPS)
LC_IQ_ROWS_WITH(ROWS_AVX2)
