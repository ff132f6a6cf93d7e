/* quant/iq_search.c: the grid quantizers' searches in scalar code (the neighbour search,
 * IQ1's split searches), the reference every variant's searches (quant/<isa>/
 * iq_search.c) must agree with (iq_grid_impl.h). */
#include <float.h>

#include "quant/iq_grid_impl.h"

const float lc_iq_odd_lut[8] = { 1, 3, 5, 7, 9, 11, 13, 15 };

const lc_iq_ops lc_iq_ops_ref = { lc_iq_best_ref, lc_iq1s_split_ref, lc_iq1m_split_ref };

int lc_iq_best_ref(const lc_iq_grid *g, const uint16_t *nb, const float *lut, const float *x,
                   const float *w, float scale) {
    const int mask = (1 << g->bits) - 1;
    float best = FLT_MAX;
    int gi = -1;
    for (int j = 1; j <= nb[0]; j++) {
        const int32_t idx = g->index[nb[j]];
        float d2 = 0;
        for (int i = 0; i < g->dim; i++) {
            const float diff = scale * lut[(idx >> (g->bits * i)) & mask] - x[i];
            d2 += w[i] * diff * diff;
        }
        if (d2 < best) {
            best = d2;
            gi = nb[j];
        }
    }
    return gi;
}

/* IQ1_S's split search (lc_iq1_split_fn): the reference's scan. */
void lc_iq1s_split_ref(int n, const float *sumx, const float *sumw, lc_iq1_split *sp) {
    const float x_p[3] = { -1 + LC_IQ1_DELTA, LC_IQ1_DELTA, 1 + LC_IQ1_DELTA };
    const float x_m[3] = { -1 - LC_IQ1_DELTA, -LC_IQ1_DELTA, 1 - LC_IQ1_DELTA };
    const int BS = n;
    float best_score = sp->best_score, scale = sp->scale;
    int besti1 = sp->i1, besti2 = sp->i2, best_shift = sp->k;
    for (int i1 = 0; i1 <= BS; i1++) {
        for (int i2 = i1; i2 <= BS; i2++) {
            float sumqx = (sumx[i1] - sumx[0]) * x_p[0] + (sumx[i2] - sumx[i1]) * x_p[1] +
                          (sumx[BS] - sumx[i2]) * x_p[2];
            float sumq2 = (sumw[i1] - sumw[0]) * x_p[0] * x_p[0] +
                          (sumw[i2] - sumw[i1]) * x_p[1] * x_p[1] +
                          (sumw[BS] - sumw[i2]) * x_p[2] * x_p[2];
            if (sumq2 > 0 && sumqx * sumqx > best_score * sumq2) {
                scale = sumqx / sumq2;
                best_score = scale * sumqx;
                besti1 = i1, besti2 = i2, best_shift = 1;
            }
            sumqx = (sumx[i1] - sumx[0]) * x_m[0] + (sumx[i2] - sumx[i1]) * x_m[1] +
                    (sumx[BS] - sumx[i2]) * x_m[2];
            sumq2 = (sumw[i1] - sumw[0]) * x_m[0] * x_m[0] +
                    (sumw[i2] - sumw[i1]) * x_m[1] * x_m[1] +
                    (sumw[BS] - sumw[i2]) * x_m[2] * x_m[2];
            if (sumq2 > 0 && sumqx * sumqx > best_score * sumq2) {
                scale = sumqx / sumq2;
                best_score = scale * sumqx;
                besti1 = i1, besti2 = i2, best_shift = -1;
            }
        }
    }
    *sp = (lc_iq1_split){ best_score, scale, besti1, besti2, best_shift };
}

/* IQ1_M's (lc_iq1_split_fn): the reference's scan; px, pw: two halves, stride n + 1. */
void lc_iq1m_split_ref(int n, const float *pxf, const float *pwf, lc_iq1_split *sp) {
    const float x_p[3] = { -1 + LC_IQ1_DELTA, LC_IQ1_DELTA, 1 + LC_IQ1_DELTA };
    const float x_m[3] = { -1 - LC_IQ1_DELTA, -LC_IQ1_DELTA, 1 - LC_IQ1_DELTA };
    const int BS = n;
    const float *px[2] = { pxf, pxf + n + 1 }, *pw[2] = { pwf, pwf + n + 1 };
    float best_score = sp->best_score, scale = sp->scale, sumqx[4], sumq2[4];
    int besti1 = sp->i1, besti2 = sp->i2, best_k = sp->k;
    const float txs[2] = { px[0][BS], px[1][BS] };
    const float tws[2] = { pw[0][BS], pw[1][BS] };
    const float p2 = x_p[2], m2 = x_m[2];
    const float cp1 = x_p[0] * x_p[0] - x_p[1] * x_p[1];
    const float cp2 = x_p[1] * x_p[1] - x_p[2] * x_p[2];
    const float cm1 = x_m[0] * x_m[0] - x_m[1] * x_m[1];
    const float cm2 = x_m[1] * x_m[1] - x_m[2] * x_m[2];
    for (int i1 = 0; i1 <= BS; i1++) {
        for (int i2 = i1; i2 <= BS; i2++) {
            float qx_p[2], qx_m[2], q2_p[2], q2_m[2];
            for (int h = 0; h < 2; h++) {
                const float sx = px[h][i1] + px[h][i2];
                qx_p[h] = txs[h] * p2 - sx;
                qx_m[h] = txs[h] * m2 - sx;
                q2_p[h] = tws[h] * p2 * p2 + pw[h][i1] * cp1 + pw[h][i2] * cp2;
                q2_m[h] = tws[h] * m2 * m2 + pw[h][i1] * cm1 + pw[h][i2] * cm2;
            }
            sumqx[0] = qx_p[0] + qx_p[1];
            sumqx[1] = qx_p[0] + qx_m[1];
            sumqx[2] = qx_m[0] + qx_p[1];
            sumqx[3] = qx_m[0] + qx_m[1];
            sumq2[0] = q2_p[0] + q2_p[1];
            sumq2[1] = q2_p[0] + q2_m[1];
            sumq2[2] = q2_m[0] + q2_p[1];
            sumq2[3] = q2_m[0] + q2_m[1];
            for (int k = 0; k < 4; k++) {
                if (sumq2[k] > 0 && sumqx[k] * sumqx[k] > best_score * sumq2[k]) {
                    scale = sumqx[k] / sumq2[k];
                    best_score = scale * sumqx[k];
                    besti1 = i1, besti2 = i2, best_k = k;
                }
            }
        }
    }
    *sp = (lc_iq1_split){ best_score, scale, besti1, besti2, best_k };
}
