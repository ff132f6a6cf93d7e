/* quant/ref_iq1.c: the row entries of IQ1_S and IQ1_M, bit-identical to ggml's
 * quantize_iq1_s / quantize_iq1_m (quantize_row_iq1_*_impl). Layouts in quant/ref_iq.c;
 * the grid (2048 entries of 8 values -1, 0, 1, i.e. levels 0..2) in quant/iq_grid.c.
 *
 * Per sub-block (32 values for IQ1_S, 16 for IQ1_M) the values are sorted, and every split
 * of the sorted values into three runs (levels -1, 0, 1, shifted by +-0.125) is scored
 * exactly from prefix sums; the best split's levels go to the grid (the best neighbour
 * where they are no entry) and the scale is refitted. IQ1_M also picks the shift sign
 * per half of its sub-block and refits d over the whole super-block at the end.
 *
 * The sort is ggml's qsort of (value, index) pairs by value only, so equal values keep
 * an order that depends on the sort: glibc's qsort sorts arrays this small with a
 * top-down merge sort that takes the left element unless it compares greater, which
 * keeps equal values in index order; merge_sort below is that algorithm, so the order is
 * the same for every input (NaN compares "equal" to everything there too).
 *
 * ggml aborts on a group it cannot place (NaN weights); here such a group takes entry 0. */
#include <float.h>
#include <math.h>
#include <string.h>

#include "libconvert/bytes.h"
#include "quant/blocks.h"
#include "quant/iq_grid_impl.h"
#include "quant/quant.h"
#include "quant/quant_impl.h"

#define GROUP_MAX_EPS_IQ1_M 1e-7f
#define GROUP_MAX_EPS_IQ1_S 1e-12f
#define IQ1_DELTA LC_IQ1_DELTA
#define nearest_int lc_q_nearest_int

static inline float maxf(float a, float b) { return a > b ? a : b; }
static inline int clampi(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

typedef struct pair {
    float v;
    int i;
} pair;

/* glibc's msort_with_tmp for n pairs compared by v (iq1_sort_helper). */
static void merge_sort(pair *b, int n, pair *tmp) {
    if (n <= 1)
        return;
    const int n1 = n / 2, n2 = n - n1;
    pair *b1 = b, *b2 = b + n1;
    merge_sort(b1, n1, tmp);
    merge_sort(b2, n2, tmp);
    int i1 = 0, i2 = 0, t = 0;
    while (i1 < n1 && i2 < n2) {
        /* iq1_sort_helper(b1, b2) <= 0: b1 is not greater */
        if (!(b1[i1].v > b2[i2].v) || b1[i1].v < b2[i2].v)
            tmp[t++] = b1[i1++];
        else
            tmp[t++] = b2[i2++];
    }
    while (i1 < n1)
        tmp[t++] = b1[i1++];
    memcpy(b, tmp, (size_t)(n - (n2 - i2)) * sizeof *b);
}

/* iq1_find_best_neighbour2: the neighbour of least sum w*(scale*xx[l] - x)^2 (xx: 8
 * values, the 3 levels' then padding, as the neighbour search's lut). */
static int best_neighbour(const lc_iq_grid *g, const uint16_t *nb, const float *xval,
                          const float *w, float scale, const float *xx, int8_t *L) {
    int gi = g->ops->best(g, nb, xx, xval, w, scale);
    if (gi < 0)
        gi = 0;                         /* NaN: ggml reads past its arrays, then asserts */
    const int8_t *pg = g->point + gi * 8;
    for (int i = 0; i < 8; i++)
        L[i] = (int8_t)((pg[i] - 1) / 2);
    return gi;
}

/* The entry of group L (8 levels), or its best neighbour (L updated); *off when placed. */
static int place(const lc_iq_grid *g, const float *xb, const float *w, float scale,
                 const float *xx, int8_t *L, bool *off) {
    int u = 0;
    for (int j = 0; j < 8; j++)
        u |= L[j] << 2 * j;
    if (g->map[u] >= 0)
        return g->map[u];
    *off = true;
    return best_neighbour(g, g->neighbours - g->map[u] - 1, xb, w, scale, xx, L);
}

/* The sorted pairs of n values: their indices in ascending order of value. */
static void sort_values(const float *xb, int n, pair *pairs) {
    pair tmp[32];
    for (int j = 0; j < n; j++)
        pairs[j] = (pair){ xb[j], j };
    merge_sort(pairs, n, tmp);
}

static float sum_sq(const float *x) {
    float s = 0;
    for (int i = 0; i < LC_QK_K; i++)
        s += x[i] * x[i];
    return s;
}

/* ---- IQ1_S ---- */

static void iq1_s_block(const lc_iq_grid *g, const float *xbl, const float *qwbl,
                        lc_block_iq1_s *y) {
    enum { BS = 32 };
    const float x_p[8] = { -1 + IQ1_DELTA, IQ1_DELTA, 1 + IQ1_DELTA };
    const float x_m[8] = { -1 - IQ1_DELTA, -IQ1_DELTA, 1 - IQ1_DELTA };
    float scales[8], weight[BS], sumx[BS + 1], sumw[BS + 1];
    int8_t L[BS], shifts[8];
    uint16_t index[4], qh[8];
    pair pairs[BS];
    y->d = lc_q_scale_f16(0.f);
    memset(y->qs, 0, sizeof y->qs);
    memset(qh, 0, sizeof qh);
    float max_scale = 0;
    const float sigma2 = 2 * sum_sq(xbl) / LC_QK_K;
    for (int ib = 0; ib < LC_QK_K / BS; ib++) {
        const float *xb = xbl + BS * ib, *qw = qwbl + BS * ib;
        for (int i = 0; i < BS; i++)
            weight[i] = qw[i] * sqrtf(sigma2 + xb[i] * xb[i]);
        float max = fabsf(xb[0]);
        for (int i = 1; i < BS; i++)
            max = maxf(max, fabsf(xb[i]));
        if (max < GROUP_MAX_EPS_IQ1_S) {
            scales[ib] = 0;
            shifts[ib] = 1;
            continue;
        }
        sort_values(xb, BS, pairs);
        sumx[0] = sumw[0] = 0;
        for (int j = 0; j < BS; j++) {
            const int i = pairs[j].i;
            sumx[j + 1] = sumx[j] + weight[i] * xb[i];
            sumw[j + 1] = sumw[j] + weight[i];
        }
        lc_iq1_split sp = { .best_score = -FLT_MAX, .scale = max, .i1 = -1, .i2 = -1, .k = 0 };
        g->ops->split_s(BS, sumx, sumw, &sp);
        float scale = sp.scale;
        const int besti1 = sp.i1, besti2 = sp.i2;
        int best_shift = sp.k;
        if (besti1 < 0 || besti2 < 0 || best_shift == 0) {
            scales[ib] = 0;
            shifts[ib] = 1;
            continue;
        }
        for (int j = 0; j < besti1; j++) L[pairs[j].i] = 0;
        for (int j = besti1; j < besti2; j++) L[pairs[j].i] = 1;
        for (int j = besti2; j < BS; j++) L[pairs[j].i] = 2;
        if (scale < 0) {
            for (int j = 0; j < BS; j++)
                L[j] = (int8_t)(2 - L[j]);
            scale = -scale;
            best_shift = -best_shift;
        }
        bool off = false;
        const float *xx = best_shift == 1 ? x_p : x_m;
        for (int k = 0; k < BS / 8; k++)
            index[k] = (uint16_t)place(g, xb + 8 * k, weight + 8 * k, scale, xx, L + 8 * k, &off);
        if (off) {
            float sumqx = 0, sumq2 = 0;
            for (int k = 0; k < BS / 8; k++) {
                const int8_t *pg = g->point + index[k] * 8;
                for (int j = 0; j < 8; j++) {
                    const float w = weight[8 * k + j];
                    const float q = xx[(pg[j] - 1) / 2];
                    sumqx += w * q * xb[8 * k + j];
                    sumq2 += w * q * q;
                }
            }
            if (sumqx > 0 && sumq2 > 0)
                scale = sumqx / sumq2;
        }
        uint16_t h = 0;
        for (int k = 0; k < BS / 8; k++) {
            y->qs[(BS / 8) * ib + k] = (uint8_t)(index[k] & 255);
            h |= (uint16_t)((index[k] >> 8) << 3 * k);
        }
        qh[ib] = h;
        scales[ib] = scale;
        shifts[ib] = (int8_t)best_shift;
        max_scale = maxf(max_scale, scale);
    }
    if (max_scale != 0.0f) {
        const float d = max_scale / 15;
        y->d = lc_q_scale_f16(d * 1.125f);
        const float id = 1 / d;
        for (int ib = 0; ib < LC_QK_K / BS; ib++) {
            int l = clampi(nearest_int(0.5f * (id * scales[ib] - 1)), 0, 7);
            if (shifts[ib] == -1)
                l |= 8;
            qh[ib] |= (uint16_t)(l << 12);
        }
    }
    for (int ib = 0; ib < 8; ib++)
        lc_store_le16(y->qh + 2 * ib, qh[ib]);
}

/* ---- IQ1_M ---- */

static void iq1_m_block(const lc_iq_grid *g, const float *xbl, const float *qwbl,
                        lc_block_iq1_m *y) {
    enum { BS = 16 };
    const float x_p[8] = { -1 + IQ1_DELTA, IQ1_DELTA, 1 + IQ1_DELTA };
    const float x_m[8] = { -1 - IQ1_DELTA, -IQ1_DELTA, 1 - IQ1_DELTA };
    static const uint8_t masks[4] = { 0x00, 0x80, 0x08, 0x88 };
    float scales[16], weight[BS];
    int8_t L[BS], shifts[16];
    uint16_t index[2], sc[4] = { 0, 0, 0, 0 };
    pair pairs[BS];
    memset(y->qs, 0, sizeof y->qs);
    memset(y->qh, 0, sizeof y->qh);
    memset(y->scales, 0, sizeof y->scales);
    float max_scale = 0;
    const float sigma2 = 2 * sum_sq(xbl) / LC_QK_K;
    for (int ib = 0; ib < LC_QK_K / BS; ib++) {
        const float *xb = xbl + BS * ib;
        if (qwbl)
            for (int i = 0; i < BS; i++)
                weight[i] = qwbl[BS * ib + i] * sqrtf(sigma2 + xb[i] * xb[i]);
        else
            for (int i = 0; i < BS; i++)
                weight[i] = xb[i] * xb[i];
        float max = fabsf(xb[0]);
        for (int i = 1; i < BS; i++)
            max = maxf(max, fabsf(xb[i]));
        if (max < GROUP_MAX_EPS_IQ1_M) {
            scales[ib] = 0;
            shifts[ib] = 0;
            continue;
        }
        sort_values(xb, BS, pairs);
        /* Prefix sums per half (each half has its own shift sign); v[0] - v[1] =
         * v[1] - v[2] = -1 for either shift, so a split's sum is T*v[2] - px[i1] - px[i2]. */
        float px[2][BS + 1], pw[2][BS + 1];
        px[0][0] = px[1][0] = 0;
        pw[0][0] = pw[1][0] = 0;
        for (int j = 0; j < BS; j++) {
            const int i = pairs[j].i;
            const int h = i < BS / 2 ? 0 : 1;
            px[h][j + 1] = px[h][j] + weight[i] * xb[i];
            px[1 - h][j + 1] = px[1 - h][j];
            pw[h][j + 1] = pw[h][j] + weight[i];
            pw[1 - h][j + 1] = pw[1 - h][j];
        }
        lc_iq1_split sp = { .best_score = -FLT_MAX, .scale = max, .i1 = -1, .i2 = -1, .k = -1 };
        g->ops->split_m(BS, &px[0][0], &pw[0][0], &sp);
        float scale = sp.scale;
        const int besti1 = sp.i1, besti2 = sp.i2;
        int best_k = sp.k;
        if (besti1 < 0 || besti2 < 0 || best_k < 0) {
            scales[ib] = 0;
            shifts[ib] = 0;
            continue;
        }
        for (int j = 0; j < besti1; j++) L[pairs[j].i] = 0;
        for (int j = besti1; j < besti2; j++) L[pairs[j].i] = 1;
        for (int j = besti2; j < BS; j++) L[pairs[j].i] = 2;
        if (scale < 0) {
            for (int j = 0; j < BS; j++)
                L[j] = (int8_t)(2 - L[j]);
            scale = -scale;
            best_k = 3 - best_k;        /* 0 <-> 3, 1 <-> 2: both halves' signs flip */
        }
        bool off = false;
        for (int k = 0; k < BS / 8; k++) {
            const float *xx = (k == 0 ? best_k < 2 : best_k % 2 == 0) ? x_p : x_m;
            index[k] = (uint16_t)place(g, xb + 8 * k, weight + 8 * k, scale, xx, L + 8 * k, &off);
        }
        if (off) {
            float sqx = 0, sq2 = 0;
            for (int k = 0; k < BS / 8; k++) {
                const float *xx = (k == 0 ? best_k < 2 : best_k % 2 == 0) ? x_p : x_m;
                const int8_t *pg = g->point + index[k] * 8;
                for (int j = 0; j < 8; j++) {
                    const float w = weight[8 * k + j];
                    const float q = xx[(pg[j] - 1) / 2];
                    sqx += w * q * xb[8 * k + j];
                    sq2 += w * q * q;
                }
            }
            if (sqx > 0 && sq2 > 0)
                scale = sqx / sq2;
        }
        y->qs[2 * ib + 0] = (uint8_t)(index[0] & 255);
        y->qs[2 * ib + 1] = (uint8_t)(index[1] & 255);
        y->qh[ib] = (uint8_t)((index[0] >> 8) | ((index[1] >> 8) << 4));
        scales[ib] = scale;
        shifts[ib] = (int8_t)best_k;
        max_scale = maxf(max_scale, scale);
    }
    if (max_scale == 0.0f)
        return;
    float d = max_scale / 15;
    const float id = 1 / d;
    float sqx = 0, sq2 = 0;
    for (int ib = 0; ib < LC_QK_K / BS; ib++) {
        const int l = clampi(nearest_int(0.5f * (id * scales[ib] - 1)), 0, 7);
        sc[ib / 4] |= (uint16_t)(l << 3 * (ib % 4));
        y->qh[ib] |= masks[shifts[ib]];
        const float *xb = xbl + BS * ib;
        if (qwbl)
            for (int i = 0; i < BS; i++)
                weight[i] = qwbl[BS * ib + i] * sqrtf(sigma2 + xb[i] * xb[i]);
        else
            for (int i = 0; i < BS; i++)
                weight[i] = xb[i] * xb[i];
        for (int k = 0; k < BS / 8; k++) {
            const float *xx = (k == 0 ? shifts[ib] < 2 : shifts[ib] % 2 == 0) ? x_p : x_m;
            const int gi = y->qs[2 * ib + k] + ((y->qh[ib] << (8 - 4 * k)) & 0x700);
            const int8_t *pg = g->point + gi * 8;
            for (int j = 0; j < 8; j++) {
                const float w = weight[8 * k + j];
                const float q = xx[(pg[j] - 1) / 2] * (2 * l + 1);
                sqx += w * q * xb[8 * k + j];
                sq2 += w * q * q;
            }
        }
    }
    if (sq2 > 0)
        d = sqx / sq2;
    const uint16_t s = lc_q_scale_f16(d * 1.1125f);
    sc[0] |= (uint16_t)((s & 0x000f) << 12);
    sc[1] |= (uint16_t)((s & 0x00f0) << 8);
    sc[2] |= (uint16_t)((s & 0x0f00) << 4);
    sc[3] |= (uint16_t)(s & 0xf000);
    for (int k = 0; k < 4; k++)
        lc_store_le16(y->scales + 2 * k, sc[k]);
}

/* ---- the row entries ---- */

/* The reference's searches, or a variant's (lc_<stem>_quantize_rows_with): the
 * row entry quantizes with a copy of the grid that carries them. */
#define ROWS(stem, block_t)                                                           \
    void lc_##stem##_quantize_rows_with(const lc_iq_ops *ops, const float *restrict x,        \
                                        void *restrict vy, size_t nrows, size_t n_per_row,  \
                                        const float *restrict imatrix) {                    \
        const lc_iq_grid *shared = lc_iq_grid_get(LC_IQG_IQ1);                               \
        block_t *y = vy;                                                                    \
        const size_t nb = n_per_row / LC_QK_K;                                              \
        if (!shared) {          /* no tables (out of memory): lc_quant_prepare said so */   \
            memset(vy, 0, nrows * nb * sizeof *y);                                          \
            return;                                                                         \
        }                                                                                   \
        lc_iq_grid grid_copy = *shared;                                                     \
        grid_copy.ops = ops;                                                                \
        for (size_t r = 0; r < nrows; r++)                                                  \
            for (size_t b = 0; b < nb; b++, y++)                                            \
                stem##_block(&grid_copy, x + r * n_per_row + b * LC_QK_K,                   \
                             imatrix ? imatrix + b * LC_QK_K : NULL, y);                    \
    }                                                                                       \
    void lc_##stem##_quantize_rows_ref(const float *restrict x, void *restrict vy,          \
                                       size_t nrows, size_t n_per_row,                      \
                                       const float *restrict imatrix) {                     \
        lc_##stem##_quantize_rows_with(&lc_iq_ops_ref, x, vy, nrows, n_per_row, imatrix);   \
    }
ROWS(iq1_s, lc_block_iq1_s)
ROWS(iq1_m, lc_block_iq1_m)
