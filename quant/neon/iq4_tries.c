/* quant/neon/iq4_tries.c: IQ4_NL's and IQ4_XS's row entries with their 15 scale tries one
 * per vector lane (quant/iq4_tries_vec.h, in this folder's instructions); the
 * reference's bytes. */
#include "quant/neon/kernels.h"

#define LC_IQ4_W 4
#include "quant/iq4_tries_vec.h"

void lc_iq4_nl_quantize_rows_neon(const float *restrict x, void *restrict y, size_t nrows,
                                 size_t n_per_row, const float *restrict imatrix) {
    lc_iq4_nl_quantize_rows_with(iq4_tries_vec, x, y, nrows, n_per_row, imatrix);
}

void lc_iq4_xs_quantize_rows_neon(const float *restrict x, void *restrict y, size_t nrows,
                                 size_t n_per_row, const float *restrict imatrix) {
    lc_iq4_xs_quantize_rows_with(iq4_tries_vec, x, y, nrows, n_per_row, imatrix);
}
