/* quant/iq_grid_impl.h: private to quant/. The search tables the IQ quantizers need
 * besides the codebooks: for each grid, its entries as levels, a map from every index a
 * quantizer can form (its levels packed `bits` bits each) to the grid entry with those
 * levels, and, for an index that is no entry, the list of entries nearest to it.
 *
 * They are computed once, at the first use of a grid, from the codebooks of
 * quant/iq_tables.h (generated from gguf-py) by ggml's rule (iq2xs_init_impl,
 * iq3xs_init_impl): an entry's level l at a position is the rank of its magnitude among
 * the grid's magnitudes, its point is 2l + 1; the neighbours of an index off the grid are
 * the entries at the `nwant` smallest squared distances from its point, ordered by
 * distance, then entry (ggml sorts the pairs with qsort on that total order, so its
 * order is unique). Nothing is typed by hand.
 *
 * Layout, ggml's: map[i] >= 0 is the entry at index i; map[i] < 0 means
 * neighbours[-map[i] - 1] holds the count n of i's neighbours, then the n entries. */
#ifndef LC_QUANT_IQ_GRID_IMPL_H
#define LC_QUANT_IQ_GRID_IMPL_H

#include <stdint.h>

#include "libconvert/error.h"

typedef enum lc_iqg_id {
    LC_IQG_IQ2_XXS = 0,     /* 256 x 8, levels 0..2, 2 bits, 2 distances */
    LC_IQG_IQ2_XS,          /* 512 x 8, 2 distances */
    LC_IQG_IQ2_S,           /* 1024 x 8, 1 distance */
    LC_IQG_IQ1,             /* IQ1_S and IQ1_M: 2048 x 8, 3 distances */
    LC_IQG_IQ3_XXS,         /* 256 x 4, levels 0..7, 3 bits, 2 distances */
    LC_IQG_IQ3_S,           /* 512 x 4, 3 distances */
    LC_IQG_COUNT
} lc_iqg_id;

typedef struct lc_iq_grid {
    int             ngrid;      /* entries */
    int             dim;        /* values per entry: 8 or 4 */
    const int8_t   *point;      /* ngrid * dim: 2 * level + 1 */
    const int32_t  *map;        /* indices below 1 << (dim * bits) */
    const uint16_t *neighbours;
} lc_iq_grid;

/* Grid `id`, built at the first call (thread-safe); NULL when its tables could not be
 * allocated (then every later call says NULL too). */
const lc_iq_grid *lc_iq_grid_get(lc_iqg_id id);

/* lc_iq_grid_get, as an error: LC_E_NOMEM when the tables cannot be built. */
lc_code lc_iq_grid_ready(lc_iqg_id id, lc_error *err);

#endif
