/* quant/types.h: the one list of block types quant/ implements.
 *
 * LC_QUANT_TYPES(X) expands X(TYPE, stem) once per type quant/ can both quantize and
 * dequantize, in a fixed order: TYPE is the lc_dtype suffix (LC_DT_Q8_0) and stem the
 * lower-case prefix of the type's kernels (lc_q8_0_quantize_ref). From this list come
 * the _ref prototypes (quant/quant.h), the reference kernel table and
 * lc_quant_supported() (quant/dispatch.c), which file types are available
 * (quant/ftype.c), and the type lists of the variant tests and the fuzz harness.
 *
 * LC_DEQUANT_TYPES(X) lists, the same way, the types quant/ can only read: every other
 * block type the pinned ggml defines, so that any GGUF llama.cpp writes can be
 * dequantized. Their quantize slot in every kernel table is NULL; lc_dequant_supported()
 * is true for both lists. (ggml quantizes IQ2_XXS, IQ2_XS and IQ1_S only with an
 * importance matrix; the others have ggml quantizers that could move them to the first
 * list one day. Q8_1 and Q8_K are ggml's activation types, never in a file llama.cpp
 * writes, decoded here for completeness.)
 *
 * Per-type facts (name, block size, bytes per block, GGUF id) stay in
 * libconvert/dtype.c, which already knows every ggml type.
 *
 * LC_WRITE_TYPES(X) lists every type quant/ can write, X(TYPE, stem, IMATRIX), with
 * what its quantizer does with an importance matrix (ggml_quantize_chunk's `imatrix`:
 * one weight per column of a row, the same for every row): IGNORES it (Q8_0, TQ1_0),
 * USES it when given (the K types, Q4_0 ...; without one they are their block kernels
 * above), or REQUIRES it (ggml asserts one: ggml_quantize_requires_imatrix). Each has a
 * row entry lc_<stem>_quantize_rows_ref (quant/quant.h); the types of LC_QUANT_TYPES are
 * all here, the others (the i-quants, the ternary types) are quantized by rows only and
 * stay in LC_DEQUANT_TYPES, whose block kernels are dequantizers.
 *
 * A type joins a list together with its reference kernels and their tests: see
 * "Adding a type" in quant/quant.h. */
#ifndef LC_QUANT_TYPES_H
#define LC_QUANT_TYPES_H

#define LC_QUANT_TYPES(X) \
    X(Q8_0, q8_0)         \
    X(Q4_0, q4_0)         \
    X(Q4_1, q4_1)         \
    X(Q5_0, q5_0)         \
    X(Q5_1, q5_1)         \
    X(Q2_K, q2_K)         \
    X(Q3_K, q3_K)         \
    X(Q4_K, q4_K)         \
    X(Q5_K, q5_K)         \
    X(Q6_K, q6_K)

/* In ggml's type order (ggml.h enum ggml_type). */
#define LC_DEQUANT_TYPES(X) \
    X(Q8_1, q8_1)           \
    X(Q8_K, q8_K)           \
    X(IQ2_XXS, iq2_xxs)     \
    X(IQ2_XS, iq2_xs)       \
    X(IQ3_XXS, iq3_xxs)     \
    X(IQ1_S, iq1_s)         \
    X(IQ4_NL, iq4_nl)       \
    X(IQ3_S, iq3_s)         \
    X(IQ2_S, iq2_s)         \
    X(IQ4_XS, iq4_xs)       \
    X(IQ1_M, iq1_m)         \
    X(TQ1_0, tq1_0)         \
    X(TQ2_0, tq2_0)         \
    X(MXFP4, mxfp4)         \
    X(NVFP4, nvfp4)         \
    X(Q1_0, q1_0)           \
    X(Q2_0, q2_0)

#define LC_WRITE_TYPES(X)      \
    X(Q8_0, q8_0, IGNORES)     \
    X(Q4_0, q4_0, USES)        \
    X(Q4_1, q4_1, USES)        \
    X(Q5_0, q5_0, USES)        \
    X(Q5_1, q5_1, USES)        \
    X(Q2_K, q2_K, USES)        \
    X(Q3_K, q3_K, USES)        \
    X(Q4_K, q4_K, USES)        \
    X(Q5_K, q5_K, USES)        \
    X(Q6_K, q6_K, USES)        \
    X(IQ4_NL, iq4_nl, USES)    \
    X(IQ4_XS, iq4_xs, USES)    \
    X(TQ1_0, tq1_0, IGNORES)   \
    X(TQ2_0, tq2_0, IGNORES)   \
    X(IQ2_XXS, iq2_xxs, REQUIRES) \
    X(IQ2_XS, iq2_xs, REQUIRES) \
    X(IQ2_S, iq2_s, USES)      \
    X(IQ3_XXS, iq3_xxs, USES)  \
    X(IQ3_S, iq3_s, USES)      \
    X(IQ1_S, iq1_s, REQUIRES)  \
    X(IQ1_M, iq1_m, USES)      \
    X(MXFP4, mxfp4, IGNORES)

/* The prototypes of one variant's kernels for one type, e.g.
 *   LC_QUANT_DECLARE(q8_0, avx2) declares lc_q8_0_quantize_avx2, lc_q8_0_dequantize_avx2.
 * The contract of every kernel is in quant/quant.h. */
#define LC_QUANT_DECLARE(stem, variant)                                                    \
    void lc_##stem##_quantize_##variant(const float *restrict x, void *restrict y,         \
                                        size_t n);                                         \
    void lc_##stem##_dequantize_##variant(const void *restrict x, float *restrict y,       \
                                          size_t n);

/* The same for a dequantize-only type: lc_iq2_xxs_dequantize_ref and no quantizer. */
#define LC_DEQUANT_DECLARE(stem, variant)                                                  \
    void lc_##stem##_dequantize_##variant(const void *restrict x, float *restrict y,       \
                                          size_t n);

/* The row entry of a type of LC_WRITE_TYPES (contract in quant/quant.h). */
#define LC_QUANT_ROWS_DECLARE(stem, variant)                                               \
    void lc_##stem##_quantize_rows_##variant(const float *restrict x, void *restrict y,    \
                                             size_t nrows, size_t n_per_row,               \
                                             const float *restrict imatrix);

/* For either list: `LC_DT_TYPE,` (an initialiser list of lc_dtype). */
#define LC_QUANT_DTYPE(T, stem) LC_DT_##T,
/* For LC_WRITE_TYPES: `LC_DT_TYPE,`. */
#define LC_WRITE_DTYPE(T, stem, im) LC_DT_##T,

#endif
