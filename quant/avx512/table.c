/* quant/avx512/table.c: the AVX-512 variant's kernel table, LC_QUANT_AVX512_TABLE's
 * choice per type, and quant/avx2/'s dequantizer for every type of LC_DEQUANT_AVX2_TYPES
 * (the dequantize-only types: memory-bound, as the 32-element types are); dispatch.c
 * fills the types it leaves out from the reference. The grid i-quants' row entries are
 * its own (iq_search.c). */
#include "libconvert/dtype.h"
#include "quant/avx512/kernels.h"
#include "quant/quant.h"

#define QUANTIZE(T, stem, q, d)   [LC_DT_##T] = lc_##stem##_quantize_##q,
#define DEQUANTIZE(T, stem, q, d) [LC_DT_##T] = lc_##stem##_dequantize_##d,
#define DEQUANTIZE_ONLY(T, stem)  [LC_DT_##T] = lc_##stem##_dequantize_avx2,

#define QUANTIZE_ROWS(T, stem) [LC_DT_##T] = lc_##stem##_quantize_rows_avx512,
#define QUANTIZE_ROWS_W(T, stem) [LC_DT_##T] = lc_##stem##_quantize_rows_wavx512,

const lc_qkernels lc_qk_avx512 = {
    .name = "avx512",
    .quantize = { LC_QUANT_AVX512_TABLE(QUANTIZE) },
    .dequantize = { LC_QUANT_AVX512_TABLE(DEQUANTIZE) LC_DEQUANT_AVX2_TYPES(DEQUANTIZE_ONLY) },
    .quantize_rows = { LC_IQ_ROWS_WITH(QUANTIZE_ROWS) LC_IQ4_ROWS(QUANTIZE_ROWS)
                       LC_W_ROWS(QUANTIZE_ROWS_W) },
};
