/* quant/avx2/table.c: the AVX2 variant's kernel table, both kernels of every type of
 * LC_QUANT_AVX2_TYPES and the dequantizer of every type of LC_DEQUANT_AVX2_TYPES;
 * and the grid i-quants' row entries (iq_search.c); dispatch.c fills the other entries
 * from the reference. */
#include "libconvert/dtype.h"
#include "quant/avx2/kernels.h"
#include "quant/quant.h"

#define QUANTIZE(T, stem)   [LC_DT_##T] = lc_##stem##_quantize_avx2,
#define DEQUANTIZE(T, stem) [LC_DT_##T] = lc_##stem##_dequantize_avx2,

#define QUANTIZE_ROWS(T, stem) [LC_DT_##T] = lc_##stem##_quantize_rows_avx2,
#define QUANTIZE_ROWS_W(T, stem) [LC_DT_##T] = lc_##stem##_quantize_rows_wavx2,

const lc_qkernels lc_qk_avx2 = {
    .name = "avx2",
    .quantize = { LC_QUANT_AVX2_TYPES(QUANTIZE) },
    .dequantize = { LC_QUANT_AVX2_TYPES(DEQUANTIZE) LC_DEQUANT_AVX2_TYPES(DEQUANTIZE) },
    .quantize_rows = { LC_IQ_ROWS_WITH(QUANTIZE_ROWS) LC_IQ4_ROWS(QUANTIZE_ROWS)
                       LC_W_ROWS(QUANTIZE_ROWS_W) },
};
