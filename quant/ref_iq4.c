/* quant/ref_iq4.c: the row entries of IQ4_NL and IQ4_XS, bit-identical to ggml's
 * quantize_iq4_nl and quantize_iq4_xs (what ggml_quantize_chunk and so llama-quantize
 * run, with or without an importance matrix). Note that llama-quantize's path tries 15
 * inverse scales per block of 32 (ntry 7) where ggml's quantize_row_iq4_nl_ref tries
 * none; we write what llama-quantize writes. Layouts in quant/ref_iq.c; the 16 levels
 * are quant/iq_tables.h's lc_kvalues_iq4nl.
 *
 * Per block of 32: the scale starts at -max/-127 (max: the signed extreme), each value
 * takes the nearest level (best_index below), the least-squares scale of those levels is
 * kept, and 15 more starts (itry - 127)/max, itry = -7..7, replace it where they raise
 * sumqx^2/sumq2. Weights: imatrix * sqrt(sigma2 + x^2) (sigma2: twice the super-block's
 * mean square), or x^2 without one. IQ4_XS then stores the 8 scales as 6-bit multiples
 * of d = -max_scale/32 and re-picks every level against the stored scale. */
#include <math.h>
#include <string.h>

#include "libconvert/bytes.h"
#include "quant/blocks.h"
#include "quant/iq_grid_impl.h"
#include "quant/iq_tables.h"
#include "quant/quant.h"
#include "quant/quant_impl.h"

#define GROUP_MAX_EPS 1e-15f

/* ggml's best_index_int8 over the 16 ascending levels: the nearest, the lower one on a
 * tie; NaN ends at the top level. */
static inline int best_index(const int8_t *val, float x) {
    if (x <= val[0])
        return 0;
    if (x >= val[15])
        return 15;
    int ml = 0, mu = 15;
    while (mu - ml > 1) {
        const int mav = (ml + mu) / 2;
        if (x < val[mav])
            mu = mav;
        else
            ml = mav;
    }
    return x - val[mu - 1] < val[mu] - x ? mu - 1 : mu;
}

/* ggml's quantize_row_iq4_nl_impl with ntry = 7 over one super-block of `sbs` values
 * (32 for IQ4_NL, 256 for IQ4_XS), blocks of 32. Stores d and the packed levels; for
 * IQ4_XS (sbs 256) also the 6-bit scales (scales_h as a little-endian u16). qw: sbs
 * weights or NULL. */
void lc_iq4_tries_ref(const float *xb, const float *weight, float max, float *sumqx,
                      float *sumq2) {
    const int8_t *values = lc_kvalues_iq4nl;
    for (int t = 0; t <= LC_IQ4_NTRY; t++) {
        float id;
        if (t < LC_IQ4_NTRY) {
            const int itry = t - (LC_IQ4_NTRY - 1) / 2;
            id = (itry + values[0]) / max;
        } else {                        /* the first fit */
            const float d = -max / values[0];
            id = 1 / d;
        }
        float qx = 0, q2 = 0;
        for (int j = 0; j < 32; j++) {
            const int l = best_index(values, id * xb[j]);
            const float q = values[l], w = weight[j];
            qx += w * q * xb[j];
            q2 += w * q * q;
        }
        sumqx[t] = qx;
        sumq2[t] = q2;
    }
}

static void iq4_superblock(lc_iq4_tries_fn tries, int sbs, const float *x, uint16_t *dh,
                           uint8_t *q4, uint8_t *scales_h, uint8_t *scales_l,
                           const float *qw) {
    const int8_t *values = lc_kvalues_iq4nl;
    uint8_t L[LC_QK_K];
    float scales[LC_QK_K / 32], weight[32];
    float sigma2 = 0;
    for (int j = 0; j < sbs; j++)
        sigma2 += x[j] * x[j];
    sigma2 *= 2.f / sbs;
    memset(q4, 0, (size_t)sbs / 2);
    *dh = lc_q_scale_f16(0.f);
    float max_scale = 0, amax_scale = 0;
    for (int ib = 0; ib < sbs / 32; ib++) {
        const float *xb = x + ib * 32;
        if (qw)
            for (int j = 0; j < 32; j++)
                weight[j] = qw[ib * 32 + j] * sqrtf(sigma2 + xb[j] * xb[j]);
        else
            for (int j = 0; j < 32; j++)
                weight[j] = xb[j] * xb[j];
        float amax = 0, max = 0;
        for (int j = 0; j < 32; j++) {
            const float ax = fabsf(xb[j]);
            if (ax > amax) {
                amax = ax;
                max = xb[j];
            }
        }
        if (amax < GROUP_MAX_EPS) {
            scales[ib] = 0;
            continue;                   /* its levels are set below (IQ4_NL: id 0; IQ4_XS: dl 0) */
        }
        /* The first fit (from -max / kvalues[0]) is entry LC_IQ4_NTRY of the tries; its
         * levels are not kept (every level is re-picked below against the stored scale). */
        float try_qx[LC_IQ4_NTRY + 1], try_q2[LC_IQ4_NTRY + 1];
        tries(xb, weight, max, try_qx, try_q2);
        float d = try_q2[LC_IQ4_NTRY] > 0 ? try_qx[LC_IQ4_NTRY] / try_q2[LC_IQ4_NTRY] : 0.f;
        float best = d * try_qx[LC_IQ4_NTRY];
        for (int t = 0; t < LC_IQ4_NTRY; t++) {
            if (try_q2[t] > 0 && try_qx[t] * try_qx[t] > best * try_q2[t]) {
                d = try_qx[t] / try_q2[t];
                best = d * try_qx[t];
            }
        }
        scales[ib] = d;
        const float abs_d = fabsf(d);
        if (abs_d > amax_scale) {
            amax_scale = abs_d;
            max_scale = d;
        }
    }
    if (sbs > 32) {
        uint16_t h = 0;
        const float d = -max_scale / 32;
        *dh = lc_q_scale_f16(d);
        const float id = d != 0.0f ? 1 / d : 0.f;
        for (int ib = 0; ib < sbs / 32; ib++) {
            int l = lc_q_nearest_int(id * scales[ib]);
            l = l < -32 ? -32 : l > 31 ? 31 : l;
            const float dl = d * l;
            const float idl = dl != 0.0f ? 1 / dl : 0.f;
            for (int j = 0; j < 32; j++)
                L[ib * 32 + j] = (uint8_t)best_index(values, idl * x[ib * 32 + j]);
            l += 32;
            const uint8_t l_l = (uint8_t)(l & 0xf), l_h = (uint8_t)(l >> 4);
            if (ib % 2 == 0)
                scales_l[ib / 2] = l_l;
            else
                scales_l[ib / 2] |= (uint8_t)(l_l << 4);
            h |= (uint16_t)(l_h << 2 * (ib % 8));
        }
        lc_store_le16(scales_h, h);
    } else {
        *dh = lc_q_scale_f16(scales[0]);
        const float id = scales[0] != 0.0f ? 1 / scales[0] : 0;
        for (int j = 0; j < sbs; j++)
            L[j] = (uint8_t)best_index(values, id * x[j]);
    }
    for (int i = 0; i < sbs / 32; i++)
        for (int j = 0; j < 16; j++)
            q4[16 * i + j] = (uint8_t)(L[32 * i + j] | L[32 * i + 16 + j] << 4);
}

/* The row entries with the scale tries of `tries` (the references: lc_iq4_tries_ref; a
 * variant its own, quant/<isa>/iq4_tries.c). */
void lc_iq4_nl_quantize_rows_with(lc_iq4_tries_fn tries, const float *restrict x,
                                  void *restrict vy, size_t nrows, size_t n_per_row,
                                  const float *restrict imatrix) {
    lc_block_iq4_nl *y = vy;
    for (size_t r = 0; r < nrows; r++, x += n_per_row)
        for (size_t b = 0; b < n_per_row / LC_QK4_NL; b++, y++)
            iq4_superblock(tries, LC_QK4_NL, x + b * LC_QK4_NL, &y->d, y->qs, NULL, NULL,
                           imatrix ? imatrix + b * LC_QK4_NL : NULL);
}

void lc_iq4_xs_quantize_rows_with(lc_iq4_tries_fn tries, const float *restrict x,
                                  void *restrict vy, size_t nrows, size_t n_per_row,
                                  const float *restrict imatrix) {
    lc_block_iq4_xs *y = vy;
    for (size_t r = 0; r < nrows; r++, x += n_per_row)
        for (size_t b = 0; b < n_per_row / LC_QK_K; b++, y++)
            iq4_superblock(tries, LC_QK_K, x + b * LC_QK_K, &y->d, y->qs, y->scales_h,
                           y->scales_l, imatrix ? imatrix + b * LC_QK_K : NULL);
}

void lc_iq4_nl_quantize_rows_ref(const float *restrict x, void *restrict vy, size_t nrows,
                                 size_t n_per_row, const float *restrict imatrix) {
    lc_iq4_nl_quantize_rows_with(lc_iq4_tries_ref, x, vy, nrows, n_per_row, imatrix);
}

void lc_iq4_xs_quantize_rows_ref(const float *restrict x, void *restrict vy, size_t nrows,
                                 size_t n_per_row, const float *restrict imatrix) {
    lc_iq4_xs_quantize_rows_with(lc_iq4_tries_ref, x, vy, nrows, n_per_row, imatrix);
}
