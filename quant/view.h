/* quant/view.h: lazy quantizing and dequantizing tensor sources.
 *
 * dst reads src through the quantizer (src F32 rows -> dst rows of a block type) or
 * the dequantizer (src block rows -> dst F32 rows), any byte range at a time, so a
 * writer streams a whole model through a bounded buffer. Without an importance matrix
 * blocks are independent of each other in every type here, so a read converts only the
 * blocks its range touches, about 1 MiB of floats per step, whatever the row length.
 * src is borrowed and must outlive dst's model. */
#ifndef LC_QUANT_VIEW_H
#define LC_QUANT_VIEW_H

#include <stdbool.h>

#include "libconvert/error.h"
#include "libconvert/tensor.h"

/* dst's data/ops/ctx are replaced. LC_E_ARG when the rows are not whole blocks of
 * qtype, LC_E_UNSUPPORTED when qtype has no quantizer (quantize: lc_quant_supported) or
 * no dequantizer (otherwise: lc_dequant_supported), LC_E_NOMEM. Reads report
 * LC_E_NOMEM for the batch buffers and whatever src reports. */
lc_code lc_quant_view(lc_tensor *dst, const lc_tensor *src, lc_dtype qtype, bool quantize,
                      lc_error *err);

/* An importance matrix for one tensor: get() fills `out` with the row length's weights of
 * matrix `mat` (rows [mat * rows_per_matrix, (mat + 1) * rows_per_matrix): one expert of
 * a 3-D stack, or every row of a 2-D tensor), as llama-quantize slices its imatrix per
 * expert. get() must be safe to call from several threads. The view takes ctx over and
 * releases it with free (which may be NULL), even when lc_quant_view_imatrix fails. */
typedef struct lc_quant_imatrix {
    lc_code (*get)(void *ctx, uint64_t mat, float *out, lc_error *err);
    void (*free)(void *ctx);
    void *ctx;
    uint64_t rows_per_matrix;
} lc_quant_imatrix;

/* The quantizing view, each row weighted by its matrix's importance vector
 * (lc_quantize_rows_imatrix). Reads quantize whole rows (a row's blocks may depend on the
 * whole row: lc_quant_imatrix_whole_rows), about 1 MiB of floats at a time, at least one
 * row. Same codes as lc_quant_view; reads also report get()'s. */
lc_code lc_quant_view_imatrix(lc_tensor *dst, const lc_tensor *src, lc_dtype qtype,
                              const lc_quant_imatrix *im, lc_error *err);

#endif
