/* quant/iq_search.c: the grid quantizers' neighbour search, split into the distances
 * (g->dist: this scalar loop, or a variant's, one neighbour per lane) and the pick of the
 * least, so every variant runs the same pick over the same bits (iq_grid_impl.h). */
#include <float.h>

#include "quant/iq_grid_impl.h"

const float lc_iq_odd_lut[8] = { 1, 3, 5, 7, 9, 11, 13, 15 };

void lc_iq_dist_ref(const lc_iq_grid *g, const uint16_t *nb, int n, const float *lut,
                    const float *x, const float *w, float scale, float *d2) {
    const int mask = (1 << g->bits) - 1;
    for (int j = 0; j < n; j++) {
        const int32_t idx = g->index[nb[j]];
        float s = 0;
        for (int i = 0; i < g->dim; i++) {
            const float diff = scale * lut[(idx >> (g->bits * i)) & mask] - x[i];
            s += w[i] * diff * diff;
        }
        d2[j] = s;
    }
}

/* Distances in chunks of CHUNK: a stack buffer whatever a list's length (the longest,
 * IQ1's, run to a few hundred). */
enum { CHUNK = 64 };

int lc_iq_best_neighbour(const lc_iq_grid *g, const uint16_t *nb, const float *lut,
                         const float *x, const float *w, float scale) {
    float d2[CHUNK];
    float best = FLT_MAX;
    int gi = -1;
    for (int j0 = 0; j0 < nb[0]; j0 += CHUNK) {
        const int n = nb[0] - j0 < CHUNK ? nb[0] - j0 : CHUNK;
        g->dist(g, nb + 1 + j0, n, lut, x, w, scale, d2);
        for (int j = 0; j < n; j++)
            if (d2[j] < best) {
                best = d2[j];
                gi = nb[1 + j0 + j];
            }
    }
    return gi;
}
