/* quant/dispatch.c: the only file that knows which kernel variants exist. The
 * choice is made once per process: LC_QUANT when it names an available variant,
 * else the fastest one this build and CPU support, else the scalar reference. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "libconvert/bytes.h"
#include "quant/quant.h"
#include "quant/quant_impl.h"

#define REF(T, t) [LC_DT_##T] = lc_##t##_quantize_ref
#define DEREF(T, t) [LC_DT_##T] = lc_##t##_dequantize_ref

const lc_qkernels lc_qk_ref = {
    .name = "ref",
    .quantize = { REF(Q8_0, q8_0), REF(Q4_0, q4_0), REF(Q4_1, q4_1), REF(Q5_0, q5_0),
                  REF(Q5_1, q5_1), REF(Q4_K, q4_K), REF(Q6_K, q6_K) },
    .dequantize = { DEREF(Q8_0, q8_0), DEREF(Q4_0, q4_0), DEREF(Q4_1, q4_1),
                    DEREF(Q5_0, q5_0), DEREF(Q5_1, q5_1), DEREF(Q4_K, q4_K),
                    DEREF(Q6_K, q6_K) },
};

static const lc_qkernels *g_best;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void pick(void) {
    const char *force = getenv("LC_QUANT");     /* tests and bisecting */
    if (force && (g_best = lc_qkernels_get(force)))
        return;
    g_best = lc_qkernels_get("avx2");
    if (!g_best)
        g_best = &lc_qk_ref;
}

#ifdef LC_HAVE_AVX2
/* avx2.c is compiled with -mavx2 -mfma -mf16c, so the CPU needs all three. */
static bool cpu_has_avx2(void) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
           __builtin_cpu_supports("f16c");
}
#endif

const lc_qkernels *lc_qkernels_best(void) {
    pthread_once(&g_once, pick);
    return g_best;
}

const lc_qkernels *lc_qkernels_get(const char *name) {
    if (!name)
        return NULL;
    if (strcmp(name, "ref") == 0)
        return &lc_qk_ref;
#ifdef LC_HAVE_AVX2
    if (strcmp(name, "avx2") == 0 && cpu_has_avx2())
        return &lc_qk_avx2;
#endif
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

/* Validates a rows request and returns the bytes of one quantized row. */
static lc_code check_rows(lc_dtype t, size_t nrows, size_t ncols, uint64_t *row_bytes,
                          lc_error *err) {
    if (!lc_quant_supported(t))
        return lc_fail(err, LC_E_UNSUPPORTED, LC_NO_OFFSET, "no quantizer for dtype %s",
                       lc_dtype_name(t));
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

lc_code lc_quantize_rows(lc_dtype to, const float *x, void *y, size_t nrows, size_t ncols,
                         lc_error *err) {
    uint64_t row_bytes;
    LC_TRY(check_rows(to, nrows, ncols, &row_bytes, err));
    const lc_quantize_fn f = lc_qk_quantize(lc_qkernels_best(), to);
    uint8_t *out = y;
    for (size_t r = 0; r < nrows; r++, x += ncols, out += row_bytes)
        f(x, out, ncols);
    return LC_OK;
}

lc_code lc_dequantize_rows(lc_dtype from, const void *x, float *y, size_t nrows, size_t ncols,
                           lc_error *err) {
    uint64_t row_bytes;
    LC_TRY(check_rows(from, nrows, ncols, &row_bytes, err));
    const lc_dequantize_fn f = lc_qk_dequantize(lc_qkernels_best(), from);
    const uint8_t *in = x;
    for (size_t r = 0; r < nrows; r++, in += row_bytes, y += ncols)
        f(in, y, ncols);
    return LC_OK;
}
