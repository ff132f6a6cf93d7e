/* jobs/model_imatrix_sums.c: the importance matrix's sums (model_imatrix_impl.h), and
 * the GGUF llama-imatrix writes for them (tools/imatrix/imatrix.cpp, save_imatrix):
 *
 *   general.type        string  "imatrix"
 *   imatrix.datasets    [string] the text files
 *   imatrix.chunk_count u32     max over entries and experts of count / chunk_size
 *   imatrix.chunk_size  u32     tokens per chunk
 *   per NAME, sorted:   NAME.in_sum2 F32 ne [cols, n_mat] (one dimension when n_mat is 1)
 *                       NAME.counts  F32 ne [1, n_mat]    (ditto)
 *
 * llama-imatrix sums in float32; we sum in double and round once when writing. */
#include "jobs/model_imatrix_impl.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libconvert/alloc.h"
#include "libconvert/bytes.h"
#include "libconvert/outfile.h"
#include "libconvert/value.h"

lc_code lc_imx_init(lc_imx *s, const lc_arch *a, uint32_t n_layers, uint32_t n_expert,
                    bool process_output, lc_error *err) {
    memset(s, 0, sizeof *s);
    s->arch = a;
    s->n_layers = n_layers;
    s->n_expert = n_expert;
    s->process_output = process_output;
    if (!(s->slot = lc_calloc(((size_t)n_layers + 1) * LC_ROLE_COUNT, sizeof *s->slot)))
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory for %" PRIu32 " layers",
                       n_layers);
    return LC_OK;
}

void lc_imx_free(lc_imx *s) {
    if (!s)
        return;
    for (size_t i = 0; i < s->n; i++) {
        lc_free(s->e[i].sums);
        lc_free(s->e[i].counts);
    }
    lc_free(s->e);
    lc_free(s->slot);
    memset(s, 0, sizeof *s);
}

/* The entry of (role, layer), made at its first product: NULL with *skip when the
 * family writes no GGUF tensor for the role. */
static lc_code entry_of(lc_imx *s, lc_role role, uint32_t layer, size_t cols, uint32_t n_mat,
                        lc_imx_entry **out, lc_error *err) {
    *out = NULL;
    const size_t at = (size_t)(layer == UINT32_MAX ? s->n_layers : layer) * LC_ROLE_COUNT +
                      (size_t)role;
    if (s->slot[at]) {
        *out = &s->e[s->slot[at] - 1];
        return LC_OK;
    }
    const lc_arch_tensor *row = lc_arch_role(s->arch, role);
    char name[64];
    if (!row || lc_arch_name(row, LC_SPELL_GGUF, layer == UINT32_MAX ? 0 : layer, name,
                             sizeof name, NULL) != LC_OK)
        return LC_OK;                       /* never written to GGUF: nothing to record */
    if (s->n == s->cap) {
        const size_t cap = s->cap ? 2 * s->cap : 64;
        lc_imx_entry *e = lc_realloc_array(s->e, cap, sizeof *e);
        if (!e)
            return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
        s->e = e;
        s->cap = cap;
    }
    lc_imx_entry *e = &s->e[s->n];
    memset(e, 0, sizeof *e);
    snprintf(e->name, sizeof e->name, "%s", name);
    e->role = role;
    e->cols = (uint32_t)cols;
    e->n_mat = n_mat;
    e->sums = lc_calloc((size_t)n_mat * cols, sizeof *e->sums);
    e->counts = lc_calloc(n_mat, sizeof *e->counts);
    if (!e->sums || !e->counts || cols > UINT32_MAX) {
        lc_free(e->sums);
        lc_free(e->counts);
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory for %" PRIu32 " x %zu "
                       "sums of %s", n_mat, cols, name);
    }
    s->slot[at] = (uint32_t)++s->n;
    *out = e;
    return LC_OK;
}

lc_code lc_imx_tap(void *user, lc_role role, uint32_t layer, uint32_t expert, const float *x,
                   size_t n, size_t cols, lc_error *err) {
    lc_imx *s = user;
    if (role == LC_ROLE_OUTPUT && !s->process_output)
        return LC_OK;
    const bool per_expert = expert != UINT32_MAX;
    if ((layer != UINT32_MAX && layer >= s->n_layers) || (per_expert && expert >= s->n_expert))
        return lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "a product of layer %" PRIu32 ", expert %"
                       PRIu32 " is outside the model", layer, expert);
    lc_imx_entry *e;
    LC_TRY(entry_of(s, role, layer, cols, per_expert ? s->n_expert : 1, &e, err));
    if (!e)
        return LC_OK;
    if (e->cols != cols)
        return lc_fail_in(err, LC_E_MALFORMED, LC_NO_OFFSET, e->name, "%s: inputs of %zu "
                          "columns after %" PRIu32, e->name, cols, e->cols);
    double *acc = e->sums + (size_t)(per_expert ? expert : 0) * cols;   /* [cols] */
    for (size_t t = 0; t < n; t++) {
        const float *xt = x + t * cols;                                 /* [cols] */
        for (size_t j = 0; j < cols; j++)
            acc[j] += (double)xt[j] * xt[j];
    }
    for (size_t j = 0; j < cols; j++)
        if (!isfinite(acc[j]))
            return lc_fail_in(err, LC_E_MALFORMED, LC_NO_OFFSET, e->name, "%s: non-finite "
                              "activations in chunk %" PRIu32 " (column %zu)", e->name,
                              s->chunk, j);
    e->counts[per_expert ? expert : 0] += n;
    return LC_OK;
}

lc_code lc_imx_tile(lc_imx *s, const lc_hparams *hp, lc_error *err) {
    const uint64_t nk = hp->ssm_group_count, nv = hp->ssm_time_step_rank, dv = hp->ssm_head_v;
    if (!nk || !nv || nk == nv || nv % nk || !dv)
        return LC_OK;
    const uint64_t r = nv / nk;
    for (size_t i = 0; i < s->n; i++) {
        lc_imx_entry *e = &s->e[i];
        const lc_arch_tensor *row = lc_arch_role(s->arch, e->role);
        if (!row || row->vreorder != LC_VR_COLS || e->cols != nv * dv)
            continue;
        double *tmp = lc_malloc_array(e->cols, sizeof *tmp);
        if (!tmp)
            return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
        for (uint32_t m = 0; m < e->n_mat; m++) {
            double *v = e->sums + (size_t)m * e->cols;                  /* [cols] */
            /* grouped head k r + j (key head k, its j-th) is tiled head j nk + k */
            for (uint64_t k = 0; k < nk; k++)
                for (uint64_t j = 0; j < r; j++)
                    memcpy(tmp + (j * nk + k) * dv, v + (k * r + j) * dv, dv * sizeof *v);
            memcpy(v, tmp, e->cols * sizeof *v);
        }
        lc_free(tmp);
    }
    return LC_OK;
}

static int by_name(const void *a, const void *b) {
    return strcmp(((const lc_imx_entry *const *)a)[0]->name,
                  ((const lc_imx_entry *const *)b)[0]->name);
}

/* An F32 tensor NAME of shape [n_mat, width] (or [width] when n_mat is 1) with the
 * model owning its data. */
static lc_code add_f32(lc_model *m, const char *name, uint32_t n_mat, uint64_t width,
                       float **data, lc_error *err) {
    const uint64_t shape2[2] = { n_mat, width }, shape1[1] = { width };
    lc_tensor *t;
    *data = NULL;
    float *buf = lc_calloc((size_t)(n_mat * width), sizeof *buf);
    if (!buf)
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    LC_TRY(lc_model_own(m, buf, lc_free, err));
    LC_TRY(lc_model_add_tensor(m, name, LC_DT_F32, n_mat > 1 ? 2 : 1,
                               n_mat > 1 ? shape2 : shape1, &t, err));
    t->data = (const uint8_t *)buf;
    *data = buf;
    return LC_OK;
}

static lc_code set_u32(lc_model *m, const char *key, uint32_t v, lc_error *err) {
    lc_value val = lc_value_uint(LC_VT_U32, v);
    return lc_model_set_meta(m, key, &val, err);
}

/* llama-imatrix's m_last_chunk: the largest count over the chunk size. */
static uint32_t chunks_of(const lc_imx *s, uint32_t chunk_size) {
    uint64_t most = 0;
    for (size_t i = 0; i < s->n; i++)
        for (uint32_t k = 0; k < s->e[i].n_mat; k++)
            most = s->e[i].counts[k] > most ? s->e[i].counts[k] : most;
    return (uint32_t)(most / chunk_size);
}

static lc_code build(const lc_imx *s, const char *dataset, uint32_t chunk_size, lc_model *m,
                     const lc_imx_entry **order, uint32_t *chunk_count, lc_error *err) {
    *chunk_count = chunks_of(s, chunk_size);
    LC_TRY(lc_model_set_meta_str(m, "general.type", "imatrix", err));
    lc_value ds;
    LC_TRY(lc_value_string_array(&ds, dataset ? 1 : 0, dataset ? strlen(dataset) : 0, err));
    if (dataset) {
        const lc_code rc = lc_value_arr_set_str(&ds, 0, dataset, strlen(dataset), err);
        if (rc != LC_OK) {
            lc_value_clear(&ds);
            return rc;
        }
    }
    LC_TRY(lc_model_set_meta(m, "imatrix.datasets", &ds, err));
    LC_TRY(set_u32(m, "imatrix.chunk_count", *chunk_count, err));
    LC_TRY(set_u32(m, "imatrix.chunk_size", chunk_size, err));
    for (size_t i = 0; i < s->n; i++) {
        const lc_imx_entry *e = order[i];
        char name[96];
        float *sums, *counts;
        snprintf(name, sizeof name, "%s.in_sum2", e->name);
        LC_TRY(add_f32(m, name, e->n_mat, e->cols, &sums, err));
        snprintf(name, sizeof name, "%s.counts", e->name);
        LC_TRY(add_f32(m, name, e->n_mat, 1, &counts, err));
        for (size_t j = 0; j < (size_t)e->n_mat * e->cols; j++)
            sums[j] = (float)e->sums[j];
        for (uint32_t k = 0; k < e->n_mat; k++)
            counts[k] = (float)e->counts[k];
    }
    return LC_OK;
}

lc_code lc_imx_to_gguf(const lc_imx *s, const char *dataset, uint32_t chunk_size,
                       lc_model **out, uint32_t *chunk_count, lc_error *err) {
    *out = NULL;
    lc_model *m = lc_model_new();
    const lc_imx_entry **order = lc_malloc_array(s->n ? s->n : 1, sizeof *order);
    lc_code rc = LC_OK;
    if (!m || !order || chunk_size == 0) {
        rc = lc_fail(err, chunk_size ? LC_E_NOMEM : LC_E_ARG, LC_NO_OFFSET,
                     chunk_size ? "out of memory" : "a chunk size of 0");
        goto done;
    }
    for (size_t i = 0; i < s->n; i++)
        order[i] = &s->e[i];
    qsort(order, s->n, sizeof *order, by_name);     /* names are unique: any sort agrees */
    if ((rc = build(s, dataset, chunk_size, m, order, chunk_count, err)) != LC_OK)
        goto done;
    *out = m;
    m = NULL;
done:
    lc_free(order);
    lc_model_free(m);
    return rc;
}

/* ---- the legacy .dat ---- */

static lc_code put_i32(lc_outfile *f, int32_t v, lc_error *err) {
    uint8_t b[4];
    lc_store_le32(b, (uint32_t)v);
    return lc_outfile_write(f, b, 4, err);
}

static lc_code dat_entry(lc_outfile *f, const lc_imx_entry *e, uint32_t chunk_size,
                         lc_error *err) {
    uint64_t most = 0;
    for (uint32_t k = 0; k < e->n_mat; k++)
        most = e->counts[k] > most ? e->counts[k] : most;
    const uint64_t ncall = (most + chunk_size - 1) / chunk_size;   /* never 0 by accident */
    const size_t nval = (size_t)e->n_mat * e->cols;
    if (ncall > INT32_MAX || nval > INT32_MAX)
        return lc_fail_in(err, LC_E_OVERFLOW, LC_NO_OFFSET, e->name, "%s: too large for a "
                          ".dat", e->name);
    LC_TRY(put_i32(f, (int32_t)strlen(e->name), err));
    LC_TRY(lc_outfile_write(f, e->name, strlen(e->name), err));
    LC_TRY(put_i32(f, (int32_t)ncall, err));
    LC_TRY(put_i32(f, (int32_t)nval, err));
    for (size_t i = 0; i < nval; i++) {
        /* llama-imatrix's float arithmetic: (value / count) * ncall */
        float count = (float)e->counts[i / e->cols], value = (float)e->sums[i];
        if (count == 0.0f)
            value = count = 1.0f;           /* partial data: 1 */
        uint8_t b[4];
        const float v = (value / count) * (float)ncall;
        uint32_t bits;
        memcpy(&bits, &v, 4);
        lc_store_le32(b, bits);
        LC_TRY(lc_outfile_write(f, b, 4, err));
    }
    return LC_OK;
}

lc_code lc_imx_write_dat(const lc_imx *s, const char *dataset, uint32_t chunk_size,
                         const char *path, uint32_t *chunk_count, lc_error *err) {
    if (chunk_size == 0)
        return lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "a chunk size of 0");
    *chunk_count = chunks_of(s, chunk_size);
    const lc_imx_entry **order = lc_malloc_array(s->n ? s->n : 1, sizeof *order);
    if (!order)
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    size_t n = 0;
    for (size_t i = 0; i < s->n; i++) {
        bool any = false;
        for (uint32_t k = 0; k < s->e[i].n_mat; k++)
            any |= s->e[i].counts[k] != 0;
        if (any)
            order[n++] = &s->e[i];
    }
    qsort(order, n, sizeof *order, by_name);
    lc_outfile *f = NULL;
    lc_code rc = lc_outfile_open(path, &f, err);
    if (rc == LC_OK)
        rc = put_i32(f, (int32_t)n, err);
    for (size_t i = 0; i < n && rc == LC_OK; i++)
        rc = dat_entry(f, order[i], chunk_size, err);
    const size_t dl = dataset ? strlen(dataset) : 0;
    if (rc == LC_OK)
        rc = put_i32(f, (int32_t)*chunk_count, err);
    if (rc == LC_OK)
        rc = put_i32(f, (int32_t)dl, err);
    if (rc == LC_OK && dl)
        rc = lc_outfile_write(f, dataset, dl, err);
    if (rc == LC_OK)
        rc = lc_outfile_commit(f, err);
    else
        lc_outfile_abort(f);
    lc_free(order);
    return rc;
}
