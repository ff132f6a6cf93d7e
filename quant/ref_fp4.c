/* quant/ref_fp4.c: the row entry of MXFP4, bit-identical to ggml's quantize_row_mxfp4_ref
 * (ggml_quantize_chunk ignores an importance matrix for it). Layout in quant/ref_dq.c.
 *
 * Per block of 32: e = floor(log2(amax)) - 2 + 127 (amax > 0, else 0), so that the
 * largest E2M1 magnitude (6, stored doubled as 12 against the halved scale) sits at or
 * just below amax; each value takes the first of the 16 codes nearest to it.
 *
 * The exponent goes through log2f on purpose: near a power of two log2f rounds up to the
 * integer (amax = 1024 * (1 - 2^-24) gives 10, not 9.99...), and ggml's bytes follow that
 * rounding, so computing the exponent from amax's bits would differ there. The float ->
 * uint8_t cast of out-of-range results (a subnormal amax gives a negative e, an infinite
 * amax an infinite one) is ggml's x86-64 truncation (lc_q_trunc_u8). NaN never becomes
 * amax (the `<` is false), as in ggml. */
#include <math.h>

#include "quant/blocks.h"
#include "quant/iq_tables.h"
#include "quant/quant.h"
#include "quant/quant_impl.h"

/* The first code whose value times d is nearest to v (strictly nearer replaces). A NaN v
 * gives code 0, as every comparison is false. */
static inline uint8_t nearest_code(float v, float d) {
    int best = 0;
    float best_err = fabsf((float)lc_kvalues_fp4[0] * d - v);
    for (int i = 1; i < 16; i++) {
        const float err = fabsf((float)lc_kvalues_fp4[i] * d - v);
        if (err < best_err) {
            best = i;
            best_err = err;
        }
    }
    return (uint8_t)best;
}

void lc_mxfp4_quantize_rows_ref(const float *restrict x, void *restrict vy, size_t nrows,
                                size_t n_per_row, const float *restrict imatrix) {
    (void)imatrix;
    lc_block_mxfp4 *y = vy;
    for (size_t b = 0; b < nrows * n_per_row / LC_QK_MXFP4; b++, y++, x += LC_QK_MXFP4) {
        float amax = 0.0f;
        for (int j = 0; j < LC_QK_MXFP4; j++)
            if (amax < fabsf(x[j]))
                amax = fabsf(x[j]);
        const uint8_t e =
            amax > 0.0f ? (uint8_t)lc_q_trunc_u8(floorf(log2f(amax)) - 2.0f + 127.0f) : 0;
        const float d = lc_q_e8m0_half(e);
        y->e = e;
        for (int j = 0; j < LC_QK_MXFP4 / 2; j++)
            y->qs[j] = (uint8_t)(nearest_code(x[j], d) |
                                 nearest_code(x[j + LC_QK_MXFP4 / 2], d) << 4);
    }
}
