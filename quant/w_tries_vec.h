/* quant/w_tries_vec.h: private to quant/'s ISA folders. The weighted K and legacy
 * searches' tries (lc_w_tries, quant/iq_grid_impl.h) one try per lane of an LC_WT_W-lane
 * generic vector, which each folder's flags turn into its instructions. Included once by
 * a folder's w_tries.c after defining LC_WT_W; defines wt_min_tries and wt_sym_tries.
 *
 * Each lane runs the reference's sequence for its try (ref_w.c min_tries_ref,
 * sym_tries_ref): the same iscale, for i in order the same level (ggml's nearest_int:
 * add 1.5*2^23 and read the mantissa bits, then the clamp) and the same sums, products
 * and divisions in the same order (separate IEEE operations: -ffp-contract=off), so every
 * lane's results are the reference's bits. */
#ifndef LC_QUANT_W_TRIES_VEC_H
#define LC_QUANT_W_TRIES_VEC_H

#include <string.h>

#include "quant/iq_grid_impl.h"

#ifndef LC_WT_W
#error "define LC_WT_W (lanes) before including quant/w_tries_vec.h"
#endif

typedef float wt_vf __attribute__((vector_size(4 * LC_WT_W)));
typedef int wt_vi __attribute__((vector_size(4 * LC_WT_W)));

/* Macros, not functions, so that no vector crosses a call. */
#define wt_splat(s) ((wt_vf){ 0 } + (float)(s))
#define wt_splati(s) ((wt_vi){ 0 } + (int)(s))
#define wt_self(m, a, b) ((wt_vf)(((m) & (wt_vi)(a)) | (~(m) & (wt_vi)(b))))
#define wt_seli(m, a, b) (((m) & (a)) | (~(m) & (b)))
/* nearest_int, then the clamp to lo..hi, as a float (the reference's int l in a float
 * operation). */
#define wt_level(v, lo, hi, out)                                                            \
    do {                                                                                    \
        wt_vi l_ = (((wt_vi)((v) + 12582912.0f)) & 0x007fffff) - 0x00400000;               \
        l_ = wt_seli(l_ < (lo), wt_splati(lo), l_);                                         \
        l_ = wt_seli(l_ > (hi), wt_splati(hi), l_);                                         \
        (out) = __builtin_convertvector(l_, wt_vf);                                         \
    } while (0)

static void wt_min_tries(int n, int nmax, const float *x, const float *w, float min,
                         float max, float sum_w, float sum_x, int is0, int count, float *D,
                         float *ts, float *tm, float *mad) {
    const float rmin = -0.9f, rdelta = 0.05f;
    for (int k0 = 0; k0 < count; k0 += LC_WT_W) {
        float isf[LC_WT_W];
        for (int l = 0; l < LC_WT_W; l++)   /* spare lanes repeat the last try */
            isf[l] = (rmin + rdelta * (is0 + (k0 + l < count ? k0 + l : count - 1)) + nmax) /
                     (max - min);
        wt_vf iscale;
        memcpy(&iscale, isf, sizeof iscale);
        wt_vf sum_l = wt_splat(0), sum_l2 = wt_splat(0), sum_xl = wt_splat(0);
        wt_vf lv[32];
        for (int i = 0; i < n; i++) {
            wt_level(iscale * (x[i] - min), 0, nmax, lv[i]);
            sum_l = sum_l + w[i] * lv[i];
            sum_l2 = sum_l2 + w[i] * lv[i] * lv[i];
            sum_xl = sum_xl + w[i] * lv[i] * x[i];
        }
        const wt_vf d = sum_w * sum_l2 - sum_l * sum_l;
        wt_vf this_scale = (sum_w * sum_xl - sum_x * sum_l) / d;
        wt_vf this_min = (sum_l2 * sum_x - sum_l * sum_xl) / d;
        const wt_vi pos = this_min > 0;
        this_min = wt_self(pos, wt_splat(0), this_min);
        this_scale = wt_self(pos, sum_xl / sum_l2, this_scale);
        wt_vf m = wt_splat(0);
        for (int i = 0; i < n; i++) {
            const wt_vf diff = this_scale * lv[i] + this_min - x[i];
            m = m + w[i] * (diff * diff);
        }
        for (int l = 0; l < LC_WT_W && k0 + l < count; l++) {
            D[k0 + l] = d[l];
            ts[k0 + l] = this_scale[l];
            tm[k0 + l] = this_min[l];
            mad[k0 + l] = m[l];
        }
    }
}

static void wt_sym_tries(int n, int nmax, const float *x, const float *qw, float max,
                         float *sumlx, float *suml2) {
    for (int t0 = 0; t0 < LC_W_SYM_NTRY; t0 += LC_WT_W) {
        float isf[LC_WT_W];
        for (int l = 0; l < LC_WT_W; l++) {
            const int t = t0 + l < LC_W_SYM_NTRY ? t0 + l : LC_W_SYM_NTRY - 1;
            const int is = t < 9 ? t - 9 : t - 8;
            isf[l] = -(nmax + 0.1f * is) / max;
        }
        wt_vf iscale;
        memcpy(&iscale, isf, sizeof iscale);
        wt_vf lx = wt_splat(0), l2 = wt_splat(0);
        for (int i = 0; i < n; i++) {
            wt_vf lv;
            wt_level(iscale * x[i], -nmax, nmax - 1, lv);
            lx = lx + qw[i] * x[i] * lv;
            l2 = l2 + qw[i] * lv * lv;
        }
        for (int l = 0; l < LC_WT_W && t0 + l < LC_W_SYM_NTRY; l++) {
            sumlx[t0 + l] = lx[l];
            suml2[t0 + l] = l2[l];
        }
    }
}

#endif
