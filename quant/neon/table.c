/* quant/neon/table.c: the NEON variant's kernel table, one entry per type of
 * LC_QUANT_NEON_TYPES; dispatch.c fills the other types from the reference. */
#include "libconvert/dtype.h"
#include "quant/neon/kernels.h"
#include "quant/quant.h"

#define QUANTIZE(T, stem)   [LC_DT_##T] = lc_##stem##_quantize_neon,
#define DEQUANTIZE(T, stem) [LC_DT_##T] = lc_##stem##_dequantize_neon,

const lc_qkernels lc_qk_neon = {
    .name = "neon",
    .quantize = { LC_QUANT_NEON_TYPES(QUANTIZE) },
    .dequantize = { LC_QUANT_NEON_TYPES(DEQUANTIZE) },
};
