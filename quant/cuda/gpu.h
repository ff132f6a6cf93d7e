/* quant/cuda/gpu.h: private to quant/cuda/. The few GPU primitives the CUDA back end
 * (backend.c) is written against, with two implementations: the NVIDIA driver, loaded
 * at run time (driver.c), and an emulation on the CPU (emulate.c, LC_CUDA_EMULATE=1)
 * that runs the kernels' item functions and queues every stream's work until the
 * stream is synchronised, so that the back end's chunking, double buffering and
 * stream order are tested on machines without a GPU.
 *
 * Device memory is a 64-bit device address; a stream is an opaque pointer. Every
 * asynchronous call is ordered within its stream only; host memory given to h2d/d2h
 * must come from host_alloc (pinned) and stay untouched until the stream is synced. */
#ifndef LC_QUANT_CUDA_GPU_H
#define LC_QUANT_CUDA_GPU_H

#include <stddef.h>
#include <stdint.h>

#include "libconvert/error.h"
#include "quant/cuda/block_ops.h"

/* The kernels of kernels.cu, one per op of block_ops.h; lc_cu_op_name gives "f16_f32",
 * "q4_K_quantize", ... (the kernel is lc_k_<name>). */
typedef enum lc_cu_op {
#define LC_CU_OP_CONVERT(name, from, to) LC_CU_OP_##name,
#define LC_CU_OP_BLOCK(T, stem) LC_CU_OP_##stem##_quantize, LC_CU_OP_##stem##_dequantize,
    LC_CU_CONVERT_OPS(LC_CU_OP_CONVERT)
    LC_QUANT_TYPES(LC_CU_OP_BLOCK)
#undef LC_CU_OP_CONVERT
#undef LC_CU_OP_BLOCK
    LC_CU_OP_COUNT
} lc_cu_op;

const char *lc_cu_op_name(lc_cu_op op);

typedef struct lc_gpu lc_gpu;

typedef struct lc_gpu_ops {
    void    (*close)(lc_gpu *g);
    /* Makes the device current on the calling thread (the driver's context). */
    lc_code (*bind)(lc_gpu *g, lc_error *err);
    lc_code (*host_alloc)(lc_gpu *g, size_t n, void **p, lc_error *err);    /* pinned */
    void    (*host_free)(lc_gpu *g, void *p);
    lc_code (*dev_alloc)(lc_gpu *g, size_t n, uint64_t *p, lc_error *err);
    void    (*dev_free)(lc_gpu *g, uint64_t p);
    lc_code (*stream_new)(lc_gpu *g, void **s, lc_error *err);
    void    (*stream_free)(lc_gpu *g, void *s);
    lc_code (*h2d)(lc_gpu *g, uint64_t dst, const void *src, size_t n, void *s,
                   lc_error *err);
    lc_code (*d2h)(lc_gpu *g, void *dst, uint64_t src, size_t n, void *s, lc_error *err);
    lc_code (*d2d)(lc_gpu *g, uint64_t dst, uint64_t src, size_t n, void *s, lc_error *err);
    /* Kernel `op` over `items` items (block_ops.h): src, dst device addresses. */
    lc_code (*launch)(lc_gpu *g, lc_cu_op op, uint64_t src, uint64_t dst, uint64_t items,
                      void *s, lc_error *err);
    /* Waits for everything queued on s; LC_E_IO naming the error of any of it. */
    lc_code (*sync)(lc_gpu *g, void *s, lc_error *err);
    /* Free and total device memory, in bytes. */
    lc_code (*mem_info)(lc_gpu *g, uint64_t *free_b, uint64_t *total_b, lc_error *err);
} lc_gpu_ops;

/* Each implementation's device starts with this. */
struct lc_gpu {
    const lc_gpu_ops *ops;
};

/* Open device `index`; desc gets "cuda:N NAME (sm_XY, M GiB, driver A.B)". Codes as
 * lc_qdev_open's. */
lc_code lc_gpu_open_driver(unsigned index, lc_gpu **out, char *desc, size_t cap,
                           lc_error *err);
lc_code lc_gpu_open_emulated(unsigned index, lc_gpu **out, char *desc, size_t cap,
                             lc_error *err);

/* The fatbin of kernels.cu, embedded by fatbin.c. */
extern const unsigned char lc_cuda_fatbin[];
extern const unsigned char lc_cuda_fatbin_end[];

#endif
