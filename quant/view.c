/* quant/view.c: lazy (de)quantizing sources (see view.h). */
#include "quant/view.h"

#include <inttypes.h>
#include <string.h>

#include "libconvert/alloc.h"
#include "quant/quant.h"

typedef struct qview {
    const lc_tensor *src;       /* F32 when quantizing, blocks when not */
    lc_dtype qtype;
    bool quantize;
    uint64_t block_elems;       /* floats per block */
    uint64_t src_block, dst_block;  /* bytes of one block on each side */
    lc_quant_imatrix im;        /* im.get NULL: none */
    uint64_t ncols, row_bytes;  /* with an imatrix: a row's floats and its blocks' bytes */
} qview;

/* Blocks per step: about 1 MiB of floats. */
static uint64_t batch_blocks(const qview *q) {
    const uint64_t per = q->block_elems * 4;
    return per >= (1u << 20) ? 1 : (1u << 20) / per;
}

static lc_code qview_read(void *ctx, const lc_tensor *t, uint64_t off, void *dst, size_t len,
                          lc_error *err) {
    const qview *q = ctx;
    (void)t;
    const uint64_t first = off / q->dst_block;
    const uint64_t last = (off + len + q->dst_block - 1) / q->dst_block;
    const uint64_t batch = batch_blocks(q);
    const uint64_t n = last - first < batch ? last - first : batch;
    float *f = lc_malloc((size_t)(n * q->block_elems * 4));
    uint8_t *b = lc_malloc((size_t)(n * (q->quantize ? q->dst_block : q->src_block)));
    lc_code rc = LC_OK;
    if (!f || !b) {
        rc = lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory for %" PRIu64 " blocks", n);
        goto done;
    }
    uint8_t *out = dst;
    for (uint64_t k0 = first; k0 < last && rc == LC_OK; k0 += n) {
        const uint64_t k = last - k0 < n ? last - k0 : n;
        const size_t elems = (size_t)(k * q->block_elems);
        if (q->quantize) {
            rc = lc_tensor_read(q->src, k0 * q->src_block, f, (size_t)(k * q->src_block), err);
            if (rc == LC_OK)
                rc = lc_quantize_rows(q->qtype, f, b, 1, elems, err);
        } else {
            rc = lc_tensor_read(q->src, k0 * q->src_block, b, (size_t)(k * q->src_block), err);
            if (rc == LC_OK)
                rc = lc_dequantize_rows(q->qtype, b, f, 1, elems, err);
        }
        if (rc != LC_OK)
            break;
        /* Copy the part of these k blocks that [off, off + len) covers. */
        const uint8_t *blocks = q->quantize ? b : (const uint8_t *)f;
        const uint64_t lo = k0 * q->dst_block, hi = (k0 + k) * q->dst_block;
        const uint64_t from = off > lo ? off : lo, to = off + len < hi ? off + len : hi;
        memcpy(out + (from - off), blocks + (from - lo), (size_t)(to - from));
    }
done:
    lc_free(f);
    lc_free(b);
    return rc;
}

/* With an importance matrix: whole rows, each with its matrix's weights. */
static lc_code qview_read_rows(void *ctx, const lc_tensor *t, uint64_t off, void *dst,
                               size_t len, lc_error *err) {
    const qview *q = ctx;
    (void)t;
    const uint64_t first = off / q->row_bytes;
    const uint64_t last = (off + len + q->row_bytes - 1) / q->row_bytes;
    const uint64_t per = q->ncols * 4;
    const uint64_t batch = per >= (1u << 20) ? 1 : (1u << 20) / per;
    const uint64_t n = last - first < batch ? last - first : batch;
    float *f = lc_malloc((size_t)(n * per));
    float *w = lc_malloc((size_t)per);
    uint8_t *b = lc_malloc((size_t)(n * q->row_bytes));
    lc_code rc = LC_OK;
    if (!f || !w || !b) {
        rc = lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory for %" PRIu64 " rows", n);
        goto done;
    }
    uint8_t *out = dst;
    uint64_t have = UINT64_MAX;         /* the matrix whose weights w holds */
    for (uint64_t r0 = first; r0 < last && rc == LC_OK; r0 += n) {
        const uint64_t k = last - r0 < n ? last - r0 : n;
        rc = lc_tensor_read(q->src, r0 * per, f, (size_t)(k * per), err);
        /* Runs of rows of one matrix. */
        for (uint64_t r = r0; rc == LC_OK && r < r0 + k;) {
            const uint64_t mat = r / q->im.rows_per_matrix;
            uint64_t end = (mat + 1) * q->im.rows_per_matrix;
            end = end < r0 + k ? end : r0 + k;
            if (mat != have && (rc = q->im.get(q->im.ctx, mat, w, err)) != LC_OK)
                break;
            have = mat;
            rc = lc_quantize_rows_imatrix(q->qtype, f + (r - r0) * q->ncols,
                                          b + (r - r0) * q->row_bytes, (size_t)(end - r),
                                          (size_t)q->ncols, w, err);
            r = end;
        }
        if (rc != LC_OK)
            break;
        const uint64_t lo = r0 * q->row_bytes, hi = (r0 + k) * q->row_bytes;
        const uint64_t from = off > lo ? off : lo, to = off + len < hi ? off + len : hi;
        memcpy(out + (from - off), b + (from - lo), (size_t)(to - from));
    }
done:
    lc_free(f);
    lc_free(w);
    lc_free(b);
    return rc;
}

static void qview_free(void *ctx) {
    qview *q = ctx;
    if (q && q->im.free)
        q->im.free(q->im.ctx);
    lc_free(ctx);
}

static const lc_source_ops QVIEW_OPS = { qview_read, qview_free, NULL };
static const lc_source_ops QVIEW_ROWS_OPS = { qview_read_rows, qview_free, NULL };

lc_code lc_quant_view(lc_tensor *dst, const lc_tensor *src, lc_dtype qtype, bool quantize,
                      lc_error *err) {
    if (quantize ? !lc_quant_writable(qtype) : !lc_dequant_supported(qtype))
        return lc_fail(err, LC_E_UNSUPPORTED, LC_NO_OFFSET, "tensor %.80s: no %s for %s",
                       src->name, quantize ? "quantizer" : "dequantizer", lc_dtype_name(qtype));
    const lc_dtype_info *info = lc_dtype_get(qtype);
    const uint64_t ncols = src->ndim ? src->shape[src->ndim - 1] : 1;
    if (ncols % info->block_size != 0)
        return lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "tensor %.80s: %" PRIu64 " columns are not "
                       "whole %s blocks", src->name, ncols, lc_dtype_name(qtype));
    qview *q = lc_calloc(1, sizeof *q);
    if (!q)
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    q->src = src;
    q->qtype = qtype;
    q->quantize = quantize;
    q->block_elems = info->block_size;
    q->src_block = quantize ? q->block_elems * 4 : info->type_size;
    q->dst_block = quantize ? info->type_size : q->block_elems * 4;
    dst->data = NULL;
    dst->ops = &QVIEW_OPS;
    dst->ctx = q;
    dst->file_offset = LC_NO_OFFSET;
    return LC_OK;
}

lc_code lc_quant_view_imatrix(lc_tensor *dst, const lc_tensor *src, lc_dtype qtype,
                              const lc_quant_imatrix *im, lc_error *err) {
    lc_code rc = lc_quant_view(dst, src, qtype, true, err);
    if (rc != LC_OK) {
        if (im->free)
            im->free(im->ctx);
        return rc;
    }
    qview *q = dst->ctx;
    q->im = *im;
    q->ncols = src->ndim ? src->shape[src->ndim - 1] : 1;
    q->row_bytes = q->ncols / q->block_elems * q->dst_block;
    if (q->im.rows_per_matrix == 0)
        q->im.rows_per_matrix = UINT64_MAX;
    dst->ops = &QVIEW_ROWS_OPS;
    return LC_OK;
}
