/* jobs/model_imatrix_impl.h: what the files of the model-imatrix job share (private).
 *
 *   model_imatrix.c       the run: the model, the text, the chunks, the file
 *   model_imatrix_sums.c  the sums: one entry per weight matrix the tap reports, in
 *                         double, and the GGUF model llama-imatrix would write */
#ifndef LC_JOBS_MODEL_IMATRIX_IMPL_H
#define LC_JOBS_MODEL_IMATRIX_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch/arch.h"
#include "libconvert/error.h"
#include "libconvert/model.h"

/* One weight matrix: NAME as GGUF names it, a row of sums per matrix (per expert for a
 * stack of experts, else one) and the tokens each row saw. */
typedef struct lc_imx_entry {
    char      name[64];
    lc_role   role;
    uint32_t  cols, n_mat;
    double   *sums;         /* [n_mat, cols] sum over tokens of x^2 */
    uint64_t *counts;       /* [n_mat] */
} lc_imx_entry;

typedef struct lc_imx {
    const lc_arch *arch;
    uint32_t n_layers, n_expert;
    bool     process_output;
    uint32_t chunk;         /* the chunk running (messages) */
    uint32_t *slot;         /* [(n_layers + 1) x LC_ROLE_COUNT] entry index + 1; 0: none
                             * yet (row n_layers: the top-level tensors) */
    lc_imx_entry *e;
    size_t n, cap;
} lc_imx;

/* An empty set of sums for a model of `n_layers` layers and `n_expert` experts (0:
 * dense). LC_E_NOMEM. */
lc_code lc_imx_init(lc_imx *s, const lc_arch *a, uint32_t n_layers, uint32_t n_expert,
                    bool process_output, lc_error *err);
void    lc_imx_free(lc_imx *s);   /* NULL-safe; leaves s empty */

/* The forward pass's tap (infer.h lc_infer_tap_fn, user = the lc_imx): adds every row's
 * squares to its entry and counts the rows. LC_E_MALFORMED naming the tensor and chunk
 * for a non-finite activation (llama-imatrix stops there too) or an input width that
 * changes; LC_E_NOMEM. */
lc_code lc_imx_tap(void *user, lc_role role, uint32_t layer, uint32_t expert, const float *x,
                   size_t n, size_t cols, lc_error *err);

/* Transformers' spelling of qwen35's recurrent layers groups the value heads by key
 * head where GGUF tiles them (arch.h lc_arch_vreorder): the input columns of a matrix
 * whose row reorders its columns (ssm_out) are moved into GGUF's order, so that the
 * sums are those of the GGUF tensor, as from a GGUF. Nothing moves for other models.
 * LC_E_NOMEM. */
lc_code lc_imx_tile(lc_imx *s, const lc_hparams *hp, lc_error *err);

/* llama-imatrix's file as a model: the keys, then per entry (sorted by name) its sums and
 * counts as F32. dataset NULL: an empty imatrix.datasets. *chunk_count gets the chunk
 * count written. On success *out owns everything it needs. */
lc_code lc_imx_to_gguf(const lc_imx *s, const char *dataset, uint32_t chunk_size,
                       lc_model **out, uint32_t *chunk_count, lc_error *err);

/* llama-imatrix's legacy .dat (--output-format dat, save_imatrix_legacy) at PATH,
 * atomically: i32 entries; per entry (sorted by name; one with no tokens at all left
 * out) i32 name length, the name, i32 ncall = ceil(largest count / chunk_size), i32
 * values, then each value / its row's count x ncall as f32 (1 x ncall where the count
 * is 0); i32 chunk count; i32 length and the dataset ("" when none). */
lc_code lc_imx_write_dat(const lc_imx *s, const char *dataset, uint32_t chunk_size,
                         const char *path, uint32_t *chunk_count, lc_error *err);

#endif
