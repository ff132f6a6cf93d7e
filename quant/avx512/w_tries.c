/* quant/avx512/w_tries.c: the importance-weighted row entries of the K and legacy types
 * (Q4_0 ... Q6_K with an imatrix) with their scale tries 16 per vector
 * (quant/w_tries_vec.h, in this folder's instructions); the reference's bytes. */
#include "quant/avx512/kernels.h"

#define LC_WT_W 16
#include "quant/w_tries_vec.h"

/* The batch is one vector: a taken try (its min changes the later tries) wastes at most
 * the rest of it. */
static const lc_w_tries TRIES = { LC_WT_W, wt_min_tries, wt_sym_tries };

#define ROWS_W(T, stem)                                                                     \
    void lc_##stem##_quantize_rows_wavx512(const float *restrict x, void *restrict y,        \
                                         size_t nrows, size_t n_per_row,                   \
                                         const float *restrict imatrix) {                  \
        lc_##stem##_quantize_rows_with(&TRIES, x, y, nrows, n_per_row, imatrix);            \
    }
LC_W_ROWS(ROWS_W)
