/* formats/gguf_imatrix.h: importance matrices as llama.cpp's llama-imatrix writes them, read
 * as llama-quantize reads them (common/imatrix-loader.cpp and tools/quantize of the
 * llama.cpp that llama-cpp-python 0.3.36 vendors).
 *
 * Two formats, told apart by the GGUF magic:
 *  GGUF (llama-imatrix's default):
 *   1. keys imatrix.datasets (array of strings), imatrix.chunk_count (u32) and
 *      imatrix.chunk_size (u32): all three must be there (llama-quantize refuses a file
 *      without them: "missing imatrix metadata");
 *   2. per weight matrix NAME two F32 tensors, NAME.in_sum2 (ne0 x n_mat: the sums of
 *      squared activations per input column, one row per expert) and NAME.counts
 *      (1 x n_mat: the tokens each row saw, a float rounded with lround); other tensors
 *      are ignored.
 *   The weights are in_sum2 / count per expert row, or 1 where the count is <= 0.
 *  legacy .dat (llama-imatrix --output-format dat, and older versions), little-endian:
 *   1. i32 n_entries (>= 1);
 *   2. per entry: i32 name length, the name (cut at its first NUL, as std::string reads
 *      it), i32 ncall, i32 nval (>= 1), nval f32 (sums already divided by the count,
 *      times ncall);
 *   3. optionally: i32 chunk count, then i32 length and the dataset name.
 *   The weights are value / ncall, or the values themselves where ncall <= 0. An entry
 *   whose name repeats an earlier one replaces it.
 * Every length and count is checked against the file before it is used; a file cut short
 * names the entry (its index and, when read, its name) and the offset. */
#ifndef LC_FORMATS_GGUF_IMATRIX_H
#define LC_FORMATS_GGUF_IMATRIX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "libconvert/error.h"

typedef struct lc_imatrix lc_imatrix;

/* Opens PATH (mapped; the result owns it). Codes: the map's (LC_E_NOTFOUND, LC_E_IO),
 * lc_gguf_load's for a GGUF, LC_E_TRUNCATED (a legacy field past the end),
 * LC_E_MALFORMED (no entries, a bad length or count, sums without counts, a type other
 * than F32, missing metadata keys), with err->where the entry and err->path PATH. On
 * failure *out is NULL. */
lc_code lc_imatrix_open(const char *path, lc_imatrix **out, lc_error *err);
/* The same from SIZE bytes at BUF (tests, fuzzing), which must outlive the result. */
lc_code lc_imatrix_open_mem(const void *buf, uint64_t size, lc_imatrix **out, lc_error *err);
void    lc_imatrix_free(lc_imatrix *im);

/* The entries, sorted by name (strcmp); i < lc_imatrix_count. */
size_t      lc_imatrix_count(const lc_imatrix *im);
const char *lc_imatrix_name(const lc_imatrix *im, size_t i);   /* valid until free */
uint64_t    lc_imatrix_values(const lc_imatrix *im, size_t i); /* ne0 * n_mat */
uint64_t    lc_imatrix_matrices(const lc_imatrix *im, size_t i);   /* n_mat (1: legacy) */
/* The entry named `name`; SIZE_MAX when there is none. */
size_t      lc_imatrix_find(const lc_imatrix *im, const char *name);

/* The ne0 weights of matrix (expert) `mat` of entry i, normalized as llama-quantize
 * does (see above), into out. Codes: the reader's for the GGUF's data. */
lc_code lc_imatrix_weights(const lc_imatrix *im, size_t i, uint64_t mat, float *out,
                           lc_error *err);

/* The raw row of matrix (expert) `mat` of entry i, as llama-imatrix's loader keeps it:
 * for a GGUF the ne0 sums and the count rounded as the loader rounds it; for a .dat the
 * stored values and ncall (a scale of the same values). For statistics. */
lc_code lc_imatrix_raw(const lc_imatrix *im, size_t i, uint64_t mat, float *sums,
                       int64_t *count, lc_error *err);

/* The first dataset name, or NULL when the file names none. */
const char *lc_imatrix_dataset(const lc_imatrix *im);
/* The chunk count as llama-quantize reads it (an int: a u32 above INT32_MAX is
 * negative); 0 when the file has none. */
int32_t     lc_imatrix_chunks(const lc_imatrix *im);
bool        lc_imatrix_is_legacy(const lc_imatrix *im);

#endif
