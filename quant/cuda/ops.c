/* quant/cuda/ops.c: the names of the CUDA back end's kernels (gpu.h lc_cu_op), from
 * block_ops.h's lists: the kernel of op NAME is lc_k_NAME in kernels.cu. */
#include "quant/cuda/gpu.h"

const char *lc_cu_op_name(lc_cu_op op) {
    static const char *const names[LC_CU_OP_COUNT] = {
#define NAME_CONVERT(name, from, to) [LC_CU_OP_##name] = #name,
#define NAME_BLOCK(T, stem)                                                                 \
    [LC_CU_OP_##stem##_quantize] = #stem "_quantize",                                       \
    [LC_CU_OP_##stem##_dequantize] = #stem "_dequantize",
        LC_CU_CONVERT_OPS(NAME_CONVERT)
        LC_QUANT_TYPES(NAME_BLOCK)
#undef NAME_CONVERT
#undef NAME_BLOCK
    };
    return (unsigned)op < LC_CU_OP_COUNT ? names[op] : "?";
}
