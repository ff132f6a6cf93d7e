/* quant/quant.h: block quantization kernels and the table that picks them.
 *
 * Each supported type has a scalar reference, lc_<type>_quantize_ref and
 * lc_<type>_dequantize_ref, that is the spec: its bytes are identical to ggml's
 * quantize_row_<type>_ref, which is what llama-quantize writes without an
 * importance matrix. Faster variants (AVX2, NEON, CUDA) must produce the same
 * bytes and are reached through one lc_qkernels table chosen at run time.
 *
 * Kernel contract (all of them): `n` is a count of floats. Only the n / block_size
 * whole blocks are read and written; a tail shorter than a block is neither read
 * nor written (callers that need rows use lc_quantize_rows, which rejects such
 * rows). Kernels never fail and never allocate; they are thread-safe. NaN and
 * infinite inputs give the bytes ggml gives when built by gcc for x86-64 (see
 * quant/ref.c "Non-finite inputs"). */
#ifndef LC_QUANT_QUANT_H
#define LC_QUANT_QUANT_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#include "libconvert/dtype.h"
#include "libconvert/error.h"

typedef void (*lc_quantize_fn)(const float *restrict x, void *restrict y, size_t n);
typedef void (*lc_dequantize_fn)(const void *restrict x, float *restrict y, size_t n);

/* ---- scalar references (quant/ref.c, quant/ref_k.c) ---- */
void lc_q8_0_quantize_ref(const float *restrict x, void *restrict y, size_t n);
void lc_q8_0_dequantize_ref(const void *restrict x, float *restrict y, size_t n);
void lc_q4_0_quantize_ref(const float *restrict x, void *restrict y, size_t n);
void lc_q4_0_dequantize_ref(const void *restrict x, float *restrict y, size_t n);
void lc_q4_1_quantize_ref(const float *restrict x, void *restrict y, size_t n);
void lc_q4_1_dequantize_ref(const void *restrict x, float *restrict y, size_t n);
void lc_q5_0_quantize_ref(const float *restrict x, void *restrict y, size_t n);
void lc_q5_0_dequantize_ref(const void *restrict x, float *restrict y, size_t n);
void lc_q5_1_quantize_ref(const float *restrict x, void *restrict y, size_t n);
void lc_q5_1_dequantize_ref(const void *restrict x, float *restrict y, size_t n);
void lc_q4_K_quantize_ref(const float *restrict x, void *restrict y, size_t n);
void lc_q4_K_dequantize_ref(const void *restrict x, float *restrict y, size_t n);
void lc_q6_K_quantize_ref(const float *restrict x, void *restrict y, size_t n);
void lc_q6_K_dequantize_ref(const void *restrict x, float *restrict y, size_t n);

/* ---- the kernel table (quant/dispatch.c) ---- */

/* One variant's kernels, indexed by lc_dtype. A NULL entry means "use ref". */
typedef struct lc_qkernels {
    const char      *name;                    /* "ref", "avx2", "neon", "cuda" */
    lc_quantize_fn   quantize[LC_DT_COUNT];
    lc_dequantize_fn dequantize[LC_DT_COUNT];
} lc_qkernels;

/* The fastest variant this build and CPU support, chosen once (thread-safe). The
 * environment variable LC_QUANT=ref|avx2|neon|cuda forces one when it is available.
 * Built today: "ref" and, on x86-64 CPUs with AVX2+FMA+F16C, "avx2" (Q8_0 and Q4_0;
 * its other entries are the reference). Never NULL; valid for the life of the process. */
const lc_qkernels *lc_qkernels_best(void);

/* The variant called `name`; NULL when it is not built in or the CPU lacks it. */
const lc_qkernels *lc_qkernels_get(const char *name);

/* `k`'s kernel for `t`, falling back to the reference when `k` has none; NULL when
 * no variant handles `t` (plain types, or block types we do not implement). */
lc_quantize_fn   lc_qk_quantize(const lc_qkernels *k, lc_dtype t);
lc_dequantize_fn lc_qk_dequantize(const lc_qkernels *k, lc_dtype t);

/* True when `t` can be quantized and dequantized here (Q8_0 Q4_0 Q4_1 Q5_0 Q5_1
 * Q4_K Q6_K). */
bool lc_quant_supported(lc_dtype t);

/* Quantizes `nrows` contiguous rows of `ncols` floats from `x` into `y`, which must
 * hold nrows * lc_dtype_row_bytes(to, ncols) bytes, with lc_qkernels_best().
 * LC_E_ARG when ncols is not a multiple of `to`'s block size (nothing is written),
 * LC_E_UNSUPPORTED when `to` has no quantizer, LC_E_OVERFLOW when the sizes do not
 * fit in size_t. Thread-safe; rows may be split between threads by the caller. */
lc_code lc_quantize_rows(lc_dtype to, const float *x, void *y, size_t nrows, size_t ncols,
                         lc_error *err);

/* The inverse: `nrows` rows of `ncols` elements of type `from` into floats. Same codes. */
lc_code lc_dequantize_rows(lc_dtype from, const void *x, float *y, size_t nrows, size_t ncols,
                           lc_error *err);

#endif
