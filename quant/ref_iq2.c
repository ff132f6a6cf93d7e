/* quant/ref_iq2.c: the row entries of IQ2_XXS, IQ2_XS and IQ2_S, bit-identical to ggml's
 * quantize_iq2_xxs / quantize_iq2_xs / quantize_iq2_s (quantize_row_iq2_*_impl). Layouts
 * in quant/ref_iq.c; the grids' points, maps and neighbour lists in quant/iq_grid.c.
 *
 * Each group of 8 values is stored as a grid entry of magnitudes (levels 0..2, point
 * 2l + 1) and 8 signs. The magnitudes |x| of a sub-block (32 values for IQ2_XXS, 16 for
 * the others) get a scale by trying inverse scales around the largest (13 or 19 tries),
 * each value's level nearest_int((|x|/scale - 1)/2), and for a group whose levels are no
 * grid entry the entry among its neighbours with the least weighted error; the scale
 * with the largest sumqx^2/sumq2 wins, then off-grid groups are re-picked against it.
 * Sub-block scales are stored as 4 bits of d = max/31. IQ2_XXS and IQ2_XS store 7 signs
 * per group (an even count of negatives: the smallest weighted |x| is flipped to make
 * it so), IQ2_S all 8. IQ2_XXS and IQ2_XS need an importance matrix (ggml asserts one);
 * IQ2_S weighs by 0.25*sigma2 + x^2 without one.
 *
 * ggml aborts on a group it cannot place (only NaN weights can cause that); here such a
 * group takes the first neighbour or entry 0, so the kernels never stop. */
#include <float.h>
#include <math.h>
#include <string.h>

#include "libconvert/bytes.h"
#include "quant/blocks.h"
#include "quant/iq_grid_impl.h"
#include "quant/quant.h"
#include "quant/quant_impl.h"
#include "quant/ref_impl.h"

#define GROUP_MAX_EPS 1e-15f
#define GROUP_MAX_EPS_IQ2_S 1e-8f
#define nearest_int lc_q_nearest_int

static inline float maxf(float a, float b) { return a > b ? a : b; }   /* ggml's MAX */
static inline int clampi(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

/* iq2_find_best_neighbour: the neighbour of least sum w*(scale*q - x)^2; L gets its
 * levels. */
static int best_neighbour(const lc_iq_grid *g, const uint16_t *nb, const float *xval,
                          const float *w, float scale, int8_t *L) {
    int gi = g->ops->best(g, nb, lc_iq_odd_lut, xval, w, scale);
    if (gi < 0)
        gi = nb[1];                     /* NaN weights: ggml asserts */
    const int8_t *pg = g->point + gi * 8;
    for (int i = 0; i < 8; i++)
        L[i] = (int8_t)((pg[i] - 1) / 2);
    return gi;
}

/* The grid entry of 8 levels, or the best neighbour of their index (L updated). */
static int place(const lc_iq_grid *g, const float *xval, const float *waux, float scale,
                 int8_t *L, bool *on_grid) {
    int u = 0;
    for (int i = 0; i < 8; i++)
        u |= L[i] << 2 * i;
    const int gi = g->map[u];
    if (on_grid)
        *on_grid = gi >= 0;
    if (gi >= 0)
        return gi;
    return best_neighbour(g, g->neighbours - g->map[u] - 1, xval, waux, scale, L);
}

/* The entry of levels that must be on the grid (ggml aborts otherwise). A group whose
 * scale search failed (a NaN scale from overflowing weights) still holds the first
 * fit's levels, up to 3 or any value from a NaN: their index would read past the map
 * (ggml's too), so levels outside 0..2 get entry 0 as well. */
static int entry_of(const lc_iq_grid *g, const int8_t *L) {
    int u = 0;
    for (int i = 0; i < 8; i++) {
        if (L[i] < 0 || L[i] > 2)
            return 0;
        u |= L[i] << 2 * i;
    }
    return g->map[u] >= 0 ? g->map[u] : 0;
}

/* Levels of 8 magnitudes at inverse scale id, clamped to 0..kmax-1. */
static void levels(const float *xval, float id, int kmax, int8_t *L) {
    for (int i = 0; i < 8; i++)
        L[i] = (int8_t)clampi(nearest_int(0.5f * (id * xval[i] - 1)), 0, kmax - 1);
}

/* Magnitudes and 7 sign bits of group k of 8 (IQ2_XXS, IQ2_XS, IQ3_XXS): an odd count of
 * negatives flips the value of least weight*x^2 back to negative. */
static uint8_t even_signs(const float *xb, const float *weight, float *xval) {
    int nflip = 0;
    uint8_t s = 0;
    for (int i = 0; i < 8; i++) {
        if (xb[i] >= 0) {
            xval[i] = xb[i];
        } else {
            xval[i] = -xb[i];
            nflip++;
            s |= (uint8_t)(1u << i);
        }
    }
    if (nflip % 2) {
        int imin = 0;
        float min = weight[imin] * xb[imin] * xb[imin];
        for (int i = 1; i < 8; i++) {
            const float ax = weight[i] * xb[i] * xb[i];
            if (ax < min) {
                min = ax;
                imin = i;
            }
        }
        xval[imin] = -xval[imin];
        s ^= (uint8_t)(1u << imin);
    }
    return s & 127;
}

/* sumqx and sumq2 of n magnitudes at levels L (points 2l + 1). */
static void sums(int n, const float *weight, const float *xval, const int8_t *L, float *sumqx,
                 float *sumq2) {
    float qx = 0, q2 = 0;
    for (int i = 0; i < n; i++) {
        const float w = weight[i];
        const float q = 2 * L[i] + 1;
        qx += w * xval[i] * q;
        q2 += w * q * q;
    }
    *sumqx = qx;
    *sumq2 = q2;
}

static float sum_sq(const float *x) {
    float s = 0;
    for (int i = 0; i < LC_QK_K; i++)
        s += x[i] * x[i];
    return s;
}

/* ---- IQ2_XXS ---- */

static void iq2_xxs_block(const lc_iq_grid *g, const float *xbl, const float *qwbl,
                          lc_block_iq2_xxs *y) {
    enum { KMAXQ = 3 };
    float scales[8], weight[32], xval[32], waux[32];
    int8_t L[32], Laux[32];
    uint8_t block_signs[4];
    uint32_t q2[16];
    y->d = lc_q_scale_f16(0.f);
    memset(q2, 0, sizeof q2);
    float max_scale = 0;
    const float sigma2 = sum_sq(xbl) / LC_QK_K;
    for (int ib = 0; ib < 8; ib++) {
        const float *xb = xbl + 32 * ib, *qw = qwbl + 32 * ib;
        for (int i = 0; i < 32; i++)
            weight[i] = qw[i] * sqrtf(sigma2 + xb[i] * xb[i]);
        for (int i = 0; i < 32; i++)
            waux[i] = sqrtf(weight[i]);
        for (int k = 0; k < 4; k++)
            block_signs[k] = even_signs(xb + 8 * k, weight + 8 * k, xval + 8 * k);
        float max = xval[0];
        for (int i = 1; i < 32; i++)
            max = maxf(max, xval[i]);
        if (max < GROUP_MAX_EPS) {
            scales[ib] = 0;
            memset(L, 0, 32);
            continue;
        }
        float scale = lc_q_fit_scales_w(32, KMAXQ + 1, xval, (uint8_t *)L, weight);
        const float eff_max = scale * KMAXQ;
        if (eff_max <= 0) {
            scales[ib] = 0;
            memset(L, 0, 32);
            continue;
        }
        float best = 0;
        for (int is = -6; is <= 6; is++) {
            const float id = (2 * KMAXQ - 1 + is * 0.1f) / eff_max;
            const float this_scale = 1 / id;
            for (int k = 0; k < 4; k++) {
                levels(xval + 8 * k, id, KMAXQ, Laux + 8 * k);
                place(g, xval + 8 * k, waux + 8 * k, this_scale, Laux + 8 * k, NULL);
            }
            float sumqx, sumq2;
            sums(32, weight, xval, Laux, &sumqx, &sumq2);
            if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
                scale = sumqx / sumq2;
                best = scale * sumqx;
                memcpy(L, Laux, 32);
            }
        }
        if (scale > 0) {
            const float id = 1 / scale;
            for (int k = 0; k < 4; k++) {
                levels(xval + 8 * k, id, KMAXQ, L + 8 * k);
                const int gi = place(g, xval + 8 * k, waux + 8 * k, scale, L + 8 * k, NULL);
                const int8_t *pg = g->point + gi * 8;
                for (int i = 0; i < 8; i++)
                    L[8 * k + i] = (int8_t)((pg[i] - 1) / 2);
            }
            float sumqx, sumq2;
            sums(32, weight, xval, L, &sumqx, &sumq2);
            if (sumq2 > 0)
                scale = sumqx / sumq2;
        }
        if (scale < 0) {
            scale = -scale;
            for (int k = 0; k < 4; k++)
                block_signs[k] = (uint8_t)(~block_signs[k] & 127);
        }
        for (int k = 0; k < 4; k++) {
            q2[2 * ib + 0] |= (uint32_t)entry_of(g, L + 8 * k) << 8 * k;
            q2[2 * ib + 1] |= (uint32_t)block_signs[k] << 7 * k;
        }
        scales[ib] = scale;
        max_scale = maxf(max_scale, scale);
    }
    if (max_scale == 0.0f) {
        memset(y->qs, 0, sizeof y->qs);
        return;
    }
    const float d = max_scale / 31;
    y->d = lc_q_scale_f16(d);
    const float id = 1 / d;
    for (int ib = 0; ib < 8; ib++) {
        const int l = clampi(nearest_int(0.5f * (id * scales[ib] - 1)), 0, 15);
        q2[2 * ib + 1] |= (uint32_t)l << 28;
    }
    for (int k = 0; k < 16; k++)
        lc_store_le32(y->qs + 4 * k, q2[k]);
}

/* ---- IQ2_XS and IQ2_S: sub-blocks of 16 ---- */

/* The two groups of sub-block xval (16 magnitudes): the inverse scale search from the
 * largest magnitude, then the off-grid groups re-picked; returns the scale, L gets the
 * levels. */
static float search16(const lc_iq_grid *g, const float *xval, const float *weight,
                      const float *waux, float max, int8_t *L) {
    enum { KMAXQ = 3 };
    int8_t Laux[16];
    bool on_grid[2] = { true, true }, on_aux[2];
    float best = 0;
    float scale = max / (2 * KMAXQ - 1);
    for (int is = -9; is <= 9; is++) {
        const float id = (2 * KMAXQ - 1 + is * 0.1f) / max;
        const float this_scale = 1 / id;
        for (int k = 0; k < 2; k++) {
            levels(xval + 8 * k, id, KMAXQ, Laux + 8 * k);
            place(g, xval + 8 * k, waux + 8 * k, this_scale, Laux + 8 * k, &on_aux[k]);
        }
        float sumqx, sumq2;
        sums(16, weight, xval, Laux, &sumqx, &sumq2);
        if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
            scale = sumqx / sumq2;
            best = scale * sumqx;
            memcpy(L, Laux, 16);
            on_grid[0] = on_aux[0];
            on_grid[1] = on_aux[1];
        }
    }
    if ((!on_grid[0] || !on_grid[1]) && scale > 0) {
        const float id = 1 / scale;
        for (int k = 0; k < 2; k++) {
            if (on_grid[k])
                continue;
            levels(xval + 8 * k, id, KMAXQ, L + 8 * k);
            place(g, xval + 8 * k, waux + 8 * k, scale, L + 8 * k, NULL);
        }
        float sumqx, sumq2;
        sums(16, weight, xval, L, &sumqx, &sumq2);
        if (sumq2 > 0)
            scale = sumqx / sumq2;
    }
    return scale;
}

static void iq2_xs_block(const lc_iq_grid *g, const float *xbl, const float *qwbl,
                         lc_block_iq2_xs *y) {
    float scales[16], weight[16], xval[16], waux[16];
    int8_t L[16];
    uint8_t block_signs[2];
    uint16_t q2[32];
    y->d = lc_q_scale_f16(0.f);
    memset(q2, 0, sizeof q2);
    memset(y->scales, 0, sizeof y->scales);
    float max_scale = 0;
    const float sigma2 = sum_sq(xbl) / LC_QK_K;
    for (int ib = 0; ib < 16; ib++) {
        const float *xb = xbl + 16 * ib, *qw = qwbl + 16 * ib;
        for (int i = 0; i < 16; i++)
            weight[i] = qw[i] * sqrtf(sigma2 + xb[i] * xb[i]);
        for (int i = 0; i < 16; i++)
            waux[i] = sqrtf(weight[i]);
        for (int k = 0; k < 2; k++)
            block_signs[k] = even_signs(xb + 8 * k, weight + 8 * k, xval + 8 * k);
        float max = xval[0];
        for (int i = 1; i < 16; i++)
            max = maxf(max, xval[i]);
        memset(L, 0, 16);
        if (max < GROUP_MAX_EPS) {
            scales[ib] = 0;
            continue;
        }
        float scale = search16(g, xval, weight, waux, max, L);
        if (scale < 0) {
            scale = -scale;
            for (int k = 0; k < 2; k++)
                block_signs[k] = (uint8_t)(~block_signs[k] & 127);
        }
        for (int k = 0; k < 2; k++)
            q2[2 * ib + k] = (uint16_t)(entry_of(g, L + 8 * k) | block_signs[k] << 9);
        scales[ib] = scale;
        max_scale = maxf(max_scale, scale);
    }
    if (max_scale == 0.0f) {
        memset(y->qs, 0, sizeof y->qs);
        return;
    }
    const float d = max_scale / 31;
    y->d = lc_q_scale_f16(d);
    const float id = 1 / d;
    for (int ib = 0; ib < 16; ib++) {
        const int l = clampi(nearest_int(0.5f * (id * scales[ib] - 1)), 0, 15);
        if (ib % 2 == 0)
            y->scales[ib / 2] = (uint8_t)l;
        else
            y->scales[ib / 2] |= (uint8_t)(l << 4);
    }
    for (int k = 0; k < 32; k++)
        lc_store_le16(y->qs + 2 * k, q2[k]);
}

static void iq2_s_block(const lc_iq_grid *g, const float *xbl, const float *qwbl,
                        lc_block_iq2_s *y) {
    float scales[16], weight[16], xval[16], waux[16];
    int8_t L[16];
    uint8_t block_signs[2];
    memset(y, 0, sizeof *y);
    y->d = lc_q_scale_f16(0.f);
    float max_scale = 0;
    const float sigma2 = 2 * sum_sq(xbl) / LC_QK_K;
    for (int ib = 0; ib < 16; ib++) {
        const float *xb = xbl + 16 * ib;
        if (qwbl)
            for (int i = 0; i < 16; i++)
                weight[i] = qwbl[16 * ib + i] * sqrtf(sigma2 + xb[i] * xb[i]);
        else
            for (int i = 0; i < 16; i++)
                weight[i] = 0.25f * sigma2 + xb[i] * xb[i];
        for (int i = 0; i < 16; i++)
            waux[i] = sqrtf(weight[i]);
        for (int k = 0; k < 2; k++) {
            uint8_t s = 0;
            for (int i = 0; i < 8; i++) {
                if (xb[8 * k + i] >= 0) {
                    xval[8 * k + i] = xb[8 * k + i];
                } else {
                    xval[8 * k + i] = -xb[8 * k + i];
                    s |= (uint8_t)(1u << i);
                }
            }
            block_signs[k] = s;
        }
        float max = xval[0];
        for (int i = 1; i < 16; i++)
            max = maxf(max, xval[i]);
        memset(L, 0, 16);
        if (max < GROUP_MAX_EPS_IQ2_S) {
            scales[ib] = 0;
            continue;
        }
        float scale = search16(g, xval, weight, waux, max, L);
        if (scale < 0) {
            scale = -scale;
            for (int k = 0; k < 2; k++)
                block_signs[k] = (uint8_t)~block_signs[k];
        }
        for (int k = 0; k < 2; k++) {
            const int gi = entry_of(g, L + 8 * k);
            const int i8 = 2 * ib + k;
            y->qs[i8] = (uint8_t)(gi & 255);
            y->qh[i8 / 4] |= (uint8_t)((gi >> 8) << 2 * (i8 % 4));
            y->qs[LC_QK_K / 8 + i8] = block_signs[k];
        }
        scales[ib] = scale;
        max_scale = maxf(max_scale, scale);
    }
    if (max_scale == 0.0f)
        return;
    const float d = max_scale / 31;
    y->d = lc_q_scale_f16(d * 0.9875f);
    const float id = 1 / d;
    for (int ib = 0; ib < 16; ib++) {
        const int l = clampi(nearest_int(0.5f * (id * scales[ib] - 1)), 0, 15);
        if (ib % 2 == 0)
            y->scales[ib / 2] = (uint8_t)l;
        else
            y->scales[ib / 2] |= (uint8_t)(l << 4);
    }
}

/* ---- the row entries ---- */

/* The reference's searches, or a variant's (lc_<stem>_quantize_rows_with): the
 * row entry quantizes with a copy of the grid that carries them. */
#define ROWS(stem, grid, block_t)                                                           \
    void lc_##stem##_quantize_rows_with(const lc_iq_ops *ops, const float *restrict x,        \
                                        void *restrict vy, size_t nrows, size_t n_per_row,  \
                                        const float *restrict imatrix) {                    \
        const lc_iq_grid *shared = lc_iq_grid_get(grid);                               \
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
ROWS(iq2_xxs, LC_IQG_IQ2_XXS, lc_block_iq2_xxs)
ROWS(iq2_xs, LC_IQG_IQ2_XS, lc_block_iq2_xs)
ROWS(iq2_s, LC_IQG_IQ2_S, lc_block_iq2_s)
