/* jobs/model_verify_imatrix.c: model-verify --imatrix, the importance matrix the
 * reproduction weighs SRC's rows by, so that a DST quantized with it (gguf-quantize
 * --imatrix, llama-quantize --imatrix) is reproduced byte for byte.
 *
 * Each pair takes the entry llama-quantize takes for DST's stored tensor
 * (llama_model_quantize_impl): the entry named as the tensor, of ne0 x ne2 values (one
 * vector per expert of a stack); another size is an error, except for the token
 * embedding, which llama.cpp quantizes without it. An expert's piece of a stack uses its
 * expert's vector. The matrix is taken as given: a DST made with --include-weights or
 * --exclude-weights is reproduced with the same filter only when the file given is the
 * filtered one. */
#include "jobs/model_verify_impl.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "libconvert/alloc.h"
#include "libconvert/model.h"
#include "libconvert/value.h"
#include "quant/quant.h"

static bool is_token_embd(const char *name) {
    return strcmp(name, "token_embd.weight") == 0 ||
           strcmp(name, "per_layer_token_embd.weight") == 0;
}

static lc_code entry_fail(const lc_imatrix *im, const char *path, size_t i, lc_error *err) {
    lc_err_context(err, path, lc_imatrix_name(im, i));
    return err ? err->code : LC_E_MALFORMED;
}

/* Every weight of entry i finite: llama-quantize refuses a matrix with NaN or inf, so no
 * DST it made was weighted by one. w holds ne0 floats. */
static lc_code check_finite(const lc_imatrix *im, const char *path, size_t i, float *w,
                            lc_error *err) {
    const uint64_t nmat = lc_imatrix_matrices(im, i);
    const uint64_t ne0 = lc_imatrix_values(im, i) / nmat;
    for (uint64_t m = 0; m < nmat; m++) {
        if (lc_imatrix_weights(im, i, m, w, err) != LC_OK)
            return entry_fail(im, path, i, err);
        for (uint64_t c = 0; c < ne0; c++)
            if (!isfinite(w[c])) {
                lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET, "importance weight %s in column %"
                        PRIu64 " of matrix %" PRIu64, isnan(w[c]) ? "NaN" : "infinite", c, m);
                return entry_fail(im, path, i, err);
            }
    }
    return LC_OK;
}

/* The entry pair p's stored tensor takes (SIZE_MAX: none), its size checked. */
static lc_code entry_of(const lc_imatrix *im, const char *path, const lc_vf_tensor *p,
                        size_t *entry, lc_error *err) {
    const lc_tensor *s = p->dst_stored;
    *entry = SIZE_MAX;
    const size_t i = lc_imatrix_find(im, s->name);
    if (i == SIZE_MAX)
        return LC_OK;               /* llama-quantize: "did not find weights" */
    const uint64_t ne0 = s->ndim ? s->shape[s->ndim - 1] : 1;    /* ggml's ne[0], ne[2] */
    const uint64_t ne2 = s->ndim >= 3 ? s->shape[s->ndim - 3] : 1;
    if (lc_imatrix_values(im, i) != ne0 * ne2) {
        if (is_token_embd(s->name))
            return LC_OK;
        lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET, "%" PRIu64 " importance weights for DST's "
                "tensor %.80s of %" PRIu64 " columns x %" PRIu64 " matrices (%s)",
                lc_imatrix_values(im, i), s->name, ne0, ne2,
                lc_imatrix_values(im, i) % ne0 == 0 ? "another expert count" :
                "another column count: a matrix for another model?");
        return entry_fail(im, path, i, err);
    }
    *entry = i;
    return LC_OK;
}

/* DST's quantize.imatrix.* keys: *file (raw, cut to cap - 1) and *entries (-1: absent);
 * true when they say a matrix was used (a count of 0 says none was). */
static bool records(const lc_vf_side *dst, char *file, size_t cap, int64_t *entries) {
    const lc_value *f = dst->meta ? lc_model_find_meta(dst->meta, "quantize.imatrix.file") : NULL;
    const lc_value *c = dst->meta ? lc_model_find_meta(dst->meta,
                                                       "quantize.imatrix.entries_count") : NULL;
    *entries = -1;
    if (file)
        file[0] = '\0';
    if (file && f && f->type == LC_VT_STRING)       /* raw: the writers quote or escape it */
        snprintf(file, cap, "%.*s", (int)(f->str.len < cap ? f->str.len : cap - 1), f->str.ptr);
    if (c && (c->type == LC_VT_U32 || c->type == LC_VT_U64 || c->type == LC_VT_U16))
        *entries = c->u > INT64_MAX ? INT64_MAX : (int64_t)c->u;
    else if (c && (c->type == LC_VT_I32 || c->type == LC_VT_I64 || c->type == LC_VT_I16))
        *entries = c->i;
    return (f != NULL || c != NULL) && *entries != 0;
}

/* Where DST records a matrix: each pair whose type weighs by one gets the relaxed block
 * bound (its tensor-level one comes with the reproduction's figures, finish() in
 * model_verify_tensors.c). */
static void mark_weighted(lc_vf_tensors *r, const lc_vf_side *dst) {
    int64_t entries;
    if (!records(dst, NULL, 0, &entries))
        return;
    for (size_t k = 0; k < r->n; k++) {
        lc_vf_tensor *p = &r->t[k];
        const lc_imatrix_use use = lc_quant_imatrix_use(p->dst_dt);
        if (!lc_dtype_is_quant(p->dst_dt) || p->expect.cls == LC_DT_INVALID ||
            (use != LC_IMATRIX_USES && use != LC_IMATRIX_REQUIRES))
            continue;
        p->weighted_dst = true;
        p->expect.rel = fmax(p->expect.rel, LC_VF_WEIGHTED_BLOCK);
    }
}

lc_code lc_vf_imatrix_assign(lc_vf_tensors *r, const lc_vf_side *dst, const lc_imatrix *im,
                             const char *im_path, lc_error *err) {
    r->im = im;
    r->n_weighted = 0;
    for (size_t k = 0; k < r->n; k++)
        r->t[k].repro_rel_rmse = NAN;
    mark_weighted(r, dst);
    if (!im)
        return LC_OK;
    const size_t ne = lc_imatrix_count(im);
    bool *checked = lc_calloc(ne ? ne : 1, sizeof *checked);
    float *w = NULL;
    uint64_t w_cap = 0;
    lc_code rc = checked ? LC_OK : lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    for (size_t k = 0; k < r->n && rc == LC_OK; k++) {
        lc_vf_tensor *p = &r->t[k];
        /* llama-quantize weighs a tensor it quantizes: DST's type a block type other than
         * SRC's (the same type is copied) */
        if (!p->shape_ok || !lc_dtype_is_quant(p->dst_dt) || p->expect.cls == LC_DT_INVALID)
            continue;
        size_t i;
        if ((rc = entry_of(im, im_path, p, &i, err)) != LC_OK || i == SIZE_MAX)
            continue;
        const uint64_t ne0 = lc_imatrix_values(im, i) / lc_imatrix_matrices(im, i);
        if (ne0 > w_cap) {
            lc_free(w);
            if (!(w = lc_malloc_array((size_t)ne0, sizeof *w))) {
                rc = lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
                break;
            }
            w_cap = ne0;
        }
        if (!checked[i] && (rc = check_finite(im, im_path, i, w, err)) != LC_OK)
            break;
        checked[i] = true;
        const lc_imatrix_use use = lc_quant_imatrix_use(p->dst_dt);
        if (use != LC_IMATRIX_USES && use != LC_IMATRIX_REQUIRES)
            continue;               /* Q8_0, TQ*: the same bytes with it or without */
        const lc_tensor *s = p->dst_stored;
        p->im_entry = i;
        if (p->dst_t != s && p->expert != UINT32_MAX) {
            p->im_mat0 = p->expert;             /* one expert's piece: its vector */
            p->im_rows = UINT64_MAX;
        } else {
            p->im_mat0 = 0;
            p->im_rows = s->ndim >= 2 ? s->shape[s->ndim - 2] : 1;     /* ggml's ne[1] */
        }
        uint64_t rows, cols;
        bool proxy;
        lc_vf_matrix(p->dst_t, false, &rows, &cols);
        p->repro_dt = lc_vf_repro_type(p->dst_dt, cols, true, &proxy);
        r->n_weighted++;
    }
    lc_free(w);
    lc_free(checked);
    return rc;
}

lc_code lc_vf_imatrix_row(const lc_vf_tensors *r, const lc_vf_tensor *p, uint64_t row,
                          float *out, lc_error *err) {
    const uint64_t mat = p->im_mat0 + (p->im_rows ? row / p->im_rows : 0);
    return lc_imatrix_weights(r->im, p->im_entry, mat, out, err);
}

void lc_vf_imatrix_recorded(const lc_vf_side *dst, size_t weighted, bool given, bool proven,
                            lc_vf_imatrix_note *n) {
    memset(n, 0, sizeof *n);
    n->given = given;
    n->dst_entries = -1;
    n->weighted = weighted;
    n->dst_records = records(dst, n->dst_file, sizeof n->dst_file, &n->dst_entries);
    /* Not every tensor reproduced: without the matrix DST was weighted by, that is what
     * a correct file looks like, not a defect; the verdict says so. (A DST whose every
     * tensor is reproduced anyway, a type that ignores the matrix, is proven.) */
    n->lacking = n->dst_records && !given && !proven;
}
