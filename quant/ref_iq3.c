/* quant/ref_iq3.c: the row entries of IQ3_XXS and IQ3_S, bit-identical to ggml's
 * quantize_iq3_xxs / quantize_iq3_s (quantize_row_iq3_xxs_impl with grid 256,
 * quantize_row_iq3_s_impl). Layouts in quant/ref_iq.c; grids in quant/iq_grid.c.
 *
 * As the IQ2 types (quant/ref_iq2.c) with groups of 4 magnitudes of levels 0..7 (point
 * 2l + 1) and sub-blocks of 32: 31 inverse scales (2*8 - 1 + 0.2*is)/max, is = -15..15
 * (IQ3_XXS) or -9..9 (IQ3_S), then the off-grid groups re-picked (IQ3_S re-picks every
 * group once one is off the grid). Weights: imatrix * sqrt(sigma2 + x^2), or x^2 without
 * one. d = max/31, stored times 1.0125 (IQ3_XXS) or 1.033 (IQ3_S), ggml's fudge factors.
 * IQ3_XXS keeps 7 signs per 8 values (even negatives, as IQ2_XXS), IQ3_S all 8.
 *
 * One quirk of ggml's IQ3_S is kept: a sub-block whose magnitudes are all zero does not
 * advance the grid-index and sign pointers, so the sub-blocks after it are stored one
 * slot earlier (their high index bits stay at their own slot). */
#include <float.h>
#include <math.h>
#include <string.h>

#include "libconvert/bytes.h"
#include "quant/blocks.h"
#include "quant/iq_grid_impl.h"
#include "quant/quant.h"
#include "quant/quant_impl.h"

#define GROUP_MAX_EPS_IQ3_XXS 1e-8f
#define nearest_int lc_q_nearest_int

static inline float maxf(float a, float b) { return a > b ? a : b; }
static inline int clampi(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

enum { KMAXQ = 8 };

/* iq3_find_best_neighbour over groups of 4. */
static int best_neighbour(const lc_iq_grid *g, const uint16_t *nb, const float *xval,
                          const float *w, float scale, int8_t *L) {
    int gi = g->ops->best(g, nb, lc_iq_odd_lut, xval, w, scale);
    if (gi < 0)
        gi = nb[1];                     /* NaN weights: ggml asserts */
    const int8_t *pg = g->point + gi * 4;
    for (int i = 0; i < 4; i++)
        L[i] = (int8_t)((pg[i] - 1) / 2);
    return gi;
}

static int index_of(const int8_t *L) {
    int u = 0;
    for (int i = 0; i < 4; i++)
        u |= L[i] << 3 * i;
    return u;
}

/* Group k's levels at inverse scale id; its entry (or best neighbour, L updated). */
static int place(const lc_iq_grid *g, const float *xval, const float *waux, float id,
                 float scale, int8_t *L, bool *on_grid) {
    for (int i = 0; i < 4; i++)
        L[i] = (int8_t)clampi(nearest_int(0.5f * (id * xval[i] - 1)), 0, KMAXQ - 1);
    const int u = index_of(L);
    *on_grid = g->map[u] >= 0;
    if (*on_grid)
        return g->map[u];
    return best_neighbour(g, g->neighbours - g->map[u] - 1, xval, waux, scale, L);
}

static int entry_of(const lc_iq_grid *g, const int8_t *L) {
    for (int i = 0; i < 4; i++)         /* a group no search placed (NaN scale): off the map */
        if (L[i] < 0 || L[i] > 7)
            return 0;
    const int gi = g->map[index_of(L)];
    return gi >= 0 ? gi : 0;            /* ggml aborts: levels are always placed */
}

static void sums(const float *weight, const float *xval, const int8_t *L, float *sumqx,
                 float *sumq2) {
    float qx = 0, q2 = 0;
    for (int i = 0; i < 32; i++) {
        const float w = weight[i];
        const float q = 2 * L[i] + 1;
        qx += w * xval[i] * q;
        q2 += w * q * q;
    }
    *sumqx = qx;
    *sumq2 = q2;
}

/* The scale of one sub-block of 32 magnitudes and its levels L: `ntry` inverse scales
 * each side of 2*8 - 1, then the off-grid groups (every group when `all`) re-picked. */
static float search32(const lc_iq_grid *g, const float *xval, const float *weight,
                      const float *waux, float max, int ntry, bool on_grid_init, bool all,
                      int8_t *L) {
    int8_t Laux[32];
    bool on_grid[8], on_aux[8];
    float best = 0;
    float scale = max / (2 * KMAXQ - 1);
    for (int k = 0; k < 8; k++)
        on_grid[k] = on_grid_init;
    for (int is = -ntry; is <= ntry; is++) {
        const float id = (2 * KMAXQ - 1 + is * 0.2f) / max;
        const float this_scale = 1 / id;
        for (int k = 0; k < 8; k++)
            place(g, xval + 4 * k, waux + 4 * k, id, this_scale, Laux + 4 * k, &on_aux[k]);
        float sumqx, sumq2;
        sums(weight, xval, Laux, &sumqx, &sumq2);
        if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
            scale = sumqx / sumq2;
            best = scale * sumqx;
            memcpy(L, Laux, 32);
            memcpy(on_grid, on_aux, sizeof on_grid);
        }
    }
    int off = 0;
    for (int k = 0; k < 8; k++)
        off += !on_grid[k];
    if (off > 0 && scale > 0) {
        const float id = 1 / scale;
        for (int k = 0; k < 8; k++) {
            if (on_grid[k] && !all)
                continue;
            bool unused;
            const int gi = place(g, xval + 4 * k, waux + 4 * k, id, scale, L + 4 * k, &unused);
            const int8_t *pg = g->point + gi * 4;
            for (int i = 0; i < 4; i++)
                L[4 * k + i] = (int8_t)((pg[i] - 1) / 2);
        }
        float sumqx, sumq2;
        sums(weight, xval, L, &sumqx, &sumq2);
        if (sumq2 > 0)
            scale = sumqx / sumq2;
    }
    return scale;
}

static float sum_sq(const float *x) {
    float s = 0;
    for (int i = 0; i < LC_QK_K; i++)
        s += x[i] * x[i];
    return s;
}

static void weigh(const float *xb, const float *qw, float sigma2, float *weight, float *waux) {
    if (qw)
        for (int i = 0; i < 32; i++)
            weight[i] = qw[i] * sqrtf(sigma2 + xb[i] * xb[i]);
    else
        for (int i = 0; i < 32; i++)
            weight[i] = xb[i] * xb[i];
    for (int i = 0; i < 32; i++)
        waux[i] = sqrtf(weight[i]);
}

/* ---- IQ3_XXS ---- */

static void iq3_xxs_block(const lc_iq_grid *g, const float *xbl, const float *qwbl,
                          lc_block_iq3_xxs *y) {
    float scales[8], weight[32], xval[32], waux[32];
    int8_t L[32];
    uint8_t block_signs[4], q3[64];
    uint32_t signs_scales[8];
    y->d = lc_q_scale_f16(0.f);
    memset(q3, 0, sizeof q3);
    memset(signs_scales, 0, sizeof signs_scales);
    float max_scale = 0;
    const float sigma2 = 2 * sum_sq(xbl) / LC_QK_K;
    for (int ib = 0; ib < 8; ib++) {
        const float *xb = xbl + 32 * ib;
        weigh(xb, qwbl ? qwbl + 32 * ib : NULL, sigma2, weight, waux);
        for (int k = 0; k < 4; k++) {
            const float *x8 = xb + 8 * k;
            int nflip = 0;
            uint8_t s = 0;
            for (int i = 0; i < 8; i++) {
                if (x8[i] >= 0) {
                    xval[8 * k + i] = x8[i];
                } else {
                    xval[8 * k + i] = -x8[i];
                    nflip++;
                    s |= (uint8_t)(1u << i);
                }
            }
            if (nflip % 2) {
                const float *w8 = weight + 8 * k;
                int imin = 0;
                float min = w8[imin] * x8[imin] * x8[imin];
                for (int i = 1; i < 8; i++) {
                    const float ax = w8[i] * x8[i] * x8[i];
                    if (ax < min) {
                        min = ax;
                        imin = i;
                    }
                }
                xval[8 * k + imin] = -xval[8 * k + imin];
                s ^= (uint8_t)(1u << imin);
            }
            block_signs[k] = s & 127;
        }
        float max = xval[0];
        for (int i = 1; i < 32; i++)
            max = maxf(max, xval[i]);
        memset(L, 0, 32);
        if (max < GROUP_MAX_EPS_IQ3_XXS) {
            scales[ib] = 0;
            continue;
        }
        float scale = search32(g, xval, weight, waux, max, 15, true, false, L);
        if (scale < 0) {
            scale = -scale;
            for (int k = 0; k < 4; k++)
                block_signs[k] = (uint8_t)(~block_signs[k] & 127);
        }
        for (int k = 0; k < 8; k++)
            q3[8 * ib + k] = (uint8_t)entry_of(g, L + 4 * k);
        signs_scales[ib] = (uint32_t)block_signs[0] | (uint32_t)block_signs[1] << 7 |
                           (uint32_t)block_signs[2] << 14 | (uint32_t)block_signs[3] << 21;
        scales[ib] = scale;
        max_scale = maxf(max_scale, scale);
    }
    if (max_scale == 0.0f) {
        memset(y->qs, 0, sizeof y->qs);
        return;
    }
    const float d = max_scale / 31;
    y->d = lc_q_scale_f16(d * 1.0125f);
    const float id = 1 / d;
    for (int ib = 0; ib < 8; ib++) {
        const int l = clampi(nearest_int(0.5f * (id * scales[ib] - 1)), 0, 15);
        signs_scales[ib] |= (uint32_t)l << 28;
    }
    memcpy(y->qs, q3, sizeof q3);
    for (int ib = 0; ib < 8; ib++)
        lc_store_le32(y->qs + 64 + 4 * ib, signs_scales[ib]);
}

/* ---- IQ3_S ---- */

static void iq3_s_block(const lc_iq_grid *g, const float *xbl, const float *qwbl,
                        lc_block_iq3_s *y) {
    float scales[8], weight[32], xval[32], waux[32];
    int8_t L[32];
    uint8_t block_signs[4];
    memset(y, 0, sizeof *y);
    y->d = lc_q_scale_f16(0.f);
    uint8_t *qs = y->qs, *signs = y->signs;
    float max_scale = 0;
    const float sigma2 = 2 * sum_sq(xbl) / LC_QK_K;
    for (int ib = 0; ib < 8; ib++) {
        const float *xb = xbl + 32 * ib;
        weigh(xb, qwbl ? qwbl + 32 * ib : NULL, sigma2, weight, waux);
        for (int k = 0; k < 4; k++) {
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
        for (int i = 1; i < 32; i++)
            max = maxf(max, xval[i]);
        memset(L, 0, 32);
        if (max == 0.0f) {
            scales[ib] = 0;
            continue;                   /* qs and signs stay where they are: ggml's */
        }
        float scale = search32(g, xval, weight, waux, max, 9, false, true, L);
        if (scale < 0) {
            scale = -scale;
            for (int k = 0; k < 4; k++)
                block_signs[k] = (uint8_t)~block_signs[k];
        }
        for (int k = 0; k < 8; k++) {
            const int gi = entry_of(g, L + 4 * k);
            qs[k] = (uint8_t)(gi & 255);
            y->qh[(ib * 8 + k) / 8] |= (uint8_t)((gi >> 8) << ((ib * 8 + k) % 8));
        }
        qs += 8;
        memcpy(signs, block_signs, 4);
        signs += 4;
        scales[ib] = scale;
        max_scale = maxf(max_scale, scale);
    }
    if (max_scale == 0.0f)
        return;
    const float d = max_scale / 31;
    y->d = lc_q_scale_f16(d * 1.033f);
    const float id = 1 / d;
    for (int ib = 0; ib < 8; ib += 2) {
        const int l1 = clampi(nearest_int(0.5f * (id * scales[ib] - 1)), 0, 15);
        const int l2 = clampi(nearest_int(0.5f * (id * scales[ib + 1] - 1)), 0, 15);
        y->scales[ib / 2] = (uint8_t)(l1 | l2 << 4);
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
ROWS(iq3_xxs, LC_IQG_IQ3_XXS, lc_block_iq3_xxs)
ROWS(iq3_s, LC_IQG_IQ3_S, lc_block_iq3_s)
