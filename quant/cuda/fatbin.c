/* quant/cuda/fatbin.c: the fatbin nvcc made from kernels.cu, as bytes in .rodata
 * (lc_cuda_fatbin .. lc_cuda_fatbin_end), for driver.c's cuModuleLoadData. The
 * Makefile passes the file's path as LC_CUDA_FATBIN and makes this object depend on it;
 * the assembler's .incbin reads it, so no generated source is needed. */
#include "quant/cuda/gpu.h"

#ifndef LC_CUDA_FATBIN
#error "LC_CUDA_FATBIN must name the fatbin of quant/cuda/kernels.cu (the Makefile sets it)"
#endif

__asm__(".section .rodata\n"
        ".balign 64\n"
        ".globl lc_cuda_fatbin\n"
        ".type lc_cuda_fatbin, @object\n"
        "lc_cuda_fatbin:\n"
        ".incbin \"" LC_CUDA_FATBIN "\"\n"
        ".globl lc_cuda_fatbin_end\n"
        ".type lc_cuda_fatbin_end, @object\n"
        "lc_cuda_fatbin_end:\n"
        ".byte 0\n"
        ".previous\n");
