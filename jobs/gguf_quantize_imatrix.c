/* jobs/gguf_quantize_imatrix.c: gguf-quantize --imatrix (see gguf_quantize.h): the
 * importance matrix as llama-quantize's tool loads and filters it (tools/quantize:
 * load_imatrix, prepare_imatrix) and as llama_model_quantize_impl uses it per tensor. */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "jobs/gguf_quantize_impl.h"
#include "libconvert/alloc.h"
#include "quant/quant.h"
#include "quant/view.h"

/* The failure of entry i of the matrix: its file and name. */
static lc_code entry_fail(const job *j, size_t i, lc_error *err) {
    lc_err_context(err, j->o->imatrix, lc_imatrix_name(j->im, i));
    return err ? err->code : LC_E_MALFORMED;
}

static bool contains_any(const char *name, const char *const *parts, size_t n) {
    for (size_t k = 0; k < n; k++)
        if (strstr(name, parts[k]))
            return true;
    return false;
}

lc_code lc_job_quantize_imatrix_load(job *j, lc_error *err) {
    const lc_job_quantize_opts *o = j->o;
    LC_TRY(lc_imatrix_open(o->imatrix, &j->im, err));
    const size_t n = lc_imatrix_count(j->im);
    if (!(j->im_kept = lc_calloc(n, sizeof *j->im_kept)))
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    uint64_t widest = 0;
    for (size_t i = 0; i < n; i++) {
        const char *name = lc_imatrix_name(j->im, i);
        j->im_kept[i] = !contains_any(name, o->exclude_weights, o->n_exclude) &&
                        (o->n_include == 0 || contains_any(name, o->include_weights,
                                                           o->n_include));
        j->im_n_kept += j->im_kept[i];
        const uint64_t ne0 = lc_imatrix_values(j->im, i) / lc_imatrix_matrices(j->im, i);
        widest = j->im_kept[i] && ne0 > widest ? ne0 : widest;
    }
    /* llama_model_quantize refuses a NaN or infinite weight in any entry it is given. */
    float *w = lc_malloc((size_t)(widest ? widest : 1) * sizeof *w);
    if (!w)
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    lc_code rc = LC_OK;
    for (size_t i = 0; i < n && rc == LC_OK; i++) {
        if (!j->im_kept[i])
            continue;
        const uint64_t nmat = lc_imatrix_matrices(j->im, i);
        const uint64_t ne0 = lc_imatrix_values(j->im, i) / nmat;
        for (uint64_t m = 0; m < nmat && rc == LC_OK; m++) {
            if ((rc = lc_imatrix_weights(j->im, i, m, w, err)) != LC_OK) {
                entry_fail(j, i, err);
                break;
            }
            for (uint64_t c = 0; c < ne0; c++)
                if (!isfinite(w[c])) {
                    lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET, "importance weight %s in "
                            "column %" PRIu64 " of matrix %" PRIu64, isnan(w[c]) ? "NaN" :
                            "infinite", c, m);
                    rc = entry_fail(j, i, err);
                    break;
                }
        }
    }
    lc_free(w);
    j->mo.has_imatrix = j->im_n_kept > 0;
    return rc;
}

/* strncpy(val, s, 127): the first 127 bytes of s. */
static lc_code cut_string(lc_value *v, const char *s, lc_error *err) {
    return lc_value_string(v, s, strnlen(s, 127), err);
}

lc_code lc_job_quantize_imatrix_meta(const job *j, const char *keys[4], lc_value vals[4],
                                     size_t *n, lc_error *err) {
    *n = 0;
    if (!j->im || j->im_n_kept == 0)
        return LC_OK;
    keys[*n] = "quantize.imatrix.file";
    LC_TRY(cut_string(&vals[*n], j->o->imatrix, err));
    ++*n;
    if (lc_imatrix_dataset(j->im)) {
        keys[*n] = "quantize.imatrix.dataset";
        LC_TRY(cut_string(&vals[*n], lc_imatrix_dataset(j->im), err));
        ++*n;
    }
    /* llama-quantize's int overrides become u32 of their absolute value. */
    keys[*n] = "quantize.imatrix.entries_count";
    vals[(*n)++] = lc_value_uint(LC_VT_U32, (uint32_t)j->im_n_kept);
    if (lc_imatrix_chunks(j->im) > 0) {
        keys[*n] = "quantize.imatrix.chunks_count";
        vals[(*n)++] = lc_value_uint(LC_VT_U32, (uint32_t)lc_imatrix_chunks(j->im));
    }
    return LC_OK;
}

static bool is_token_embd(const char *name) {
    return strcmp(name, "token_embd.weight") == 0 ||
           strcmp(name, "per_layer_token_embd.weight") == 0;
}

lc_code lc_job_quantize_imatrix_for(job *j, const lc_tensor *s, lc_dtype to, size_t *entry,
                                    lc_error *err) {
    *entry = SIZE_MAX;
    if (!j->im || j->im_n_kept == 0 || to == s->dtype)
        return LC_OK;
    const size_t i = lc_imatrix_find(j->im, s->name);
    if (i == SIZE_MAX || !j->im_kept[i])
        return LC_OK;               /* "did not find weights": quantized without */
    /* ggml's ne[0] and ne[2] (the shape is outermost first). */
    const uint64_t ne0 = s->ndim ? s->shape[s->ndim - 1] : 1;
    const uint64_t ne2 = s->ndim >= 3 ? s->shape[s->ndim - 3] : 1;
    j->im_used++;
    if (lc_imatrix_values(j->im, i) != ne0 * ne2) {
        if (is_token_embd(s->name))
            return LC_OK;           /* llama.cpp ignores it for the token embedding */
        lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET, "%" PRIu64 " importance weights for "
                "tensor %.80s of %" PRIu64 " columns x %" PRIu64 " matrices (%s)",
                lc_imatrix_values(j->im, i), s->name, ne0, ne2,
                lc_imatrix_values(j->im, i) % ne0 == 0 ? "another expert count" :
                "another column count: a matrix for another model?");
        return entry_fail(j, i, err);
    }
    *entry = i;
    return LC_OK;
}

typedef struct wctx {
    const lc_imatrix *im;
    size_t entry;
    uint64_t cols;          /* the tensor's: one expert's share of a flat entry */
} wctx;

static lc_code get_weights(void *ctx, uint64_t mat, float *out, lc_error *err) {
    const wctx *c = ctx;
    const uint64_t values = lc_imatrix_values(c->im, c->entry);
    if (lc_imatrix_matrices(c->im, c->entry) != 1 || values <= c->cols)
        return lc_imatrix_weights(c->im, c->entry, mat, out, err);
    /* A .dat entry is one flat vector, the experts' rows one after another: expert mat
     * reads its own cols of it, as llama-quantize slices it (not the whole vector). */
    float *all = lc_malloc_array((size_t)values, sizeof *all);
    if (!all)
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    const lc_code rc = lc_imatrix_weights(c->im, c->entry, 0, all, err);
    if (rc == LC_OK)
        memcpy(out, all + mat * c->cols, (size_t)c->cols * sizeof *out);
    lc_free(all);
    return rc;
}

lc_code lc_job_quantize_imatrix_view(const job *j, lc_tensor *t, const lc_tensor *cur,
                                     lc_dtype to, size_t entry, lc_error *err) {
    wctx *c = lc_malloc(sizeof *c);
    if (!c)
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    c->im = j->im;
    c->entry = entry;
    c->cols = cur->ndim ? cur->shape[cur->ndim - 1] : 1;
    const lc_quant_imatrix qi = {
        .get = get_weights, .free = lc_free, .ctx = c,
        /* ggml's ne[1]: the rows of one expert (of every row for a 2-D tensor) */
        .rows_per_matrix = cur->ndim >= 2 ? cur->shape[cur->ndim - 2] : 1,
    };
    return lc_quant_view_imatrix(t, cur, to, &qi, err);
}
