/* libconvert/view.c: generic lazy views (see view.h). */
/* _DEFAULT_SOURCE for madvise(MADV_DONTNEED): posix_madvise's DONTNEED is a no-op in
 * glibc. */
#define _DEFAULT_SOURCE 1

#include "libconvert/view.h"

#include <inttypes.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "libconvert/alloc.h"

/* ---- heads and forward ---- */

uint64_t lc_view_head_row(uint64_t row, uint64_t rows, uint32_t heads, bool inverse) {
    const uint64_t per = rows / heads, half = per / 2;
    const uint64_t h = row / per, r = row % per;
    if (!inverse)    /* row h*per + 2i + j  <-  source row h*per + j*half + i */
        return h * per + (r % 2) * half + r / 2;
    return h * per + (r % half) * 2 + r / half;   /* source row h*per + j*half + i <- 2i + j */
}

typedef struct rows_view {
    const lc_tensor *src;
    uint64_t rows, row_bytes;
    uint32_t heads;       /* 0: forward unchanged */
    bool inverse;
} rows_view;

static lc_code rows_read(void *ctx, const lc_tensor *t, uint64_t off, void *dst, size_t len,
                         lc_error *err) {
    const rows_view *v = ctx;
    (void)t;
    if (v->heads == 0)
        return lc_tensor_read(v->src, off, dst, len, err);
    uint8_t *out = dst;
    while (len) {
        /* One contiguous piece of one output row per step. */
        const uint64_t row = off / v->row_bytes, in = off % v->row_bytes;
        const uint64_t take = v->row_bytes - in < len ? v->row_bytes - in : len;
        const uint64_t from = lc_view_head_row(row, v->rows, v->heads, v->inverse);
        LC_TRY(lc_tensor_read(v->src, from * v->row_bytes + in, out, (size_t)take, err));
        out += take;
        off += take;
        len -= (size_t)take;
    }
    return LC_OK;
}

static void ctx_free(void *ctx) { lc_free(ctx); }

/* A forwarded (unpermuted) tensor is wherever its source is. */
static bool rows_file_range(void *ctx, const lc_tensor *t, int *fd, uint64_t *off) {
    const rows_view *v = ctx;
    (void)t;
    return v->heads == 0 && lc_tensor_file_range(v->src, fd, off);
}

static const lc_source_ops ROWS_OPS = { rows_read, ctx_free, rows_file_range };

static bool same_layout(const lc_tensor *a, const lc_tensor *b) {
    return a->dtype == b->dtype && a->ndim == b->ndim && a->nbytes == b->nbytes &&
           memcmp(a->shape, b->shape, sizeof a->shape[0] * a->ndim) == 0;
}

static lc_code attach_rows(lc_tensor *dst, const lc_tensor *src, uint32_t heads, bool inverse,
                           lc_error *err) {
    if (!same_layout(dst, src))
        return lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "tensor %.80s: view and source differ in "
                       "dtype or shape", dst->name);
    rows_view *v = lc_calloc(1, sizeof *v);
    if (!v)
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    v->src = src;
    v->heads = heads;
    v->inverse = inverse;
    v->rows = src->ndim ? src->shape[0] : 1;
    v->row_bytes = v->rows ? src->nbytes / v->rows : 0;
    dst->data = NULL;
    dst->ops = &ROWS_OPS;
    dst->ctx = v;
    return LC_OK;
}

lc_code lc_view_heads(lc_tensor *dst, const lc_tensor *src, uint32_t heads, bool inverse,
                      lc_error *err) {
    if (src->ndim < 1 || heads == 0 || src->shape[0] % ((uint64_t)heads * 2) != 0)
        return lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET,
                       "tensor %.80s: %" PRIu64 " rows do not split into %u heads of pairs",
                       src->name, src->ndim ? src->shape[0] : 0, heads);
    return attach_rows(dst, src, heads, inverse, err);
}

lc_code lc_view_forward(lc_tensor *dst, const lc_tensor *src, lc_error *err) {
    return attach_rows(dst, src, 0, false, err);
}

/* ---- file ----
 * Faster than copying out of a map for a whole-model pass: no page faults, and the
 * map's pages never join the process's RSS. */

typedef struct file_view {
    int fd;
    uint64_t base;          /* file offset of the tensor's first byte */
    char path[];
} file_view;

static lc_code file_read(void *ctx, const lc_tensor *t, uint64_t off, void *dst, size_t len,
                         lc_error *err) {
    const file_view *v = ctx;
    uint8_t *p = dst;
    while (len) {
        const ssize_t n = pread(v->fd, p, len, (off_t)(v->base + off));
        if (n <= 0) {
            lc_fail(err, n < 0 ? LC_E_IO : LC_E_TRUNCATED, v->base + off, "reading %zu bytes "
                    "of tensor %.80s failed%s", len, t->name, n < 0 ? "" : ": the file ends");
            lc_err_context(err, v->path, t->name);
            return err ? err->code : LC_E_IO;
        }
        p += n;
        off += (uint64_t)n;
        len -= (size_t)n;
    }
    return LC_OK;
}

static bool file_range(void *ctx, const lc_tensor *t, int *fd, uint64_t *off) {
    const file_view *v = ctx;
    (void)t;
    *fd = v->fd;
    *off = v->base;
    return true;
}

static const lc_source_ops FILE_OPS = { file_read, ctx_free, file_range };

lc_code lc_view_file(lc_tensor *dst, int fd, uint64_t offset, const char *path, lc_error *err) {
    const size_t n = strlen(path ? path : "");
    file_view *v = lc_calloc(1, sizeof *v + n + 1);
    if (!v)
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    v->fd = fd;
    v->base = offset;
    memcpy(v->path, path ? path : "", n + 1);
    dst->data = NULL;
    dst->ops = &FILE_OPS;
    dst->ctx = v;
    dst->file_offset = offset;
    return LC_OK;
}

/* ---- map ----
 * A mapped page the process has touched counts in its RSS until unmapped, so copying
 * a 1.5 GiB model out of one map would show 1.5 GiB peak RSS. This view copies from
 * the map and, once the reads have moved DROP_LAG past a range, tells the kernel it
 * may drop those pages from the process (MADV_DONTNEED: a later touch refaults them
 * from the page cache, so a reader that goes back still sees the same bytes). */

#define DROP_LAG (1u << 20)

typedef struct map_view {
    const uint8_t *base;          /* the tensor's bytes in the map */
    uint64_t nbytes;
    _Atomic uint64_t dropped;     /* pages before base + dropped were given back */
} map_view;

static uintptr_t page_down(uintptr_t a) {
    static uintptr_t mask;
    if (!mask) {
        long ps = sysconf(_SC_PAGESIZE);
        mask = ~(uintptr_t)((ps > 0 ? ps : 4096) - 1);
    }
    return a & mask;
}

static lc_code map_read(void *ctx, const lc_tensor *t, uint64_t off, void *dst, size_t len,
                        lc_error *err) {
    map_view *d = ctx;
    (void)t;
    (void)err;
    memcpy(dst, d->base + off, len);
    const uint64_t end = off + len;
    const uint64_t target = end == d->nbytes ? end : end > DROP_LAG ? end - DROP_LAG : 0;
    const uint64_t done = atomic_load_explicit(&d->dropped, memory_order_relaxed);
    if (target >= done + DROP_LAG || (end == d->nbytes && target > done)) {
        const uintptr_t lo = page_down((uintptr_t)(d->base + done));
        const uintptr_t hi = page_down((uintptr_t)(d->base + target));
        if (hi > lo)
            madvise((void *)lo, hi - lo, MADV_DONTNEED);   /* advice: failure is harmless */
        atomic_store_explicit(&d->dropped, target, memory_order_relaxed);
    }
    return LC_OK;
}

static const lc_source_ops MAP_OPS = { map_read, ctx_free, NULL };

lc_code lc_view_map(lc_tensor *dst, const lc_tensor *s, lc_error *err) {
    if (!s->data || dst->nbytes != s->nbytes)
        return lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "tensor %.80s: a map view needs a mapped "
                       "source of the same size", dst->name);
    map_view *d = lc_calloc(1, sizeof *d);
    if (!d)
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    d->base = s->data;
    d->nbytes = s->nbytes;
    atomic_init(&d->dropped, 0);
    dst->data = NULL;
    dst->ops = &MAP_OPS;
    dst->ctx = d;
    dst->file_offset = s->file_offset;
    return LC_OK;
}
