/* quant/neon/table.c: the NEON variant's kernel table, both kernels of every type of
 * LC_QUANT_NEON_TYPES and the dequantizer of every type of LC_DEQUANT_NEON_TYPES;
 * and the grid i-quants' row entries (iq_search.c); dispatch.c fills the other entries
 * from the reference. */
#include "libconvert/dtype.h"
#include "quant/neon/kernels.h"
#include "quant/quant.h"

#define QUANTIZE(T, stem)   [LC_DT_##T] = lc_##stem##_quantize_neon,
#define DEQUANTIZE(T, stem) [LC_DT_##T] = lc_##stem##_dequantize_neon,

#define QUANTIZE_ROWS(T, stem) [LC_DT_##T] = lc_##stem##_quantize_rows_neon,
#define QUANTIZE_ROWS_W(T, stem) [LC_DT_##T] = lc_##stem##_quantize_rows_wneon,

const lc_qkernels lc_qk_neon = {
    .name = "neon",
    .quantize = { LC_QUANT_NEON_TYPES(QUANTIZE) },
    .dequantize = { LC_QUANT_NEON_TYPES(DEQUANTIZE) LC_DEQUANT_NEON_TYPES(DEQUANTIZE) },
    .quantize_rows = { LC_IQ_ROWS_WITH(QUANTIZE_ROWS) LC_IQ4_ROWS(QUANTIZE_ROWS)
                       LC_W_ROWS(QUANTIZE_ROWS_W) },
};
