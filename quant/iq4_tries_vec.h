/* quant/iq4_tries_vec.h: private to quant/'s ISA folders. IQ4_NL's and IQ4_XS's 15 scale
 * tries (lc_iq4_tries_fn, quant/ref_impl.h), one try per lane of an LC_IQ4_W-lane generic
 * vector, which each folder's flags turn into its instructions (AVX-512: 16 lanes, all
 * tries at once; AVX2: 8; NEON: 4). Included once by a folder's iq4_tries.c after
 * defining LC_IQ4_W; defines iq4_tries_vec.
 *
 * Each lane runs lc_iq4_tries_ref's sequence for its try: the same id, then for j in
 * order the nearest level of id * x[j] and the two sums with the same operations
 * (separate IEEE multiplies and adds: -ffp-contract=off), so the sums are its bits. The
 * nearest level without the binary search: for x strictly between the extreme levels,
 * the search ends at the first level above x (mu) and the one below, which are the last
 * level <= x and the first > x of the ascending table (selects, exact values), then the
 * same compare x - lo < hi - x; x at or below the bottom takes it, x at or above the top
 * or NaN (every compare false: the search climbs to the top) takes the top. */
#ifndef LC_QUANT_IQ4_TRIES_VEC_H
#define LC_QUANT_IQ4_TRIES_VEC_H

#include <string.h>

#include "quant/iq_grid_impl.h"
#include "quant/iq_tables.h"

#ifndef LC_IQ4_W
#error "define LC_IQ4_W (lanes) before including quant/iq4_tries_vec.h"
#endif

typedef float iq4_vf __attribute__((vector_size(4 * LC_IQ4_W)));
typedef int iq4_vi __attribute__((vector_size(4 * LC_IQ4_W)));

/* Macros, not functions, so that no vector crosses a call. */
#define iq4_splat(s) ((iq4_vf){ 0 } + (float)(s))
/* m ? a : b, lane by lane (m: all ones or zero). */
#define iq4_sel(m, a, b) ((iq4_vf)(((m) & (iq4_vi)(a)) | (~(m) & (iq4_vi)(b))))

static void iq4_tries_vec(const float *xb, const float *weight, float max, float *sumqx,
                          float *sumq2) {
    enum { NT = LC_IQ4_NTRY + 1 };     /* 16: the 15 tries, then the first fit */
    const int8_t *values = lc_kvalues_iq4nl;
    float idf[NT];
    for (int t = 0; t < LC_IQ4_NTRY; t++)
        idf[t] = (float)(t - (LC_IQ4_NTRY - 1) / 2 + values[0]) / max;
    const float d0 = -max / values[0];
    idf[LC_IQ4_NTRY] = 1 / d0;
    float val[16];
    for (int k = 0; k < 16; k++)
        val[k] = values[k];
    for (int t0 = 0; t0 < NT; t0 += LC_IQ4_W) {
        iq4_vf id;
        memcpy(&id, idf + t0, sizeof id);
        iq4_vf qx = iq4_splat(0), q2 = iq4_splat(0);
        for (int j = 0; j < 32; j++) {
            const iq4_vf x = id * xb[j];
            iq4_vf lo = iq4_splat(val[0]), hi = iq4_splat(val[15]);
            for (int k = 1; k < 15; k++)
                lo = iq4_sel(iq4_splat(val[k]) <= x, iq4_splat(val[k]), lo);
            for (int k = 14; k >= 1; k--)
                hi = iq4_sel(iq4_splat(val[k]) > x, iq4_splat(val[k]), hi);
            iq4_vf q = iq4_sel((x - lo) < (hi - x), lo, hi);
            q = iq4_sel(x < iq4_splat(val[15]), q, iq4_splat(val[15]));   /* top, or NaN */
            q = iq4_sel(x <= iq4_splat(val[0]), iq4_splat(val[0]), q);
            const iq4_vf wq = weight[j] * q;
            qx = qx + wq * xb[j];
            q2 = q2 + wq * q;
        }
        for (int l = 0; l < LC_IQ4_W; l++) {
            sumqx[t0 + l] = qx[l];
            sumq2[t0 + l] = q2[l];
        }
    }
}

#endif
