/* quant/device.c: `--device` for every back end alike (see device.h): SPEC parsing, the
 * back-end table, whole conversions, the lazy view, and the kernel table the variant
 * tests use. What runs on a device is the back end's (device_impl.h). */
#include "quant/device.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libconvert/alloc.h"
#include "libconvert/bytes.h"
#include "quant/device_impl.h"
#include "quant/types.h"

struct lc_qdev {
    const lc_qdev_backend *be;
    void *ctx;
    char desc[192];
};

/* Back ends this build has, and every name --device knows (so that "cuda" in a build
 * without it is a missing device, not a typo). */
static const lc_qdev_backend *const BACKENDS[] = {
#ifdef LC_HAVE_CUDA
    &lc_qdev_cuda,
#endif
    NULL,
};
static const struct { const char *name, *upper, *build; } KNOWN[] = {
    { "cuda", "CUDA", "make CUDA=1" },
};

/* Splits SPEC into its known name (index into KNOWN, or -1 for "cpu") and N. */
static lc_code split(const char *spec, int *known, unsigned *index, lc_error *err) {
    *known = -1;
    *index = 0;
    if (!spec || strcmp(spec, "cpu") == 0)
        return LC_OK;
    for (size_t k = 0; k < sizeof KNOWN / sizeof KNOWN[0]; k++) {
        const size_t len = strlen(KNOWN[k].name);
        if (strncmp(spec, KNOWN[k].name, len) != 0)
            continue;
        const char *rest = spec + len;
        if (*rest == ':' && rest[1] >= '0' && rest[1] <= '9' && strlen(rest + 1) <= 3) {
            char *end;
            const unsigned long n = strtoul(rest + 1, &end, 10);
            if (*end || n > 255)
                break;
            *index = (unsigned)n;
        } else if (*rest) {
            break;
        }
        *known = (int)k;
        return LC_OK;
    }
    return lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "--device %.40s: want " LC_QDEV_SPECS, spec);
}

lc_code lc_qdev_parse(const char *spec, lc_error *err) {
    int known;
    unsigned index;
    return split(spec, &known, &index, err);
}

lc_code lc_qdev_open(const char *spec, lc_qdev **out, lc_error *err) {
    int known;
    unsigned index;
    *out = NULL;
    LC_TRY(split(spec, &known, &index, err));
    if (known < 0)
        return LC_OK;
    const lc_qdev_backend *be = NULL;
    for (size_t i = 0; BACKENDS[i]; i++)
        if (strcmp(BACKENDS[i]->name, KNOWN[known].name) == 0)
            be = BACKENDS[i];
    if (!be)
        return lc_fail(err, LC_E_UNSUPPORTED, LC_NO_OFFSET, "no %s device: this build has no "
                       "%s back end (build with %s)", KNOWN[known].upper, KNOWN[known].upper,
                       KNOWN[known].build);
    lc_qdev *d = lc_calloc(1, sizeof *d);
    if (!d)
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    d->be = be;
    const lc_code rc = be->open(index, &d->ctx, d->desc, sizeof d->desc, err);
    if (rc != LC_OK) {
        lc_free(d);
        return rc;
    }
    *out = d;
    return LC_OK;
}

void lc_qdev_close(lc_qdev *d) {
    if (!d)
        return;
    d->be->close(d->ctx);
    lc_free(d);
}

const char *lc_qdev_describe(const lc_qdev *d) { return d ? d->desc : "cpu"; }

bool lc_qdev_supports(const lc_qdev *d, lc_dtype from, lc_dtype to) {
    return d && from != to && d->be->supports(from, to);
}

/* Elements per granule: the larger block size (each is 1, 32 or 256, so it is a
 * multiple of the other). */
static uint64_t granule_of(lc_dtype from, lc_dtype to) {
    const uint64_t a = lc_dtype_get(from)->block_size, b = lc_dtype_get(to)->block_size;
    return a > b ? a : b;
}

/* The bytes of one granule of t. */
static uint64_t granule_bytes(lc_dtype t, uint64_t granule) {
    const lc_dtype_info *i = lc_dtype_get(t);
    return granule / i->block_size * i->type_size;
}

static lc_code check_pair(const lc_qdev *d, lc_dtype from, lc_dtype to, lc_error *err) {
    if (!lc_qdev_supports(d, from, to))
        return lc_fail(err, LC_E_UNSUPPORTED, LC_NO_OFFSET, "%s does not convert %s to %s",
                       lc_qdev_describe(d), lc_dtype_name(from), lc_dtype_name(to));
    return LC_OK;
}

/* ---- whole conversions ---- */

static lc_code read_memory(void *ctx, uint64_t off, void *buf, size_t len, lc_error *err) {
    (void)err;
    memcpy(buf, (const uint8_t *)ctx + off, len);
    return LC_OK;
}

lc_code lc_qdev_convert(lc_qdev *d, lc_dtype from, const void *src, lc_dtype to, void *dst,
                        uint64_t n, lc_error *err) {
    LC_TRY(check_pair(d, from, to, err));
    const uint64_t g = granule_of(from, to);
    if (n % g != 0)
        return lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "%" PRIu64 " elements are not whole %s "
                       "and %s blocks", n, lc_dtype_name(from), lc_dtype_name(to));
    uint64_t len;
    if (lc_mul_u64(n / g, granule_bytes(to, g), &len))
        return lc_fail(err, LC_E_OVERFLOW, LC_NO_OFFSET, "%" PRIu64 " elements", n);
    if (n == 0)
        return LC_OK;
    const lc_qdev_job job = { .from = from, .to = to, .granule = g, .granules = n / g,
                              .read = read_memory, .read_ctx = (void *)(uintptr_t)src,
                              .dst = dst, .len = len };
    return d->be->convert(d->ctx, &job, err);
}

/* ---- the lazy view ---- */

typedef struct qdview {
    const lc_tensor *src;
    lc_qdev *dev;
    lc_dtype from, to;
    uint64_t granule, src_g, dst_g;     /* elements, source and output bytes per granule */
} qdview;

static lc_code read_tensor(void *ctx, uint64_t off, void *buf, size_t len, lc_error *err) {
    return lc_tensor_read(ctx, off, buf, len, err);
}

static lc_code qdview_read(void *ctx, const lc_tensor *t, uint64_t off, void *dst, size_t len,
                           lc_error *err) {
    const qdview *q = ctx;
    (void)t;
    if (len == 0)
        return LC_OK;
    const uint64_t first = off / q->dst_g, last = (off + len + q->dst_g - 1) / q->dst_g;
    const lc_qdev_job job = { .from = q->from, .to = q->to, .granule = q->granule,
                              .granules = last - first, .src_off = first * q->src_g,
                              .read = read_tensor, .read_ctx = (void *)(uintptr_t)q->src,
                              .dst = dst, .skip = off - first * q->dst_g, .len = len };
    return q->dev->be->convert(q->dev->ctx, &job, err);
}

static void qdview_free(void *ctx) { lc_free(ctx); }

static const lc_source_ops QDVIEW_OPS = { qdview_read, qdview_free, NULL };

lc_code lc_qdev_view(lc_tensor *dst, const lc_tensor *src, lc_qdev *d, lc_error *err) {
    if (check_pair(d, src->dtype, dst->dtype, err) != LC_OK) {
        lc_err_context(err, NULL, src->name);
        return err ? err->code : LC_E_UNSUPPORTED;
    }
    const uint64_t g = granule_of(src->dtype, dst->dtype);
    const uint64_t ncols = src->ndim ? src->shape[src->ndim - 1] : 1;
    if (ncols % g != 0)
        return lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "tensor %.80s: %" PRIu64 " columns are not "
                       "whole %s and %s blocks", src->name, ncols, lc_dtype_name(src->dtype),
                       lc_dtype_name(dst->dtype));
    qdview *q = lc_calloc(1, sizeof *q);
    if (!q)
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    *q = (qdview){ .src = src, .dev = d, .from = src->dtype, .to = dst->dtype, .granule = g,
                   .src_g = granule_bytes(src->dtype, g), .dst_g = granule_bytes(dst->dtype, g) };
    dst->data = NULL;
    dst->ops = &QDVIEW_OPS;
    dst->ctx = q;
    dst->file_offset = LC_NO_OFFSET;
    return LC_OK;
}

/* ---- a kernel table on a device, for the variant tests ---- */

static struct {
    pthread_once_t once;
    lc_qdev *dev;
    lc_error err;                   /* the open's, then the first kernel failure's */
    pthread_mutex_t lock;
} g_tab = { PTHREAD_ONCE_INIT, NULL, { 0 }, PTHREAD_MUTEX_INITIALIZER };

static void tab_open(void) { lc_qdev_open("cuda", &g_tab.dev, &g_tab.err); }

/* n floats' worth of whole blocks of `block`-element type t; 0xff on failure. */
static void tab_run(lc_dtype from, const void *x, lc_dtype to, void *y, size_t n,
                    lc_dtype t) {
    const lc_dtype_info *i = lc_dtype_get(t);
    const uint64_t nb = n / i->block_size, out = nb * (to == t ? i->type_size :
                                                            i->block_size * sizeof(float));
    lc_error err = { 0 };
    if (nb && lc_qdev_convert(g_tab.dev, from, x, to, y, nb * i->block_size, &err) != LC_OK) {
        memset(y, 0xff, (size_t)out);
        pthread_mutex_lock(&g_tab.lock);
        if (g_tab.err.code == LC_OK)
            g_tab.err = err;
        pthread_mutex_unlock(&g_tab.lock);
    }
}

#define TAB_KERNELS(T, stem)                                                              \
    static void tab_q_##stem(const float *restrict x, void *restrict y, size_t n) {       \
        tab_run(LC_DT_F32, x, LC_DT_##T, y, n, LC_DT_##T);                                \
    }                                                                                     \
    static void tab_dq_##stem(const void *restrict x, float *restrict y, size_t n) {      \
        tab_run(LC_DT_##T, x, LC_DT_F32, y, n, LC_DT_##T);                                \
    }
LC_QUANT_TYPES(TAB_KERNELS)
#define TAB_Q(T, stem) [LC_DT_##T] = tab_q_##stem,
#define TAB_DQ(T, stem) [LC_DT_##T] = tab_dq_##stem,
static const lc_qkernels TAB = {
    .name = "cuda",
    .quantize = { LC_QUANT_TYPES(TAB_Q) },
    .dequantize = { LC_QUANT_TYPES(TAB_DQ) },
};

const lc_qkernels *lc_qdev_kernels(const char *spec) {
    if (!spec || strcmp(spec, "cuda") != 0)
        return NULL;
    pthread_once(&g_tab.once, tab_open);
    return g_tab.dev ? &TAB : NULL;
}

const char *lc_qdev_kernels_error(void) {
    return g_tab.err.code != LC_OK ? g_tab.err.msg : "";
}
