/* quant/iq1_split_vec.h: private to quant/'s ISA folders. IQ1_S's and IQ1_M's split
 * searches (lc_iq1_split_fn, iq_grid_impl.h) LC_IQ1_W splits (i2) at a time, in the
 * compiler's generic vectors, which each folder's flags turn into its instructions
 * (AVX2: 8 lanes, AVX-512: 16, NEON: 4). Included once by a folder's iq_search.c after
 * defining LC_IQ1_W; defines iq1s_split_vec and iq1m_split_vec.
 *
 * Every lane computes the reference's expression for its split (lc_iq1s_split_ref,
 * lc_iq1m_split_ref) with the same operations in the same order (separate IEEE
 * multiplies and adds: -ffp-contract=off), and the vector is tested against the best so
 * far with the reference's test. The best changes only where that test passes, so a
 * vector where no lane passes is one the reference's scan passes over without change;
 * a vector where some lane passes is walked lane by lane, in the reference's order, with
 * the reference's test on the same values. */
#ifndef LC_QUANT_IQ1_SPLIT_VEC_H
#define LC_QUANT_IQ1_SPLIT_VEC_H

#include <string.h>

#include "quant/iq_grid_impl.h"

#ifndef LC_IQ1_W
#error "define LC_IQ1_W (lanes) before including quant/iq1_split_vec.h"
#endif

typedef float iq1_vf __attribute__((vector_size(4 * LC_IQ1_W)));
typedef int iq1_vi __attribute__((vector_size(4 * LC_IQ1_W)));

enum { IQ1_MAXN = 32 };                 /* IQ1_S's sub-blocks; IQ1_M's are 16 */

static inline iq1_vf iq1_splat(float s) {
    iq1_vf v = { 0 };   /* zeroed first: gcc -O1 (make tsan) calls the lane loop maybe-uninitialized */
    for (int l = 0; l < LC_IQ1_W; l++)
        v[l] = s;
    return v;
}

static inline iq1_vf iq1_load(const float *p) {
    iq1_vf v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline int iq1_any(iq1_vi m) {
    int a = 0;
    for (int l = 0; l < LC_IQ1_W; l++)
        a |= m[l];
    return a;
}

/* The reference's test and update for one candidate. */
static inline void iq1_try(float qx, float q2, int i1, int i2, int k, lc_iq1_split *sp) {
    if (q2 > 0 && qx * qx > sp->best_score * q2) {
        sp->scale = qx / q2;
        sp->best_score = sp->scale * qx;
        sp->i1 = i1, sp->i2 = i2, sp->k = k;
    }
}

static void iq1s_split_vec(int n, const float *sumx, const float *sumw, lc_iq1_split *sp) {
    const float x_p[3] = { -1 + LC_IQ1_DELTA, LC_IQ1_DELTA, 1 + LC_IQ1_DELTA };
    const float x_m[3] = { -1 - LC_IQ1_DELTA, -LC_IQ1_DELTA, 1 - LC_IQ1_DELTA };
    float sx[IQ1_MAXN + 1 + LC_IQ1_W], sw[IQ1_MAXN + 1 + LC_IQ1_W];
    memset(sx, 0, sizeof sx);
    memset(sw, 0, sizeof sw);
    memcpy(sx, sumx, (size_t)(n + 1) * sizeof *sx);
    memcpy(sw, sumw, (size_t)(n + 1) * sizeof *sw);
    iq1_vi lane;
    for (int l = 0; l < LC_IQ1_W; l++)
        lane[l] = l;
    for (int i1 = 0; i1 <= n; i1++) {
        /* The scalar parts of the reference's sums, as it computes them. */
        const float a_p = (sx[i1] - sx[0]) * x_p[0], a_m = (sx[i1] - sx[0]) * x_m[0];
        const float A_p = (sw[i1] - sw[0]) * x_p[0] * x_p[0];
        const float A_m = (sw[i1] - sw[0]) * x_m[0] * x_m[0];
        for (int i2 = i1; i2 <= n; i2 += LC_IQ1_W) {
            const iq1_vf x2 = iq1_load(sx + i2), w2 = iq1_load(sw + i2);
            const iq1_vf b = x2 - iq1_splat(sx[i1]), c = iq1_splat(sx[n]) - x2;
            const iq1_vf B = w2 - iq1_splat(sw[i1]), C = iq1_splat(sw[n]) - w2;
            const iq1_vf qx_p = iq1_splat(a_p) + b * x_p[1] + c * x_p[2];
            const iq1_vf q2_p = iq1_splat(A_p) + B * x_p[1] * x_p[1] + C * x_p[2] * x_p[2];
            const iq1_vf qx_m = iq1_splat(a_m) + b * x_m[1] + c * x_m[2];
            const iq1_vf q2_m = iq1_splat(A_m) + B * x_m[1] * x_m[1] + C * x_m[2] * x_m[2];
            const iq1_vf best = iq1_splat(sp->best_score), zero = iq1_splat(0);
            const iq1_vi valid = lane < (n - i2 + 1);
            const iq1_vi pass = valid & (((q2_p > zero) & (qx_p * qx_p > best * q2_p)) |
                                         ((q2_m > zero) & (qx_m * qx_m > best * q2_m)));
            if (!iq1_any(pass))
                continue;
            for (int l = 0; l < LC_IQ1_W && i2 + l <= n; l++) {
                iq1_try(qx_p[l], q2_p[l], i1, i2 + l, 1, sp);
                iq1_try(qx_m[l], q2_m[l], i1, i2 + l, -1, sp);
            }
        }
    }
}

static void iq1m_split_vec(int n, const float *pxf, const float *pwf, lc_iq1_split *sp) {
    const float x_p[3] = { -1 + LC_IQ1_DELTA, LC_IQ1_DELTA, 1 + LC_IQ1_DELTA };
    const float x_m[3] = { -1 - LC_IQ1_DELTA, -LC_IQ1_DELTA, 1 - LC_IQ1_DELTA };
    float px[2][IQ1_MAXN + 1 + LC_IQ1_W], pw[2][IQ1_MAXN + 1 + LC_IQ1_W];
    memset(px, 0, sizeof px);
    memset(pw, 0, sizeof pw);
    for (int h = 0; h < 2; h++) {
        memcpy(px[h], pxf + h * (n + 1), (size_t)(n + 1) * sizeof(float));
        memcpy(pw[h], pwf + h * (n + 1), (size_t)(n + 1) * sizeof(float));
    }
    const float txs[2] = { px[0][n], px[1][n] };
    const float tws[2] = { pw[0][n], pw[1][n] };
    const float p2 = x_p[2], m2 = x_m[2];
    const float cp1 = x_p[0] * x_p[0] - x_p[1] * x_p[1];
    const float cp2 = x_p[1] * x_p[1] - x_p[2] * x_p[2];
    const float cm1 = x_m[0] * x_m[0] - x_m[1] * x_m[1];
    const float cm2 = x_m[1] * x_m[1] - x_m[2] * x_m[2];
    iq1_vi lane;
    for (int l = 0; l < LC_IQ1_W; l++)
        lane[l] = l;
    for (int i1 = 0; i1 <= n; i1++) {
        for (int i2 = i1; i2 <= n; i2 += LC_IQ1_W) {
            iq1_vf qx_p[2], qx_m[2], q2_p[2], q2_m[2];
            for (int h = 0; h < 2; h++) {
                const iq1_vf p2v = iq1_load(pw[h] + i2);
                const iq1_vf sx = iq1_splat(px[h][i1]) + iq1_load(px[h] + i2);
                qx_p[h] = iq1_splat(txs[h] * p2) - sx;
                qx_m[h] = iq1_splat(txs[h] * m2) - sx;
                q2_p[h] = iq1_splat(tws[h] * p2 * p2 + pw[h][i1] * cp1) + p2v * cp2;
                q2_m[h] = iq1_splat(tws[h] * m2 * m2 + pw[h][i1] * cm1) + p2v * cm2;
            }
            const iq1_vf sumqx[4] = { qx_p[0] + qx_p[1], qx_p[0] + qx_m[1], qx_m[0] + qx_p[1],
                                      qx_m[0] + qx_m[1] };
            const iq1_vf sumq2[4] = { q2_p[0] + q2_p[1], q2_p[0] + q2_m[1], q2_m[0] + q2_p[1],
                                      q2_m[0] + q2_m[1] };
            const iq1_vf best = iq1_splat(sp->best_score), zero = iq1_splat(0);
            iq1_vi pass = lane < 0;
            for (int k = 0; k < 4; k++)
                pass |= (sumq2[k] > zero) & (sumqx[k] * sumqx[k] > best * sumq2[k]);
            if (!iq1_any(pass & (lane < (n - i2 + 1))))
                continue;
            for (int l = 0; l < LC_IQ1_W && i2 + l <= n; l++)
                for (int k = 0; k < 4; k++)
                    iq1_try(sumqx[k][l], sumq2[k][l], i1, i2 + l, k, sp);
        }
    }
}

#endif
