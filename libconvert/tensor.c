/* libconvert/tensor.c: tensor sizes and the read that every writer streams through. */
#include "libconvert/tensor.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "libconvert/bytes.h"

bool lc_tensor_numel(const lc_tensor *t, uint64_t *numel) {
    uint64_t n = 1;
    for (uint32_t d = 0; d < t->ndim; d++)
        if (lc_mul_u64(n, t->shape[d], &n))
            return false;
    *numel = n;
    return true;
}

lc_code lc_shape_nbytes(lc_dtype dt, uint32_t ndim, const uint64_t *shape, uint64_t *nbytes,
                        lc_error *err) {
    const lc_dtype_info *info = lc_dtype_get(dt);
    if (info->block_size == 0)
        return lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "invalid dtype");
    if (ndim > LC_MAX_DIMS)
        return lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "%" PRIu32 " dimensions, at most %d supported",
                       ndim, LC_MAX_DIMS);
    uint64_t inner = ndim ? shape[ndim - 1] : 1, rows = 1;
    for (uint32_t d = 0; d + 1 < ndim; d++)
        if (lc_mul_u64(rows, shape[d], &rows))
            return lc_fail(err, LC_E_OVERFLOW, LC_NO_OFFSET, "shape overflows 64 bits");
    if (inner % info->block_size != 0)
        return lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET,
                       "row of %" PRIu64 " elements is not a multiple of %s's block of %" PRIu32,
                       inner, info->name, info->block_size);
    uint64_t row_bytes;
    if (lc_mul_u64(inner / info->block_size, info->type_size, &row_bytes) ||
        lc_mul_u64(rows, row_bytes, nbytes))
        return lc_fail(err, LC_E_OVERFLOW, LC_NO_OFFSET, "tensor byte size overflows 64 bits");
    return LC_OK;
}

lc_code lc_tensor_read(const lc_tensor *t, uint64_t off, void *dst, size_t len, lc_error *err) {
    uint64_t end;
    if (lc_add_u64(off, len, &end) || end > t->nbytes)
        return lc_fail(err, LC_E_ARG, off, "read of %zu bytes at %" PRIu64 " passes the %" PRIu64
                       "-byte tensor", len, off, t->nbytes);
    if (len == 0)
        return LC_OK;
    if (t->data) {
        memcpy(dst, t->data + off, len);
        return LC_OK;
    }
    if (!t->ops || !t->ops->read)
        return lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "tensor has no data source");
    return t->ops->read(t->ctx, t, off, dst, len, err);
}

bool lc_tensor_file_range(const lc_tensor *t, int *fd, uint64_t *off) {
    return t->ops && t->ops->file_range && t->ops->file_range(t->ctx, t, fd, off);
}

void lc_shape_format(const lc_tensor *t, char *buf, size_t cap) {
    size_t n = 0;
    if (cap == 0)
        return;
    buf[0] = '\0';
    int k = snprintf(buf, cap, "[");
    n = k > 0 && (size_t)k < cap ? (size_t)k : cap - 1;
    for (uint32_t d = 0; d < t->ndim && n < cap - 1; d++) {
        k = snprintf(buf + n, cap - n, "%s%" PRIu64, d ? ", " : "", t->shape[d]);
        n = k > 0 && (size_t)k < cap - n ? n + (size_t)k : cap - 1;
    }
    if (n < cap - 1)
        snprintf(buf + n, cap - n, "]");
}
