/* quant/view.h: lazy quantizing and dequantizing tensor sources.
 *
 * dst reads src through the quantizer (src F32 rows -> dst rows of a block type) or
 * the dequantizer (src block rows -> dst F32 rows), any byte range at a time, so a
 * writer streams a whole model through a bounded buffer. Blocks are independent of
 * each other in every type here (no importance matrix), so a read converts only the
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

#endif
