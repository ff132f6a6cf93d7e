/* quant/types.h: the one list of block types quant/ implements.
 *
 * LC_QUANT_TYPES(X) expands X(TYPE, stem) once per type, in a fixed order: TYPE is the
 * lc_dtype suffix (LC_DT_Q8_0) and stem the lower-case prefix of the type's kernels
 * (lc_q8_0_quantize_ref). From this list come the _ref prototypes (quant/quant.h), the
 * reference kernel table and lc_quant_supported() (quant/dispatch.c), which file types
 * are available (quant/ftype.c), and the type lists of the variant tests and the fuzz
 * harness. Per-type facts (name, block size, bytes per block, GGUF id) stay in
 * libconvert/dtype.c, which already knows every ggml type.
 *
 * A type joins the list together with its reference kernels and their tests: see
 * "Adding a type" in quant/quant.h. */
#ifndef LC_QUANT_TYPES_H
#define LC_QUANT_TYPES_H

#define LC_QUANT_TYPES(X) \
    X(Q8_0, q8_0)         \
    X(Q4_0, q4_0)         \
    X(Q4_1, q4_1)         \
    X(Q5_0, q5_0)         \
    X(Q5_1, q5_1)         \
    X(Q4_K, q4_K)         \
    X(Q6_K, q6_K)

/* The prototypes of one variant's kernels for one type, e.g.
 *   LC_QUANT_DECLARE(q8_0, avx2) declares lc_q8_0_quantize_avx2, lc_q8_0_dequantize_avx2.
 * The contract of every kernel is in quant/quant.h. */
#define LC_QUANT_DECLARE(stem, variant)                                                    \
    void lc_##stem##_quantize_##variant(const float *restrict x, void *restrict y,         \
                                        size_t n);                                         \
    void lc_##stem##_dequantize_##variant(const void *restrict x, float *restrict y,       \
                                          size_t n);

/* For LC_QUANT_TYPES: `LC_DT_TYPE,` (an initialiser list of lc_dtype). */
#define LC_QUANT_DTYPE(T, stem) LC_DT_##T,

#endif
