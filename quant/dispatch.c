/* quant/dispatch.c: the only file that knows which kernel variants exist. The
 * choice is made once per process: LC_QUANT when it names an available variant,
 * else the first variant of VARIANTS this build has and the CPU can run (per
 * libconvert/cpu.h, so LC_CPU_DISABLE hides variants too), else the scalar reference. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "libconvert/bytes.h"
#include "libconvert/cpu.h"
#include "quant/iq_grid_impl.h"
#include "quant/quant.h"
#include "quant/quant_impl.h"
#include "quant/types.h"

#define QUANTIZE_REF(T, stem)   [LC_DT_##T] = lc_##stem##_quantize_ref,
#define DEQUANTIZE_REF(T, stem) [LC_DT_##T] = lc_##stem##_dequantize_ref,
#define QUANTIZE_ROWS_REF(T, stem, im) [LC_DT_##T] = lc_##stem##_quantize_rows_ref,
#define IMATRIX_USE(T, stem, im) [LC_DT_##T] = LC_IMATRIX_##im,

/* The dequantize-only types leave their quantize entry NULL. */
const lc_qkernels lc_qk_ref = {
    .name = "ref",
    .quantize = { LC_QUANT_TYPES(QUANTIZE_REF) },
    .dequantize = { LC_QUANT_TYPES(DEQUANTIZE_REF) LC_DEQUANT_TYPES(DEQUANTIZE_REF) },
    .quantize_rows = { LC_WRITE_TYPES(QUANTIZE_ROWS_REF) },
};

static const unsigned char IMATRIX[LC_DT_COUNT] = { LC_WRITE_TYPES(IMATRIX_USE) };

/* Fastest first. `needs`: the CPU features the variant's folder is compiled for
 * (its kernels.h). A new ISA folder adds one row here, behind its LC_HAVE_<ISA>. */
static const struct variant {
    const lc_qkernels *k;
    lc_cpu_set needs;
} VARIANTS[] = {
#ifdef LC_HAVE_AVX512
    { &lc_qk_avx512, LC_QK_AVX512_NEEDS },
#endif
#ifdef LC_HAVE_AVX2
    { &lc_qk_avx2, LC_QK_AVX2_NEEDS },
#endif
#ifdef LC_HAVE_NEON
    { &lc_qk_neon, LC_QK_NEON_NEEDS },
#endif
    { &lc_qk_ref, 0 },
};

static const lc_qkernels *g_best;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void pick(void) {
    const char *force = getenv("LC_QUANT");     /* tests and bisecting */
    if (force && (g_best = lc_qkernels_get(force)))
        return;
    for (size_t i = 0; !g_best; i++)            /* the last row, ref, needs nothing */
        if (lc_cpu_has_all(VARIANTS[i].needs))
            g_best = VARIANTS[i].k;
}

const lc_qkernels *lc_qkernels_best(void) {
    pthread_once(&g_once, pick);
    return g_best;
}

const lc_qkernels *lc_qkernels_get(const char *name) {
    if (!name)
        return NULL;
    for (size_t i = 0; i < sizeof VARIANTS / sizeof VARIANTS[0]; i++)
        if (strcmp(name, VARIANTS[i].k->name) == 0)
            return lc_cpu_has_all(VARIANTS[i].needs) ? VARIANTS[i].k : NULL;
    return NULL;
}

lc_quantize_fn lc_qk_quantize(const lc_qkernels *k, lc_dtype t) {
    if ((unsigned)t >= LC_DT_COUNT)
        return NULL;
    return k && k->quantize[t] ? k->quantize[t] : lc_qk_ref.quantize[t];
}

lc_dequantize_fn lc_qk_dequantize(const lc_qkernels *k, lc_dtype t) {
    if ((unsigned)t >= LC_DT_COUNT)
        return NULL;
    return k && k->dequantize[t] ? k->dequantize[t] : lc_qk_ref.dequantize[t];
}

bool lc_quant_supported(lc_dtype t) {
    return (unsigned)t < LC_DT_COUNT && lc_qk_ref.quantize[t] && lc_qk_ref.dequantize[t];
}

bool lc_quant_writable(lc_dtype t) {
    return (unsigned)t < LC_DT_COUNT && lc_qk_ref.quantize_rows[t] && lc_qk_ref.dequantize[t];
}

lc_imatrix_use lc_quant_imatrix_use(lc_dtype t) {
    return lc_quant_writable(t) ? (lc_imatrix_use)IMATRIX[t] : LC_IMATRIX_NONE;
}

bool lc_quant_imatrix_whole_rows(lc_dtype t) {
    return t == LC_DT_Q4_0 || t == LC_DT_Q4_1 || t == LC_DT_Q5_0 || t == LC_DT_Q5_1;
}

lc_code lc_quant_prepare(lc_dtype t, lc_error *err) {
    switch (t) {
    case LC_DT_IQ2_XXS: return lc_iq_grid_ready(LC_IQG_IQ2_XXS, err);
    case LC_DT_IQ2_XS: return lc_iq_grid_ready(LC_IQG_IQ2_XS, err);
    case LC_DT_IQ2_S: return lc_iq_grid_ready(LC_IQG_IQ2_S, err);
    case LC_DT_IQ1_S: case LC_DT_IQ1_M: return lc_iq_grid_ready(LC_IQG_IQ1, err);
    case LC_DT_IQ3_XXS: return lc_iq_grid_ready(LC_IQG_IQ3_XXS, err);
    case LC_DT_IQ3_S: return lc_iq_grid_ready(LC_IQG_IQ3_S, err);
    default: return LC_OK;
    }
}

bool lc_dequant_supported(lc_dtype t) {
    return (unsigned)t < LC_DT_COUNT && lc_qk_ref.dequantize[t];
}

/* Validates a rows request (quantize or not) and returns the bytes of one quantized row. */
static lc_code check_rows(lc_dtype t, bool quantize, size_t nrows, size_t ncols,
                          uint64_t *row_bytes, lc_error *err) {
    if (quantize ? !lc_quant_writable(t) : !lc_dequant_supported(t))
        return lc_fail(err, LC_E_UNSUPPORTED, LC_NO_OFFSET, "no %s for dtype %s",
                       quantize ? "quantizer" : "dequantizer", lc_dtype_name(t));
    const lc_dtype_info *info = lc_dtype_get(t);
    if (ncols % info->block_size != 0)
        return lc_fail(err, LC_E_ARG, LC_NO_OFFSET,
                       "row length %zu is not a multiple of the %s block size %u", ncols,
                       info->name, (unsigned)info->block_size);
    uint64_t total, elems;
    if (!lc_dtype_row_bytes(t, ncols, row_bytes) || lc_mul_u64(*row_bytes, nrows, &total) ||
        lc_mul_u64(ncols, nrows, &elems) || total > SIZE_MAX || elems > SIZE_MAX / sizeof(float))
        return lc_fail(err, LC_E_OVERFLOW, LC_NO_OFFSET,
                       "%zu rows of %zu %s elements do not fit in memory", nrows, ncols,
                       info->name);
    return LC_OK;
}

lc_code lc_quantize_rows_imatrix(lc_dtype to, const float *x, void *y, size_t nrows,
                                 size_t ncols, const float *imatrix, lc_error *err) {
    uint64_t row_bytes;
    LC_TRY(check_rows(to, true, nrows, ncols, &row_bytes, err));
    const lc_imatrix_use use = lc_quant_imatrix_use(to);
    if (use == LC_IMATRIX_IGNORES)
        imatrix = NULL;                     /* as ggml: the same bytes either way */
    if (!imatrix && use == LC_IMATRIX_REQUIRES)
        return lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "%s needs an importance matrix",
                       lc_dtype_name(to));
    LC_TRY(lc_quant_prepare(to, err));
    const lc_qkernels *k = lc_qkernels_best();
    const lc_quantize_fn f = imatrix ? NULL : lc_qk_quantize(k, to);
    if (!f) {                               /* the row entry: a variant's, else ref's */
        const lc_quantize_rows_fn g =
            k->quantize_rows[to] ? k->quantize_rows[to] : lc_qk_ref.quantize_rows[to];
        g(x, y, nrows, ncols, imatrix);
        return LC_OK;
    }
    uint8_t *out = y;
    for (size_t r = 0; r < nrows; r++, x += ncols, out += row_bytes)
        f(x, out, ncols);
    return LC_OK;
}

lc_code lc_quantize_rows(lc_dtype to, const float *x, void *y, size_t nrows, size_t ncols,
                         lc_error *err) {
    return lc_quantize_rows_imatrix(to, x, y, nrows, ncols, NULL, err);
}

lc_code lc_dequantize_rows(lc_dtype from, const void *x, float *y, size_t nrows, size_t ncols,
                           lc_error *err) {
    uint64_t row_bytes;
    LC_TRY(check_rows(from, false, nrows, ncols, &row_bytes, err));
    const lc_dequantize_fn f = lc_qk_dequantize(lc_qkernels_best(), from);
    const uint8_t *in = x;
    for (size_t r = 0; r < nrows; r++, in += row_bytes, y += ncols)
        f(in, y, ncols);
    return LC_OK;
}
