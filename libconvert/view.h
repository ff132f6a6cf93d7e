/* libconvert/view.h: generic lazy views, tensors whose bytes are read from another
 * tensor or a file on demand, any byte range at a time, so writers can stream.
 *
 * Each attaches a source to an existing tensor dst (its name, dtype and shape already
 * set; errors name dst's name, so give it the name a person knows):
 *  1. heads: dst's rows are src's rows reordered within groups of heads (the Q/K row
 *     permutation between RoPE styles): with R = rows / heads, view the rows as
 *     [heads, 2, R/2] and swap the last two axes. Forward, row h*R + 2i + j of dst comes
 *     from row h*R + j*R/2 + i of src; the inverse undoes it.
 *  2. forward: dst reads src unchanged (for a tensor of another model).
 *  3. file: pread from a descriptor at an offset.
 *  4. map: copies a zero-copy (mapped) tensor's bytes and, once reads have moved 1 MiB
 *     past a range, gives those pages back (MADV_DONTNEED), so a whole-model pass does
 *     not grow the process's RSS to the model size.
 *  5. stack, strided (view_stack.c): tensors one after another (experts), pieces of one
 *     (a part of a fused tensor, the first rows); offset (view_offset.c): plus a constant,
 *     or a function of each element; swap (view_swap.c): a block's units transposed.
 * Sources are borrowed: they must outlive dst's model. Reads are thread-safe. */
#ifndef LC_LIBCONVERT_VIEW_H
#define LC_LIBCONVERT_VIEW_H

#include <stdbool.h>
#include <stdint.h>

#include "libconvert/error.h"
#include "libconvert/tensor.h"

/* The source row that row `row` of a heads view reads. rows must be a multiple of
 * 2 * heads. */
uint64_t lc_view_head_row(uint64_t row, uint64_t rows, uint32_t heads, bool inverse);

/* dst must have src's dtype and shape (LC_E_ARG otherwise); the first dimension must
 * be a multiple of 2 * heads (LC_E_MALFORMED). */
lc_code lc_view_heads(lc_tensor *dst, const lc_tensor *src, uint32_t heads, bool inverse,
                      lc_error *err);
lc_code lc_view_forward(lc_tensor *dst, const lc_tensor *src, lc_error *err);

/* dst's dst->nbytes bytes are [offset, offset + nbytes) of the open file fd (borrowed:
 * it must stay open while dst is read); PATH names it in errors (copied). Reads report
 * LC_E_IO or LC_E_TRUNCATED with the file offset, path and tensor name. */
lc_code lc_view_file(lc_tensor *dst, int fd, uint64_t offset, const char *path, lc_error *err);

/* dst copies the zero-copy tensor s's bytes and gives the pages back behind the reads.
 * s->data MUST point into a read-only file mapping (lc_map): MADV_DONTNEED on anonymous
 * or written memory would zero it or drop its changes. LC_E_ARG when s has no data or
 * another size. */
lc_code lc_view_map(lc_tensor *dst, const lc_tensor *s, lc_error *err);

/* dst's bytes are those of srcs[0..n), one after another (experts stacked along the
 * outermost dimension). Each source must have dst's dtype and dst->nbytes / n bytes
 * (LC_E_ARG). The array is copied; the tensors are borrowed. */
lc_code lc_view_stack(lc_tensor *dst, const lc_tensor *const *srcs, size_t n, lc_error *err);

/* dst's bytes are pieces of src: piece i is [first + i * stride, + piece). One part of a
 * fused tensor [outer, parts x rows, cols] along dimension 1 is piece = rows x cols
 * elements' bytes, stride = parts x piece, first = part x piece; the first k rows of a
 * matrix are one piece. LC_E_ARG when the pieces do not fit src or the dtypes differ. */
lc_code lc_view_strided(lc_tensor *dst, const lc_tensor *src, uint64_t first, uint64_t piece,
                        uint64_t stride, lc_error *err);

/* dst (F32) is src (any float dtype libconvert/convert.h converts to F32) plus c: every
 * element widened to float32, c added in float32, the sum rounded to `round`'s
 * precision (F16 or BF16; F32: none) and back (as torch adds a Python float to a float16
 * tensor). gemma's norms are stored + 1 in GGUF and - 1 in transformers'. LC_E_ARG when
 * the shapes differ or src's dtype does not convert. */
lc_code lc_view_offset(lc_tensor *dst, const lc_tensor *src, float c, lc_dtype round,
                       lc_error *err);

/* The same with fn applied instead of c added: dst[i] = round(fn(float32(src[i]))).
 * (qwen35's A_log is stored as -exp(A_log).) */
lc_code lc_view_apply(lc_tensor *dst, const lc_tensor *src, float (*fn)(float),
                      lc_dtype round, lc_error *err);

/* dst's bytes are src's with a block of it transposed (view_swap.c): the first `first`
 * bytes as they are, then `outer` runs of a x b units of `unit` bytes each, read as
 * [a][b] and written as [b][a] (unit (i, j) of a run becomes unit (j, i)); the rest as it
 * is. Qwen3.5's value heads from grouped [key head][value head of it] to tiled order is
 * a = key heads, b = value heads per key head; swapping a and b undoes it. dst must have
 * src's dtype and size (LC_E_ARG), and the block must fit. */
lc_code lc_view_swap(lc_tensor *dst, const lc_tensor *src, uint64_t first, uint64_t outer,
                     uint64_t a, uint64_t b, uint64_t unit, lc_error *err);

#endif
