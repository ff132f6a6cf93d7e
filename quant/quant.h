/* quant/quant.h: block quantization kernels and the table that picks them.
 *
 * What quant/ owns (DESIGN.md "Quantization"): the list of block types it implements
 * (quant/types.h); per type a scalar reference, lc_<type>_quantize_ref and
 * lc_<type>_dequantize_ref, that is the spec: its bytes are identical to ggml's
 * quantize_row_<type>_ref, which is what llama-quantize writes without an importance
 * matrix; faster variants (AVX2 in quant/avx2/, AVX-512 in quant/avx512/, NEON in
 * quant/neon/, CUDA) that must write the same bytes; one lc_qkernels table per variant,
 * chosen once at run time from the CPU probe (libconvert/cpu.h), where the reference
 * fills every entry a variant leaves empty; and llama.cpp's file types (quant/ftype.h).
 * Block layouts are in quant/blocks.h. quant/ may use libconvert/ and arch/.
 *
 * Layout:
 *   types.h      the one list of implemented types (an X-macro)
 *   blocks.h     block structs, sizes pinned by _Static_assert
 *   ref.c ref_k.c  the references (32-element types; K-quants)
 *   dispatch.c   the variant tables, the run-time choice (LC_QUANT=ref|avx2|...), rows
 *   ftype.c      llama.cpp's LLAMA_FTYPE ids and names, with what we can write
 *   view.c       lazy quantizing / dequantizing tensor sources over the kernel table
 *   <isa>/       one folder per ISA, each built with its own flags by the Makefile on its
 *                own architecture only; <isa>/kernels.h lists the types it speeds up
 *
 * Adding a type (say Q2_K):
 *   1. quant/types.h: one X(Q2_K, q2_K) line. That declares lc_q2_K_{,de}quantize_ref,
 *      puts them in the reference table, makes lc_quant_supported(LC_DT_Q2_K) true and
 *      the file type Q2_K available (quant/ftype.c derives it; the mixes Q2_K_S etc.
 *      also need their per-tensor rules), and adds the type to the variant and fuzz
 *      tests. (libconvert/dtype.c and quant/ftype.c already list every ggml type and
 *      every llama.cpp file type.)
 *   2. quant/blocks.h: the block struct and its _Static_assert.
 *   3. quant/ref_k.c (or ref.c): the two reference kernels, ported operation for
 *      operation from ggml's quantize_row_<type>_ref / dequantize_row_<type>.
 *   4. Tests: tests/unit/test_quant.c (its type lists, block sizes, error bound; a test
 *      there fails until its list matches types.h), tests/unit/test_ftype.c (Q2_K moves
 *      to the available rows), and golden blocks from ggml's own reference:
 *      fixtures/quant/hard.<TYPE>.bin and special.<TYPE>.bin from the inputs of
 *      scripts/make_quant_inputs.py (recorded in fixtures/MANIFEST.tsv), checked by
 *      tests/integration/test_quant*.py (their ALL lists).
 *   A variant kernel is then optional: a file in quant/<isa>/ plus one line in that
 *   folder's kernels.h; tests/unit/test_quant_variants.c compares it with the reference.
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
#include "quant/types.h"

typedef void (*lc_quantize_fn)(const float *restrict x, void *restrict y, size_t n);
typedef void (*lc_dequantize_fn)(const void *restrict x, float *restrict y, size_t n);

/* ---- scalar references (quant/ref.c, quant/ref_k.c) ----
 * lc_<stem>_quantize_ref and lc_<stem>_dequantize_ref for every type of quant/types.h:
 * lc_q8_0_, lc_q4_0_, lc_q4_1_, lc_q5_0_, lc_q5_1_, lc_q4_K_, lc_q6_K_. */
#define LC_QUANT_DECLARE_REF(T, stem) LC_QUANT_DECLARE(stem, ref)
LC_QUANT_TYPES(LC_QUANT_DECLARE_REF)
#undef LC_QUANT_DECLARE_REF

/* ---- the kernel table (quant/dispatch.c) ---- */

/* One variant's kernels, indexed by lc_dtype. A NULL entry means "use ref". */
typedef struct lc_qkernels {
    const char      *name;                    /* "ref", "avx2", "neon", "cuda" */
    lc_quantize_fn   quantize[LC_DT_COUNT];
    lc_dequantize_fn dequantize[LC_DT_COUNT];
} lc_qkernels;

/* The fastest variant this build and CPU support, chosen once (thread-safe). The
 * environment variable LC_QUANT=ref|avx2|neon|cuda forces one when it is available.
 * Built today: "ref" and, on x86-64 CPUs with AVX2+FMA+F16C, "avx2" (the types of
 * quant/avx2/kernels.h; its other entries are the reference). LC_CPU_DISABLE (libconvert/cpu.h) hides a
 * variant whose features it names. Never NULL; valid for the life of the process. */
const lc_qkernels *lc_qkernels_best(void);

/* The variant called `name`; NULL when it is not built in or the CPU lacks it. */
const lc_qkernels *lc_qkernels_get(const char *name);

/* `k`'s kernel for `t`, falling back to the reference when `k` has none; NULL when
 * no variant handles `t` (plain types, or block types we do not implement). */
lc_quantize_fn   lc_qk_quantize(const lc_qkernels *k, lc_dtype t);
lc_dequantize_fn lc_qk_dequantize(const lc_qkernels *k, lc_dtype t);

/* True when `t` can be quantized and dequantized here: the types of quant/types.h
 * (Q8_0 Q4_0 Q4_1 Q5_0 Q5_1 Q4_K Q6_K). */
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
