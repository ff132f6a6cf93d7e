/* quant/avx512/kernels.h: private to quant/. What the AVX-512 variant speeds up and what
 * it needs from the CPU.
 *
 * Every .c in this folder is compiled with -mavx512f -mavx512bw -mavx512vl -mavx2 -mfma
 * -mf16c, on x86-64 only (the Makefile's rule for the folder), which also defines
 * LC_HAVE_AVX512 for the whole build; dispatch.c hands out lc_qk_avx512 only when
 * lc_cpu_has_all(LC_QK_AVX512_NEEDS). Still -ffp-contract=off, as everywhere in quant/.
 *
 * AVX-512 pays where the work is arithmetic on many independent lanes: the K types'
 * scale searches (quant/lanes.h), twice as wide as in quant/avx2/, and in Q8_0 and Q4_0,
 * the types people quantize whole arrays to (q8_0.c: AVX2 ran them at half the speed of a
 * plain read of their input). The other 32-element types and every dequantizer run near
 * memory speed with AVX2, so the variant takes quant/avx2/'s kernels for them (this
 * folder's CPU has AVX2, FMA and F16C too). */
#ifndef LC_QUANT_AVX512_KERNELS_H
#define LC_QUANT_AVX512_KERNELS_H

#include <stddef.h>

#include "libconvert/cpu.h"
#include "quant/avx2/kernels.h"
#include "quant/iq_grid_impl.h"
#include "quant/quant.h"

/* The kernel that serves each type in the AVX-512 variant:
 * X(TYPE, stem, quantize variant, dequantize variant). The dequantize-only types take
 * quant/avx2/'s dequantizers, every one of LC_DEQUANT_AVX2_TYPES (table.c). A type of
 * quant/types.h left out of both is served by the reference. */
#define LC_QUANT_AVX512_TABLE(X)       \
    X(Q8_0, q8_0, avx512, avx2)        \
    X(Q4_0, q4_0, avx512, avx2)        \
    X(Q4_1, q4_1, avx2, avx2)          \
    X(Q5_0, q5_0, avx2, avx2)          \
    X(Q5_1, q5_1, avx2, avx2)          \
    X(Q2_K, q2_K, avx512, avx2)        \
    X(Q3_K, q3_K, avx512, avx2)        \
    X(Q4_K, q4_K, avx512, avx2)        \
    X(Q5_K, q5_K, avx512, avx2)        \
    X(Q6_K, q6_K, avx512, avx2)

/* The CPU features the folder's compiler flags assume (keep in step with the Makefile). */
#define LC_QK_AVX512_NEEDS                                                              \
    (LC_CPU_BIT(LC_CPU_AVX512F) | LC_CPU_BIT(LC_CPU_AVX512BW) |                         \
     LC_CPU_BIT(LC_CPU_AVX512VL) | LC_QK_AVX2_NEEDS)

/* This folder's own kernels: same bytes as the _ref kernels. */
void lc_q8_0_quantize_avx512(const float *restrict x, void *restrict y, size_t n);
void lc_q4_0_quantize_avx512(const float *restrict x, void *restrict y, size_t n);
void lc_q2_K_quantize_avx512(const float *restrict x, void *restrict y, size_t n);
void lc_q3_K_quantize_avx512(const float *restrict x, void *restrict y, size_t n);
void lc_q4_K_quantize_avx512(const float *restrict x, void *restrict y, size_t n);
void lc_q5_K_quantize_avx512(const float *restrict x, void *restrict y, size_t n);
void lc_q6_K_quantize_avx512(const float *restrict x, void *restrict y, size_t n);

extern const lc_qkernels lc_qk_avx512;

/* lc_iq2_xxs_quantize_rows_avx512 ... lc_iq1_m_quantize_rows_avx512: the grid i-quants' row
 * entries with this folder's searches (iq_search.c); lc_iq4_nl/xs_quantize_rows_avx512
 * with its scale tries (iq4_tries.c). The reference's bytes. */
#define LC_IQ_ROWS_DECLARE_AVX512(T, stem)                                                   \
    void lc_##stem##_quantize_rows_avx512(const float *restrict x, void *restrict y,        \
                                        size_t nrows, size_t n_per_row,                   \
                                        const float *restrict imatrix);
LC_IQ_ROWS_WITH(LC_IQ_ROWS_DECLARE_AVX512)
LC_IQ4_ROWS(LC_IQ_ROWS_DECLARE_AVX512)
#undef LC_IQ_ROWS_DECLARE_AVX512

/* lc_q4_0_quantize_rows_wavx512 ... lc_q6_K_quantize_rows_wavx512: the weighted row entries
 * of the K and legacy types with this folder's scale tries (w_tries.c); the reference's
 * bytes. The row entry runs only with an importance matrix (dispatch.c: without one the
 * block kernels run). */
#define LC_W_ROWS_DECLARE_AVX512(T, stem)                                                   \
    void lc_##stem##_quantize_rows_wavx512(const float *restrict x, void *restrict y,      \
                                         size_t nrows, size_t n_per_row,                 \
                                         const float *restrict imatrix);
LC_W_ROWS(LC_W_ROWS_DECLARE_AVX512)
#undef LC_W_ROWS_DECLARE_AVX512

#endif
