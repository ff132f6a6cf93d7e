/* quant/validate.h: ggml's check of tensor data, which llama-quantize runs on every byte
 * it reads and every row it writes (ggml_validate_row_data in ggml/src/ggml-quants.c, as
 * vendored by llama-cpp-python 0.3.36):
 *  - F32, F16, BF16, F64: no NaN and no infinity;
 *  - block types: every scale finite (the f16 d, and m or dmin where the block has one;
 *    Q8_K's f32 d; IQ1_M's scale spread over its scales bytes; MXFP4's E8M0 exponent is
 *    not 0xff);
 *  - integers: nothing to check; Q8_1 and the types GGUF lacks: refused.
 * A bad value in a source model, or a scale that overflows f16 while quantizing (values
 * beyond about 65504 times the largest quant), would otherwise give a file llama.cpp
 * computes garbage with. */
#ifndef LC_QUANT_VALIDATE_H
#define LC_QUANT_VALIDATE_H

#include <stdint.h>

#include "libconvert/error.h"
#include "libconvert/tensor.h"

/* Checks n whole elements (plain types) or blocks (block types) of type t at p. Returns
 * the index of the first bad element or block, and in *what what is wrong with it
 * ("NaN", "infinity", "an infinite scale", ...); UINT64_MAX when all are good. */
uint64_t lc_validate_data(lc_dtype t, const void *p, uint64_t n, const char **what);

/* dst (which must have src's dtype and shape: LC_E_ARG otherwise) reads src and checks
 * every element or block a read covers, reading whole ones around a range that cuts one.
 * A bad one fails the read with LC_E_MALFORMED, where = dst's name, the message naming
 * the row and column (or block) and what is wrong, offset = src's file offset of the
 * element when src has one. src is borrowed. */
lc_code lc_validate_view(lc_tensor *dst, const lc_tensor *src, lc_error *err);

#endif
