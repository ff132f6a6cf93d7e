/* tests/fuzz/fuzz_rows.c: the row entries (lc_quantize_rows_imatrix) of every writable
 * type, where fuzz_quant reaches only the block kernels: the i-quants' grid searches,
 * TQ1_0/TQ2_0, MXFP4, and the importance-weighted searches of Q2_K..Q6_K, Q4_0..Q5_1.
 *
 * Input: byte 0 picks the type (quant/types.h LC_WRITE_TYPES), byte 1 the row length
 * (whole blocks, at most 512 values) and the row count (1..2), byte 2 the importance
 * vector: none, raw, its absolute value (what a sane matrix holds), or all zeros. The
 * rest is a pool of raw float bit patterns, repeated to fill the rows, then the
 * importance vector (so four bytes give an all-equal row: ties everywhere, no range).
 *
 * What must hold: the call succeeds (LC_E_ARG only for a type that requires a matrix
 * and gets none); the output is exactly nrows * row_bytes (ASan catches a write past
 * it; two runs over different fill bytes agree, so every byte was written and the
 * result depends on the input alone); and for finite rows within fp16 range with no
 * matrix or a finite non-negative one (below WEIGHT_BOUND), every dequantized value is
 * finite. A NaN, negative or huge weight only has to be survived: the imatrix reader
 * passes them through, and what ggml makes of them is its business. Seeds: tests/fuzz/corpus/rows.tar.gz (scripts/fuzz-keep-corpus.sh). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "libconvert/dtype.h"
#include "quant/quant.h"

static const lc_dtype types[] = { LC_WRITE_TYPES(LC_WRITE_DTYPE) };

/* Above fp16's largest value a type's fp16 scale overflows to infinity in ggml too. */
#define FINITE_BOUND 60000.0f
/* Weights far above any real matrix (mean squared activations) overflow ggml's weighted
 * sums (IQ4_NL: weight 7e34 times x^2 is infinite, the scale inf/inf a NaN), in ggml
 * too; the same bytes are the contract, so only survival is asked of them. */
#define WEIGHT_BOUND 1e8f

/* The grid types' search tables once, before the per-input timeout runs: built inside
 * the first IQ1_S input they take seconds under the sanitizers. */
int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    lc_error err = { 0 };
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (lc_quant_prepare(types[i], &err) != LC_OK)
            abort();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 3 + sizeof(float))
        return 0;
    const lc_dtype t = types[data[0] % (sizeof types / sizeof types[0])];
    /* At most 512 values a row (16 small blocks, 2 super-blocks): the grid searches
     * cost milliseconds a super-block under the sanitizers. */
    const size_t bs = lc_dtype_get(t)->block_size, maxb = bs >= 512 ? 1 : 512 / bs;
    const size_t ncols = (size_t)(1 + data[1] % maxb) * bs;
    const size_t nrows = 1 + (data[1] >> 4) % 2;
    const unsigned im_mode = data[2] % 4;   /* 0 none, 1 raw, 2 |raw|, 3 zeros */
    data += 3, size -= 3;
    const size_t npool = size / sizeof(float), n = nrows * ncols;
    uint64_t row_bytes = 0;
    if (!lc_dtype_row_bytes(t, ncols, &row_bytes))
        abort();
    const size_t out_bytes = nrows * (size_t)row_bytes;

    float *pool = malloc(npool * sizeof *pool), *x = malloc(n * sizeof *x);
    float *im = malloc(ncols * sizeof *im), *y = malloc(n * sizeof *y);
    uint8_t *q1 = malloc(out_bytes), *q2 = malloc(out_bytes);   /* exact sizes for ASan */
    if (!pool || !x || !im || !y || !q1 || !q2)
        goto done;
    memcpy(pool, data, npool * sizeof *pool);
    bool sane = true;                      /* finite rows within range, sane weights */
    for (size_t i = 0; i < n; i++) {
        x[i] = pool[i % npool];
        sane = sane && isfinite(x[i]) && fabsf(x[i]) <= FINITE_BOUND;
    }
    for (size_t j = 0; j < ncols; j++) {
        const float w = pool[(n + j) % npool];
        im[j] = im_mode == 3 ? 0.0f : im_mode == 2 ? fabsf(w) : w;
        sane = sane && (im_mode == 0 || (isfinite(im[j]) && im[j] >= 0.0f &&
                                               im[j] <= WEIGHT_BOUND));
    }
    const float *imatrix = im_mode ? im : NULL;

    lc_error err = { 0 };
    memset(q1, 0x00, out_bytes);
    memset(q2, 0xA5, out_bytes);
    const lc_code c1 = lc_quantize_rows_imatrix(t, x, q1, nrows, ncols, imatrix, &err);
    const lc_code c2 = lc_quantize_rows_imatrix(t, x, q2, nrows, ncols, imatrix, &err);
    if (c1 != c2)
        abort();
    if (c1 != LC_OK) {
        if (c1 != LC_E_ARG || imatrix || lc_quant_imatrix_use(t) != LC_IMATRIX_REQUIRES)
            abort();
        goto done;
    }
    if (memcmp(q1, q2, out_bytes) != 0)
        abort();                           /* a byte left unwritten, or nondeterminism */
    if (lc_dequantize_rows(t, q1, y, nrows, ncols, &err) != LC_OK)
        abort();
    if (sane)
        for (size_t i = 0; i < n; i++)
            if (!isfinite(y[i]))
                abort();
done:
    free(pool);
    free(x);
    free(im);
    free(y);
    free(q1);
    free(q2);
    return 0;
}
