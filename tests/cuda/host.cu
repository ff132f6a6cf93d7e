/* tests/cuda/host.cu: the CUDA back end's block functions (quant/cuda/block_ops.h)
 * compiled by nvcc for the host, as row kernels with the reference's signature, so that
 * tests/cuda/ can hold them against quant/ref*.c and libconvert/convert.c byte for byte.
 *
 * Built twice (Makefile "cuda-host-tests"): LC_CU_VARIANT=cuhost, where each float
 * operation is the host's own (x86 NaN rules by hardware), and LC_CU_VARIANT=cunanfix
 * with -DLC_CU_NANFIX, where every NaN result is rewritten from the operands as the
 * device code does it. The second is the device's arithmetic on the CPU: the GPU's own
 * NaN bits never reach the output, so they need no simulating. */
#include <stddef.h>

#include "quant/cuda/block_ops.h"

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)

#define ROWS(T, stem)                                                                      \
    extern "C" void CAT(lc_##stem##_quantize_, LC_CU_VARIANT)(const float *x, void *y,     \
                                                              size_t n) {                  \
        for (size_t b = 0; b < n / LC_CU_QK_##stem; b++)                                   \
            lc_cu_##stem##_quantize_item(x, y, b);                                         \
    }                                                                                      \
    extern "C" void CAT(lc_##stem##_dequantize_, LC_CU_VARIANT)(const void *x, float *y,   \
                                                                size_t n) {                \
        for (size_t b = 0; b < n / LC_CU_QK_##stem; b++)                                   \
            lc_cu_##stem##_dequantize_item(x, y, b);                                       \
    }
LC_QUANT_TYPES(ROWS)

/* The element conversions by name ("f16_f32", ...); 0 when there is no such op. */
#define CONVERT(name, from, to)                                                           \
    if (op[0] == #name[0] && __builtin_strcmp(op, #name) == 0) {                           \
        for (size_t i = 0; i < n; i++)                                                     \
            lc_cu_##name##_item(src, dst, i);                                              \
        return 1;                                                                          \
    }
extern "C" int CAT(lc_convert_, LC_CU_VARIANT)(const char *op, const void *src, void *dst,
                                               size_t n) {
    LC_CU_CONVERT_OPS(CONVERT)
    return 0;
}

extern "C" float CAT(lc_roundf_, LC_CU_VARIANT)(float v) { return lc_cu_roundf(v); }
