/* libconvert/tensor.h: one tensor of the IR and its data source.
 *
 * Shape is row-major, outermost first (PyTorch and safetensors order); only the
 * GGUF reader and writer reverse it. Data is either a zero-copy view (`data`,
 * borrowed from a map the model owns) or a lazy source (`ops` + `ctx`) that
 * materialises contiguous little-endian bytes on demand, so writers can stream. */
#ifndef LC_LIBCONVERT_TENSOR_H
#define LC_LIBCONVERT_TENSOR_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#include "libconvert/dtype.h"
#include "libconvert/error.h"

#define LC_MAX_DIMS 8

typedef struct lc_tensor lc_tensor;

typedef struct lc_source_ops {
    /* Copies bytes [off, off + len) of t's contiguous data into dst. The caller has
     * checked the range against t->nbytes. Must be safe to call from several threads
     * for different ranges. */
    lc_code (*read)(void *ctx, const lc_tensor *t, uint64_t off, void *dst, size_t len,
                    lc_error *err);
    /* Releases ctx; called once when the model is freed. May be NULL. */
    void (*free)(void *ctx);
    /* Optional. True when t's bytes are exactly [*off, *off + t->nbytes) of the open
     * file *fd, unchanged, so a writer may copy them in the kernel (copy_file_range)
     * instead of reading them. The fd stays open while the model lives. */
    bool (*file_range)(void *ctx, const lc_tensor *t, int *fd, uint64_t *off);
} lc_source_ops;

struct lc_tensor {
    char          *name;               /* owned by the model */
    lc_dtype       dtype;
    uint32_t       ndim;               /* 0 for a scalar */
    uint64_t       shape[LC_MAX_DIMS]; /* row-major, outermost first */
    uint64_t       nbytes;             /* exact size of the contiguous data */
    const uint8_t *data;               /* zero-copy view, or NULL */
    const lc_source_ops *ops;          /* lazy source when data is NULL */
    void          *ctx;                /* owned through ops->free */
    uint64_t       file_offset;        /* where the bytes start in the source file, or LC_NO_OFFSET */
};

/* Number of elements (1 for a scalar). False on overflow. */
bool lc_tensor_numel(const lc_tensor *t, uint64_t *numel);

/* Computes the byte size of a tensor of this dtype and shape. LC_E_OVERFLOW when the
 * product overflows, LC_E_MALFORMED when the innermost dimension is not a multiple
 * of the dtype's block size, LC_E_ARG for an invalid dtype or too many dims. */
lc_code lc_shape_nbytes(lc_dtype dt, uint32_t ndim, const uint64_t *shape, uint64_t *nbytes,
                        lc_error *err);

/* Copies bytes [off, off + len) of the tensor's contiguous data into dst.
 * LC_E_ARG when the range passes nbytes; otherwise whatever the source reports. */
lc_code lc_tensor_read(const lc_tensor *t, uint64_t off, void *dst, size_t len, lc_error *err);

/* The file range t's bytes are an unchanged copy of (see lc_source_ops.file_range);
 * false when it has none. */
bool lc_tensor_file_range(const lc_tensor *t, int *fd, uint64_t *off);

/* Formats the shape as "[2, 3]" into buf. */
void lc_shape_format(const lc_tensor *t, char *buf, size_t cap);

#endif
