/* quant/neon/kernels.h: private to quant/. What the NEON variant speeds up and what it
 * needs from the CPU.
 *
 * Every .c in this folder is compiled for AArch64 only (the Makefile's rule for the
 * folder), where Advanced SIMD is part of the base architecture; the folder also defines
 * LC_HAVE_NEON for the whole build, and dispatch.c hands out lc_qk_neon when the CPU
 * probe reports it (always, unless LC_CPU_DISABLE=asimd hides it). Still
 * -ffp-contract=off: gcc would otherwise fuse a*b + c into FMLA on AArch64. */
#ifndef LC_QUANT_NEON_KERNELS_H
#define LC_QUANT_NEON_KERNELS_H

#include <stddef.h>

#include "libconvert/cpu.h"
#include "quant/iq_grid_impl.h"
#include "quant/quant.h"
#include "quant/types.h"

/* The types with NEON kernels: every type quant/types.h quantizes (LC_QUANT_TYPES), one
 * file each (a type joining that list brings its file here, or this becomes a list of
 * its own again). The table (table.c) takes both kernels of every type listed. */
#define LC_QUANT_NEON_TYPES(X) LC_QUANT_TYPES(X)

/* The dequantize-only types with a NEON dequantizer: all of quant/types.h
 * LC_DEQUANT_TYPES, one file each (a type joining that list brings its file here, or
 * this becomes a list of its own again). The table takes their dequantize entry, their
 * quantize entry stays NULL. */
#define LC_DEQUANT_NEON_TYPES(X) LC_DEQUANT_TYPES(X)

#define LC_QK_NEON_NEEDS LC_CPU_BIT(LC_CPU_NEON)

#define LC_QUANT_DECLARE_NEON(T, stem) LC_QUANT_DECLARE(stem, neon)
LC_QUANT_NEON_TYPES(LC_QUANT_DECLARE_NEON)
#undef LC_QUANT_DECLARE_NEON
#define LC_DEQUANT_DECLARE_NEON(T, stem) LC_DEQUANT_DECLARE(stem, neon)
LC_DEQUANT_NEON_TYPES(LC_DEQUANT_DECLARE_NEON)
#undef LC_DEQUANT_DECLARE_NEON

extern const lc_qkernels lc_qk_neon;

/* lc_iq2_xxs_quantize_rows_neon ... lc_iq1_m_quantize_rows_neon: the grid i-quants' row
 * entries with this folder's searches (iq_search.c); lc_iq4_nl/xs_quantize_rows_neon
 * with its scale tries (iq4_tries.c). The reference's bytes. */
#define LC_IQ_ROWS_DECLARE_NEON(T, stem)                                                   \
    void lc_##stem##_quantize_rows_neon(const float *restrict x, void *restrict y,        \
                                        size_t nrows, size_t n_per_row,                   \
                                        const float *restrict imatrix);
LC_IQ_ROWS_WITH(LC_IQ_ROWS_DECLARE_NEON)
LC_IQ4_ROWS(LC_IQ_ROWS_DECLARE_NEON)
#undef LC_IQ_ROWS_DECLARE_NEON

/* lc_q4_0_quantize_rows_wneon ... lc_q6_K_quantize_rows_wneon: the weighted row entries
 * of the K and legacy types with this folder's scale tries (w_tries.c); the reference's
 * bytes. The row entry runs only with an importance matrix (dispatch.c: without one the
 * block kernels run). */
#define LC_W_ROWS_DECLARE_NEON(T, stem)                                                   \
    void lc_##stem##_quantize_rows_wneon(const float *restrict x, void *restrict y,      \
                                         size_t nrows, size_t n_per_row,                 \
                                         const float *restrict imatrix);
LC_W_ROWS(LC_W_ROWS_DECLARE_NEON)
#undef LC_W_ROWS_DECLARE_NEON

#endif
