/* quant/cuda/kernels.cu: the CUDA back end's kernels, built by nvcc into a fatbin only
 * (Makefile: sm_80, sm_90, the newest architecture nvcc knows, and compute_80 PTX for
 * the GPUs after it), which quant/cuda/fatbin.c embeds and quant/cuda/backend.c loads
 * through the driver API. No host code here: nothing links against the CUDA runtime.
 *
 * Each kernel is lc_k_<op>(src, dst, n): a grid-stride loop over n items, thread t
 * taking items t, t + stride, ... and running block_ops.h's lc_cu_<op>_item on each,
 * the function the host emulation (emulate.c) and tests/cuda/ run. Items are
 * independent (one quantized block, or one element), so the launch shape changes
 * nothing but speed. The exactness flags and why they suffice: block_ops.h. */
#include "quant/cuda/block_ops.h"

#define LC_CU_KERNEL(name)                                                                  \
    extern "C" __global__ void __launch_bounds__(128)                                       \
    lc_k_##name(const void *__restrict__ src, void *__restrict__ dst, unsigned long long n) { \
        const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;       \
        for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x +           \
                                    threadIdx.x; i < n; i += stride)                        \
            lc_cu_##name##_item(src, dst, i);                                               \
    }

#define LC_CU_CONVERT_KERNEL(name, from, to) LC_CU_KERNEL(name)
LC_CU_CONVERT_OPS(LC_CU_CONVERT_KERNEL)

#define LC_CU_BLOCK_KERNELS(T, stem) LC_CU_KERNEL(stem##_quantize) LC_CU_KERNEL(stem##_dequantize)
LC_QUANT_TYPES(LC_CU_BLOCK_KERNELS)
