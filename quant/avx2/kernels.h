/* quant/avx2/kernels.h: private to quant/. What the AVX2 variant speeds up and what it
 * needs from the CPU.
 *
 * Every .c in this folder is compiled with -mavx2 -mfma -mf16c, on x86-64 only (the
 * Makefile's rule for the folder), which also defines LC_HAVE_AVX2 for the whole build.
 * Code here may therefore use those instructions anywhere; nothing outside the folder
 * may call into it except through lc_qk_avx2, which dispatch.c hands out only when
 * lc_cpu_has_all(LC_QK_AVX2_NEEDS). Still -ffp-contract=off: every multiply and add is a
 * separate, correctly rounded IEEE operation, as in the reference. */
#ifndef LC_QUANT_AVX2_KERNELS_H
#define LC_QUANT_AVX2_KERNELS_H

#include <stddef.h>

#include "libconvert/cpu.h"
#include "quant/iq_grid_impl.h"
#include "quant/quant.h"
#include "quant/types.h"

/* The types with AVX2 kernels: every type quant/types.h quantizes (LC_QUANT_TYPES), one
 * file each (a type joining that list brings its file here, or this becomes a list of
 * its own again). The table (table.c) takes both kernels of every type listed. */
#define LC_QUANT_AVX2_TYPES(X) LC_QUANT_TYPES(X)

/* The dequantize-only types with a AVX2 dequantizer: all of quant/types.h
 * LC_DEQUANT_TYPES, one file each (a type joining that list brings its file here, or
 * this becomes a list of its own again). The table takes their dequantize entry, their
 * quantize entry stays NULL. */
#define LC_DEQUANT_AVX2_TYPES(X) LC_DEQUANT_TYPES(X)

/* The CPU features the folder's compiler flags assume (keep in step with the Makefile). */
#define LC_QK_AVX2_NEEDS \
    (LC_CPU_BIT(LC_CPU_AVX2) | LC_CPU_BIT(LC_CPU_FMA) | LC_CPU_BIT(LC_CPU_F16C))

/* lc_q8_0_quantize_avx2, lc_q8_0_dequantize_avx2, lc_q4_0_quantize_avx2, ...: same bytes
 * as the _ref kernels. */
#define LC_QUANT_DECLARE_AVX2(T, stem) LC_QUANT_DECLARE(stem, avx2)
LC_QUANT_AVX2_TYPES(LC_QUANT_DECLARE_AVX2)
#undef LC_QUANT_DECLARE_AVX2
#define LC_DEQUANT_DECLARE_AVX2(T, stem) LC_DEQUANT_DECLARE(stem, avx2)
LC_DEQUANT_AVX2_TYPES(LC_DEQUANT_DECLARE_AVX2)
#undef LC_DEQUANT_DECLARE_AVX2

extern const lc_qkernels lc_qk_avx2;

/* lc_iq2_xxs_quantize_rows_avx2 ... lc_iq1_m_quantize_rows_avx2: the grid i-quants' row
 * entries with this folder's searches (iq_search.c); lc_iq4_nl/xs_quantize_rows_avx2
 * with its scale tries (iq4_tries.c). The reference's bytes. */
#define LC_IQ_ROWS_DECLARE_AVX2(T, stem)                                                   \
    void lc_##stem##_quantize_rows_avx2(const float *restrict x, void *restrict y,        \
                                        size_t nrows, size_t n_per_row,                   \
                                        const float *restrict imatrix);
LC_IQ_ROWS_WITH(LC_IQ_ROWS_DECLARE_AVX2)
LC_IQ4_ROWS(LC_IQ_ROWS_DECLARE_AVX2)
#undef LC_IQ_ROWS_DECLARE_AVX2

/* lc_q4_0_quantize_rows_wavx2 ... lc_q6_K_quantize_rows_wavx2: the weighted row entries
 * of the K and legacy types with this folder's scale tries (w_tries.c); the reference's
 * bytes. The row entry runs only with an importance matrix (dispatch.c: without one the
 * block kernels run). */
#define LC_W_ROWS_DECLARE_AVX2(T, stem)                                                   \
    void lc_##stem##_quantize_rows_wavx2(const float *restrict x, void *restrict y,      \
                                         size_t nrows, size_t n_per_row,                 \
                                         const float *restrict imatrix);
LC_W_ROWS(LC_W_ROWS_DECLARE_AVX2)
#undef LC_W_ROWS_DECLARE_AVX2

#endif
