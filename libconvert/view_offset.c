/* libconvert/view_offset.c: a float tensor plus a constant, or a function of each element,
 * as float32 (see view.h). */
#include "libconvert/view.h"

#include <string.h>

#include "libconvert/alloc.h"
#include "libconvert/convert.h"

typedef struct offset_view {
    const lc_tensor *src;
    size_t in_size;             /* bytes of one source element */
    float c;
    float (*fn)(float);         /* NULL: plus c */
    lc_dtype round;
} offset_view;

/* Elements converted per step: the stack buffer's worth. */
enum { STEP = 256 };

static lc_code offset_read(void *ctx, const lc_tensor *t, uint64_t off, void *dst, size_t len,
                           lc_error *err) {
    const offset_view *v = ctx;
    uint8_t raw[STEP * 8];
    float f[STEP];
    uint8_t *out = dst;
    (void)t;
    while (len) {
        /* the element holding byte off, and as many after it as fit */
        const uint64_t e = off / 4, skip = off % 4;
        const uint64_t total = t->nbytes / 4;
        const size_t n = total - e < STEP ? (size_t)(total - e) : STEP;
        LC_TRY(lc_tensor_read(v->src, e * v->in_size, raw, n * v->in_size, err));
        LC_TRY(lc_convert(v->src->dtype, raw, LC_DT_F32, f, n, err));
        for (size_t i = 0; i < n; i++) {
            f[i] = v->fn ? v->fn(f[i]) : f[i] + v->c;
            if (v->round != LC_DT_F32) {
                uint16_t h;
                LC_TRY(lc_convert(LC_DT_F32, &f[i], v->round, &h, 1, err));
                LC_TRY(lc_convert(v->round, &h, LC_DT_F32, &f[i], 1, err));
            }
        }
        const size_t have = n * 4 - (size_t)skip, take = have < len ? have : len;
        memcpy(out, (const uint8_t *)f + skip, take);
        out += take;
        off += take;
        len -= take;
    }
    return LC_OK;
}

static void ctx_free(void *ctx) { lc_free(ctx); }

static const lc_source_ops OFFSET_OPS = { offset_read, ctx_free, NULL };

static lc_code attach(lc_tensor *dst, const lc_tensor *src, float c, float (*fn)(float),
                      lc_dtype round, lc_error *err) {
    const lc_dtype_info *in = lc_dtype_get(src->dtype);
    if (dst->dtype != LC_DT_F32 || dst->ndim != src->ndim || !in || in->block_size != 1 ||
        in->type_size > 8 || !lc_convert_supported(src->dtype, LC_DT_F32) ||
        memcmp(dst->shape, src->shape, sizeof dst->shape[0] * dst->ndim) != 0 ||
        (round != LC_DT_F32 && round != LC_DT_F16 && round != LC_DT_BF16))
        return lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "tensor %.80s: an offset view needs an F32 "
                       "view of a float tensor of the same shape", dst->name);
    offset_view *v = lc_calloc(1, sizeof *v);
    if (!v)
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    *v = (offset_view){ src, in->type_size, c, fn, round };
    dst->data = NULL;
    dst->ops = &OFFSET_OPS;
    dst->ctx = v;
    return LC_OK;
}

lc_code lc_view_offset(lc_tensor *dst, const lc_tensor *src, float c, lc_dtype round,
                       lc_error *err) {
    return attach(dst, src, c, NULL, round, err);
}

lc_code lc_view_apply(lc_tensor *dst, const lc_tensor *src, float (*fn)(float),
                      lc_dtype round, lc_error *err) {
    return attach(dst, src, 0, fn, round, err);
}
