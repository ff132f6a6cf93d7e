/* quant/iq_search.c: the grid quantizers' neighbour search in scalar code, the reference
 * every variant's search (quant/<isa>/iq_search.c) must agree with (iq_grid_impl.h). */
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
