/* formats/hf_view.c: the lazy tensor sources the HF <-> GGUF conversion stacks:
 * (de)quantizing rows, copying out of a map while giving its pages back, and pread
 * from the source file. See hf_view.h. */
/* _DEFAULT_SOURCE for madvise(MADV_DONTNEED): posix_madvise's DONTNEED is a no-op in
 * glibc. */
#define _DEFAULT_SOURCE 1

#include "formats/hf_view.h"

#include <inttypes.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "libconvert/alloc.h"
#include "quant/quant.h"

/* ---- a lazy source that quantizes (F32 rows -> block rows) or dequantizes ---- */

typedef struct qsrc {
    const lc_tensor *src;       /* F32 rows when quantizing, block rows when not */
    uint64_t ncols;             /* elements per row */
    uint64_t src_row, dst_row;  /* bytes per row on each side */
    lc_dtype qtype;             /* the block type */
    bool quantize;
} qsrc;

/* Rows per step: about 1 MiB of floats, at least one row. */
static uint64_t qsrc_batch(const qsrc *q) {
    uint64_t per = q->ncols * 4;
    return per >= (1u << 20) ? 1 : (1u << 20) / per;
}

static lc_code qsrc_read(void *ctx, const lc_tensor *t, uint64_t off, void *dst, size_t len,
                         lc_error *err) {
    const qsrc *q = ctx;
    (void)t;
    const uint64_t first = off / q->dst_row, last = (off + len + q->dst_row - 1) / q->dst_row;
    const uint64_t batch = qsrc_batch(q);
    const uint64_t n = last - first < batch ? last - first : batch;
    /* Both buffers hold n rows; n * ncols * 4 <= 1 MiB or one row already in a tensor. */
    float *f = lc_malloc((size_t)(n * q->ncols * 4));
    uint8_t *b = lc_malloc((size_t)(n * (q->quantize ? q->dst_row : q->src_row)));
    lc_code rc = LC_OK;
    if (!f || !b) {
        rc = lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory for %" PRIu64 " rows", n);
        goto done;
    }
    uint8_t *out = dst;
    for (uint64_t r = first; r < last && rc == LC_OK; r += n) {
        const uint64_t k = last - r < n ? last - r : n;
        if (q->quantize) {
            rc = lc_tensor_read(q->src, r * q->src_row, f, (size_t)(k * q->src_row), err);
            if (rc == LC_OK)
                rc = lc_quantize_rows(q->qtype, f, b, (size_t)k, (size_t)q->ncols, err);
        } else {
            rc = lc_tensor_read(q->src, r * q->src_row, b, (size_t)(k * q->src_row), err);
            if (rc == LC_OK)
                rc = lc_dequantize_rows(q->qtype, b, f, (size_t)k, (size_t)q->ncols, err);
        }
        if (rc != LC_OK)
            break;
        /* Copy the part of these k rows that [off, off + len) covers. */
        const uint8_t *rows = q->quantize ? b : (const uint8_t *)f;
        const uint64_t lo = r * q->dst_row, hi = (r + k) * q->dst_row;
        const uint64_t from = off > lo ? off : lo, to = off + len < hi ? off + len : hi;
        memcpy(out + (from - off), rows + (from - lo), (size_t)(to - from));
    }
done:
    lc_free(f);
    lc_free(b);
    return rc;
}

static void qsrc_free(void *ctx) { lc_free(ctx); }

static const lc_source_ops QSRC_OPS = { qsrc_read, qsrc_free };

/* Makes dst (block type `qtype` when quantizing, F32 when not) read src through the
 * (de)quantizer. src is borrowed. */
lc_code lc_hf_view_quant(lc_tensor *dst, const lc_tensor *src, lc_dtype qtype, bool quantize,
                           lc_error *err) {
    const uint64_t ncols = src->ndim ? src->shape[src->ndim - 1] : 1;
    uint64_t qrow = 0;
    if (!lc_dtype_row_bytes(qtype, ncols, &qrow))
        return lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "tensor %.80s: %" PRIu64 " columns are not "
                       "whole %s blocks", src->name, ncols, lc_dtype_name(qtype));
    qsrc *q = lc_calloc(1, sizeof *q);
    if (!q)
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    q->src = src;
    q->qtype = qtype;
    q->quantize = quantize;
    q->ncols = ncols;
    q->src_row = quantize ? q->ncols * 4 : qrow;
    q->dst_row = quantize ? qrow : q->ncols * 4;
    dst->data = NULL;
    dst->ops = &QSRC_OPS;
    dst->ctx = q;
    dst->file_offset = LC_NO_OFFSET;
    return LC_OK;
}

/* ---- a lazy view of a mapped tensor that gives its pages back as it goes ----
 *
 * A mapped page the process has touched counts in its RSS until unmapped, so copying
 * a 1.5 GiB model out of one map would show 1.5 GiB peak RSS. This view copies from
 * the map and, once the reads have moved DROP_LAG past a range, tells the kernel it
 * may drop those pages from the process (MADV_DONTNEED: a later touch refaults them
 * from the page cache, so a reader that goes back still sees the same bytes). */

#define DROP_LAG (1u << 20)

typedef struct drop {
    const uint8_t *base;          /* the tensor's bytes in the map */
    uint64_t nbytes;
    _Atomic uint64_t dropped;     /* pages before base + dropped were given back */
} drop;

static uintptr_t page_down(uintptr_t a) {
    static uintptr_t mask;
    if (!mask) {
        long ps = sysconf(_SC_PAGESIZE);
        mask = ~(uintptr_t)((ps > 0 ? ps : 4096) - 1);
    }
    return a & mask;
}

static lc_code drop_read(void *ctx, const lc_tensor *t, uint64_t off, void *dst, size_t len,
                         lc_error *err) {
    drop *d = ctx;
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

static void drop_free(void *ctx) { lc_free(ctx); }

static const lc_source_ops DROP_OPS = { drop_read, drop_free };

/* Adds to `work` a tensor NAME that reads s's mapped bytes through a drop view, and
 * returns it in *out; when s is not a zero-copy view, *out is s itself. */
lc_code lc_hf_view_map(lc_model *work, const char *name, const lc_tensor *s,
                         const lc_tensor **out, lc_error *err) {
    *out = s;
    if (!s->data)
        return LC_OK;
    lc_tensor *t;
    LC_TRY(lc_model_add_tensor(work, name, s->dtype, s->ndim, s->shape, &t, err));
    drop *d = lc_calloc(1, sizeof *d);
    if (!d)
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    d->base = s->data;
    d->nbytes = s->nbytes;
    atomic_init(&d->dropped, 0);
    t->ops = &DROP_OPS;
    t->ctx = d;
    t->file_offset = s->file_offset;
    *out = t;
    return LC_OK;
}

/* ---- a lazy view that preads a tensor's bytes from its source file ----
 *
 * Faster than copying out of the map for a whole-model pass: no page faults, and the
 * map's pages never join the process's RSS. The descriptor is borrowed. */

typedef struct fview {
    int fd;
    uint64_t base;          /* file offset of the tensor's first byte */
} fview;

static lc_code fview_read(void *ctx, const lc_tensor *t, uint64_t off, void *dst, size_t len,
                          lc_error *err) {
    const fview *v = ctx;
    uint8_t *p = dst;
    while (len) {
        const ssize_t n = pread(v->fd, p, len, (off_t)(v->base + off));
        if (n <= 0)
            return lc_fail(err, n < 0 ? LC_E_IO : LC_E_TRUNCATED, v->base + off,
                           "reading %zu bytes of tensor %.80s failed", len, t->name);
        p += n;
        off += (uint64_t)n;
        len -= (size_t)n;
    }
    return LC_OK;
}

static void fview_free(void *ctx) { lc_free(ctx); }

static bool fview_file_range(void *ctx, const lc_tensor *t, int *fd, uint64_t *off) {
    const fview *v = ctx;
    (void)t;
    *fd = v->fd;
    *off = v->base;
    return true;
}

static const lc_source_ops FVIEW_OPS = { fview_read, fview_free, fview_file_range };

/* Adds to `work` a tensor NAME reading s's bytes at s->file_offset of fd. */
lc_code lc_hf_view_file(lc_model *work, const char *name, const lc_tensor *s, int fd,
                         const lc_tensor **out, lc_error *err) {
    lc_tensor *t;
    LC_TRY(lc_model_add_tensor(work, name, s->dtype, s->ndim, s->shape, &t, err));
    fview *v = lc_calloc(1, sizeof *v);
    if (!v)
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    v->fd = fd;
    v->base = s->file_offset;
    t->ops = &FVIEW_OPS;
    t->ctx = v;
    t->file_offset = s->file_offset;
    *out = t;
    return LC_OK;
}

