/* libconvert/view_swap.c: a tensor with a block of it transposed unit by unit (see
 * view.h): the value-head reorder of Qwen3.5's recurrent layers, lazily. A read maps
 * each destination unit to its source unit; a run small enough is read whole once and
 * permuted in memory, so a matrix whose columns move (units of a few bytes) is not read
 * a few bytes at a time. */
#include "libconvert/view.h"

#include <inttypes.h>
#include <string.h>

#include "libconvert/alloc.h"

typedef struct swap_view {
    const lc_tensor *src;
    uint64_t first, outer, a, b, unit;
    uint64_t run;           /* a * b * unit */
} swap_view;

/* Runs up to this size are read whole and permuted in memory. */
enum { WHOLE_RUN = 1 << 20 };

/* The source offset of destination byte p of the block (p < outer * run). */
static uint64_t source_of(const swap_view *v, uint64_t p) {
    const uint64_t o = p / v->run, in = p % v->run;
    const uint64_t u = in / v->unit, byte = in % v->unit;
    const uint64_t j = u / v->a, i = u % v->a;     /* destination unit (j, i) <- (i, j) */
    return o * v->run + (i * v->b + j) * v->unit + byte;
}

static lc_code swap_read(void *ctx, const lc_tensor *t, uint64_t off, void *dst, size_t len,
                         lc_error *err) {
    const swap_view *v = ctx;
    const uint64_t end = v->first + v->outer * v->run;
    uint8_t *out = dst, *buf = NULL;
    uint64_t buf_run = UINT64_MAX;      /* which run buf holds */
    lc_code rc = LC_OK;
    (void)t;
    if (v->run <= WHOLE_RUN && !(buf = lc_malloc((size_t)v->run)))
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    while (len && rc == LC_OK) {
        uint64_t take;
        if (off < v->first || off >= end) {     /* outside the block: as it is */
            const uint64_t stop = off < v->first ? v->first : t->nbytes;
            take = stop - off < len ? stop - off : len;
            rc = lc_tensor_read(v->src, off, out, (size_t)take, err);
        } else {
            const uint64_t p = off - v->first, in_unit = p % v->unit;
            take = v->unit - in_unit < len ? v->unit - in_unit : len;
            const uint64_t from = source_of(v, p);
            if (buf) {
                const uint64_t run = p / v->run;
                if (run != buf_run) {
                    rc = lc_tensor_read(v->src, v->first + run * v->run, buf, (size_t)v->run,
                                        err);
                    buf_run = run;
                }
                if (rc == LC_OK)
                    memcpy(out, buf + (from - run * v->run), (size_t)take);
            } else {
                rc = lc_tensor_read(v->src, v->first + from, out, (size_t)take, err);
            }
        }
        out += take;
        off += take;
        len -= (size_t)take;
    }
    lc_free(buf);
    return rc;
}

static void ctx_free(void *ctx) { lc_free(ctx); }

static const lc_source_ops SWAP_OPS = { swap_read, ctx_free, NULL };

lc_code lc_view_swap(lc_tensor *dst, const lc_tensor *src, uint64_t first, uint64_t outer,
                     uint64_t a, uint64_t b, uint64_t unit, lc_error *err) {
    uint64_t run = 0;
    const bool fits = a && b && unit && a <= UINT64_MAX / b && a * b <= UINT64_MAX / unit &&
                      (run = a * b * unit, outer <= UINT64_MAX / run) &&
                      first <= src->nbytes && outer * run <= src->nbytes - first;
    if (!fits || src->dtype != dst->dtype || src->nbytes != dst->nbytes)
        return lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "tensor %.80s: %" PRIu64 " runs of %" PRIu64
                       " x %" PRIu64 " units of %" PRIu64 " bytes from %" PRIu64 " do not fit "
                       "%.80s's %" PRIu64 " bytes", dst->name, outer, a, b, unit, first,
                       src->name, src->nbytes);
    swap_view *v = lc_calloc(1, sizeof *v);
    if (!v)
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    *v = (swap_view){ src, first, outer, a, b, unit, run };
    dst->data = NULL;
    dst->ops = &SWAP_OPS;
    dst->ctx = v;
    return LC_OK;
}
