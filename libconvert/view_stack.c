/* libconvert/view_stack.c: views that gather bytes from several places (see view.h):
 * a stack of equal tensors (experts, one after another) and strided pieces of one
 * tensor (one part of a fused tensor, the first rows of a matrix). */
#include "libconvert/view.h"

#include <inttypes.h>
#include <string.h>

#include "libconvert/alloc.h"

/* ---- stack ---- */

typedef struct stack_view {
    uint64_t each;              /* bytes of one source */
    size_t n;
    const lc_tensor *src[];
} stack_view;

static lc_code stack_read(void *ctx, const lc_tensor *t, uint64_t off, void *dst, size_t len,
                          lc_error *err) {
    const stack_view *v = ctx;
    uint8_t *out = dst;
    (void)t;
    while (len) {
        const uint64_t i = off / v->each, in = off % v->each;
        const uint64_t take = v->each - in < len ? v->each - in : len;
        LC_TRY(lc_tensor_read(v->src[i], in, out, (size_t)take, err));
        out += take;
        off += take;
        len -= (size_t)take;
    }
    return LC_OK;
}

static void ctx_free(void *ctx) { lc_free(ctx); }

static const lc_source_ops STACK_OPS = { stack_read, ctx_free, NULL };

lc_code lc_view_stack(lc_tensor *dst, const lc_tensor *const *srcs, size_t n, lc_error *err) {
    if (n == 0 || dst->nbytes % n != 0)
        return lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "tensor %.80s: %" PRIu64 " bytes do not "
                       "split into %zu sources", dst->name, dst->nbytes, n);
    const uint64_t each = dst->nbytes / n;
    for (size_t i = 0; i < n; i++)
        if (!srcs[i] || srcs[i]->dtype != dst->dtype || srcs[i]->nbytes != each)
            return lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "tensor %.80s: source %zu is missing "
                           "or differs in dtype or size", dst->name, i);
    stack_view *v = lc_calloc(1, sizeof *v + n * sizeof v->src[0]);
    if (!v)
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    v->each = each;
    v->n = n;
    memcpy(v->src, srcs, n * sizeof v->src[0]);
    dst->data = NULL;
    dst->ops = &STACK_OPS;
    dst->ctx = v;
    return LC_OK;
}

/* ---- strided pieces ---- */

typedef struct strided_view {
    const lc_tensor *src;
    uint64_t first, piece, stride;
} strided_view;

static lc_code strided_read(void *ctx, const lc_tensor *t, uint64_t off, void *dst, size_t len,
                            lc_error *err) {
    const strided_view *v = ctx;
    uint8_t *out = dst;
    (void)t;
    while (len) {
        const uint64_t i = off / v->piece, in = off % v->piece;
        const uint64_t take = v->piece - in < len ? v->piece - in : len;
        LC_TRY(lc_tensor_read(v->src, v->first + i * v->stride + in, out, (size_t)take, err));
        out += take;
        off += take;
        len -= (size_t)take;
    }
    return LC_OK;
}

/* One piece is one range of the source file when the source is. */
static bool strided_file_range(void *ctx, const lc_tensor *t, int *fd, uint64_t *off) {
    const strided_view *v = ctx;
    uint64_t at;
    if (t->nbytes != v->piece || !lc_tensor_file_range(v->src, fd, &at))
        return false;
    *off = at + v->first;
    return true;
}

static const lc_source_ops STRIDED_OPS = { strided_read, ctx_free, strided_file_range };

lc_code lc_view_strided(lc_tensor *dst, const lc_tensor *src, uint64_t first, uint64_t piece,
                        uint64_t stride, lc_error *err) {
    const uint64_t count = piece ? dst->nbytes / piece : 0;
    if (piece == 0 || dst->nbytes % piece != 0 || src->dtype != dst->dtype ||
        first > src->nbytes || piece > src->nbytes - first ||
        (count > 1 && (stride < piece || (src->nbytes - first - piece) / stride < count - 1)))
        return lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "tensor %.80s: %" PRIu64 " pieces of %"
                       PRIu64 " bytes every %" PRIu64 " from %" PRIu64 " do not fit %.80s's %"
                       PRIu64 " bytes", dst->name, count, piece, stride, first, src->name,
                       src->nbytes);
    strided_view *v = lc_calloc(1, sizeof *v);
    if (!v)
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    *v = (strided_view){ src, first, piece, stride };
    dst->data = NULL;
    dst->ops = &STRIDED_OPS;
    dst->ctx = v;
    return LC_OK;
}
