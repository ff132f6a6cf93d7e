/* quant/ref_tq.c: the row entries of the ternary types TQ1_0 and TQ2_0, bit-identical to
 * ggml's quantize_row_tq1_0_ref / quantize_row_tq2_0_ref (ggml_quantize_chunk ignores
 * an importance matrix for them). Layouts in quant/ref_dq.c.
 *
 * d = amax (folded as Q8_0's MAX, so NaN behaves the same), each value becomes a trit
 * lroundf(x/d) + 1 in 0..2. TQ1_0 packs 5 trits per byte as a base-3 number scaled to a
 * byte (ceil(q * 256 / 243)), TQ2_0 2 bits per trit.
 * lroundf of NaN (d NaN, or an infinity times id = 0) is unspecified in C; glibc on x86-64
 * returns LONG_MIN, whose low 32 bits plus 1 give the trit 1: spelled out here so that
 * every build (AArch64's lroundf gives 0) writes ggml's x86 bytes. */
#include <math.h>

#include "quant/blocks.h"
#include "quant/quant.h"
#include "quant/quant_impl.h"

/* (int)(lroundf(v) + 1) as ggml's x86-64 build computes it. |v| <= 1 or NaN here. */
static inline int trit(float v) {
    if (!(fabsf(v) < 0x1p30f))
        return 1;
    return (int)lroundf(v) + 1;
}

static float absmax(const float *x) {
    float amax = 0.0f;
    for (int j = 0; j < LC_QK_K; j++) {
        const float a = fabsf(x[j]);
        amax = amax > a ? amax : a;
    }
    return amax;
}

/* 5 (or 4, then shifted to the top trit) trits at x[0], x[stride], ... as one byte. */
static uint8_t pack_trits(const float *x, int stride, int count, float id) {
    uint8_t q = 0;
    for (int n = 0; n < count; n++)
        q = (uint8_t)(q * 3 + trit(x[n * stride] * id));
    if (count == 4)
        q = (uint8_t)(q * 3);
    return (uint8_t)(((uint16_t)q * 256 + (243 - 1)) / 243);
}

void lc_tq1_0_quantize_rows_ref(const float *restrict x, void *restrict vy, size_t nrows,
                                size_t n_per_row, const float *restrict imatrix) {
    (void)imatrix;
    lc_block_tq1_0 *y = vy;
    enum { QS = sizeof y->qs, QS32 = QS - QS % 32, QH = sizeof y->qh };
    for (size_t b = 0; b < nrows * n_per_row / LC_QK_K; b++, y++) {
        const float d = absmax(x);
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y->d = lc_q_scale_f16(d);
        for (int j = 0; j < QS32; j += 32, x += 5 * 32)
            for (int m = 0; m < 32; m++)
                y->qs[j + m] = pack_trits(x + m, 32, 5, id);
        for (int j = QS32; j < QS; j += 16, x += 5 * 16)
            for (int m = 0; m < 16; m++)
                y->qs[j + m] = pack_trits(x + m, 16, 5, id);
        for (int j = 0; j < QH; j++)
            y->qh[j] = pack_trits(x + j, QH, 4, id);
        x += 4 * QH;
    }
}

void lc_tq2_0_quantize_rows_ref(const float *restrict x, void *restrict vy, size_t nrows,
                                size_t n_per_row, const float *restrict imatrix) {
    (void)imatrix;
    lc_block_tq2_0 *y = vy;
    for (size_t b = 0; b < nrows * n_per_row / LC_QK_K; b++, y++) {
        const float d = absmax(x);
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y->d = lc_q_scale_f16(d);
        for (size_t j = 0; j < sizeof y->qs; j += 32, x += 4 * 32)
            for (int m = 0; m < 32; m++) {
                unsigned q = 0;
                for (int n = 0; n < 4; n++)
                    q += (unsigned)(trit(x[m + n * 32] * id) & 3) << (2 * n);
                y->qs[j + m] = (uint8_t)q;
            }
    }
}
