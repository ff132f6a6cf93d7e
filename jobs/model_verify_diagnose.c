/* jobs/model_verify_diagnose.c: a tensor outside its bound, held against what the usual
 * conversion mistakes would have made of SRC.
 *
 * On up to SAMPLE rows of DST spread over the tensor, the relative error
 * sqrt(sum (dst - c)^2 / sum c^2) against each candidate c:
 *   - SRC's tensor as compared (the baseline);
 *   - SRC's rows in the other RoPE order (Q/K rows: the permutation for llama's
 *     interleaved RoPE skipped, or applied twice);
 *   - SRC's tensor transposed (square matrices: SRC is streamed once, the sampled
 *     columns kept);
 *   - the same role in each other layer of SRC (two layers' tensors swapped);
 *   - each other expert of the same stack (two experts swapped).
 * A candidate explains DST when its error is under a fifth of the baseline's and under
 * 0.25; the best one is named in t->diagnosis. The cost is bounded by a few rows per
 * layer plus one pass over the tensor for the transpose. */
#include "jobs/model_verify_impl.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "libconvert/alloc.h"

#define SAMPLE 16

typedef struct sample {
    uint64_t rows, cols;
    size_t   ns;
    uint64_t idx[SAMPLE];
    float   *d;             /* [ns, cols] DST's sampled rows */
    float   *c;             /* [ns, cols] a candidate's */
    uint8_t *raw;           /* one row in any dtype */
} sample;

static double rel_err(const sample *s) {
    double num = 0, den = 0;
    for (size_t i = 0; i < s->ns * s->cols; i++) {
        const double d = (double)s->d[i] - s->c[i];
        num += d * d;
        den += (double)s->c[i] * s->c[i];
    }
    return den > 0 ? sqrt(num / den) : num > 0 ? INFINITY : 0;
}

/* The candidate's sampled rows: tensor t's rows in the given order. */
static lc_code rows_of(sample *s, const lc_tensor *t, uint32_t heads, bool inverse,
                       double *e, lc_error *err) {
    for (size_t k = 0; k < s->ns; k++)
        LC_TRY(lc_vf_read_rows(t, s->rows, s->cols, s->idx[k], 1, 0, (size_t)s->cols, heads,
                               inverse, s->c + k * s->cols, s->raw, err));
    *e = rel_err(s);
    return LC_OK;
}

/* The candidate: t (its rows in the order given) transposed. */
static lc_code transposed(sample *s, const lc_tensor *t, uint32_t heads, bool inverse,
                          double *e, lc_error *err) {
    float *row = lc_malloc_array((size_t)s->cols, sizeof *row);
    if (!row)
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    lc_code rc = LC_OK;
    for (uint64_t j = 0; j < s->rows && rc == LC_OK; j++) {
        rc = lc_vf_read_rows(t, s->rows, s->cols, j, 1, 0, (size_t)s->cols, heads, inverse,
                             row, s->raw, err);
        for (size_t k = 0; k < s->ns && rc == LC_OK; k++)
            s->c[k * s->cols + j] = row[s->idx[k]];     /* c[i][j] = t[j][i] */
    }
    lc_free(row);
    *e = rel_err(s);
    return rc;
}

static bool explains(double e, double base) { return e < 0.2 * base && e < 0.25; }

lc_code lc_vf_diagnose(const lc_vf_side *src, const lc_vf_side *dst, const lc_vf_tensors *r,
                       lc_vf_tensor *t, lc_error *err) {
    sample s = { 0 };
    lc_vf_matrix(t->dst_t, t->permuted, &s.rows, &s.cols);
    if (s.cols > (1u << 20) || !s.rows)
        return LC_OK;                   /* rows too long to sample cheaply */
    s.ns = s.rows < SAMPLE ? (size_t)s.rows : SAMPLE;
    for (size_t k = 0; k < s.ns; k++)
        s.idx[k] = k * s.rows / s.ns;
    s.d = lc_malloc_array(s.ns * (size_t)s.cols, sizeof *s.d);
    s.c = lc_malloc_array(s.ns * (size_t)s.cols, sizeof *s.c);
    s.raw = lc_malloc((size_t)s.cols * 8);
    lc_code rc = !s.d || !s.c || !s.raw ? lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory")
                                        : LC_OK;
    for (size_t k = 0; k < s.ns && rc == LC_OK; k++)
        rc = lc_vf_read_rows(t->dst_t, s.rows, s.cols, s.idx[k], 1, 0, (size_t)s.cols, 0, false,
                             s.d + k * s.cols, s.raw, err);
    double base = INFINITY, best = INFINITY, e;
    char what[160] = "";
    if (rc == LC_OK)
        rc = rows_of(&s, t->src_t, t->heads, t->perm_inverse, &base, err);
    /* The other RoPE order. */
    const lc_hparams *hp = src->have_hp ? &src->hp : &dst->hp;
    const uint32_t heads = t->row ? lc_arch_rope_heads(t->row, hp) : 0;
    if (rc == LC_OK && heads && s.rows % (2ull * heads) == 0 && t->ndim == 2) {
        /* Compared permuted: try as stored. Compared as stored: try both directions. */
        const int tries = t->permuted ? 1 : 2;
        for (int k = 0; k < tries && rc == LC_OK; k++) {
            rc = t->permuted ? rows_of(&s, t->src_t, 0, false, &e, err)
                             : rows_of(&s, t->src_t, heads, k == 1, &e, err);
            if (rc == LC_OK && explains(e, base) && e < best) {
                best = e;
                snprintf(what, sizeof what, "%s", t->permuted
                         ? "its rows are in SRC's order, not permuted for DST's RoPE: the Q/K "
                           "permutation was skipped"
                         : "its rows are SRC's moved between RoPE's two row orders: a Q/K "
                           "permutation skipped or applied twice");
            }
        }
    }
    /* Transposed (square). */
    if (rc == LC_OK && t->ndim == 2 && s.rows == s.cols && s.rows > 1) {
        rc = transposed(&s, t->src_t, t->heads, t->perm_inverse, &e, err);
        if (rc == LC_OK && explains(e, base) && e < best) {
            best = e;
            snprintf(what, sizeof what, "it is SRC's tensor transposed");
        }
    }
    /* Another layer's. */
    const uint32_t n_layers = hp->block_count;
    for (uint32_t l = 0; t->row && t->layer != UINT32_MAX && l < n_layers && rc == LC_OK; l++) {
        char name[256], dname[256];
        if (l == t->layer ||
            lc_arch_name(t->row, src->spelling, l, name, sizeof name, NULL) != LC_OK)
            continue;
        const lc_tensor *o = lc_model_find_tensor(src->views, name);
        if (!o || o->ndim != t->src_t->ndim ||
            memcmp(o->shape, t->src_t->shape, o->ndim * sizeof *o->shape) != 0)
            continue;
        rc = rows_of(&s, o, t->heads, t->perm_inverse, &e, err);
        if (rc == LC_OK && explains(e, base) && e < best) {
            best = e;
            if (lc_arch_name(t->row, dst->spelling, l, dname, sizeof dname, NULL) != LC_OK)
                snprintf(dname, sizeof dname, "%s", name);
            snprintf(what, sizeof what, "it is layer %" PRIu32 "'s tensor (SRC's %.60s matches "
                     "it): layers swapped?", l, dname);
        }
    }
    /* Another expert's of the same stack (the pairs of the same row and layer). */
    for (size_t i = 0; t->expert != UINT32_MAX && i < r->n && rc == LC_OK; i++) {
        const lc_vf_tensor *o = &r->t[i];
        if (o == t || o->row != t->row || o->layer != t->layer || o->expert == t->expert ||
            o->expert == UINT32_MAX || o->src_t->ndim != t->src_t->ndim ||
            memcmp(o->src_t->shape, t->src_t->shape, o->src_t->ndim * sizeof *o->src_t->shape))
            continue;
        rc = rows_of(&s, o->src_t, t->heads, t->perm_inverse, &e, err);
        if (rc == LC_OK && explains(e, base) && e < best) {
            best = e;
            snprintf(what, sizeof what, "it is expert %" PRIu32 "'s tensor (SRC's %.60s matches "
                     "it): experts %" PRIu32 " and %" PRIu32 " of layer %" PRIu32 " swapped?",
                     o->expert, o->src_name, t->expert, o->expert, t->layer);
        }
    }
    if (rc == LC_OK && what[0])
        snprintf(t->diagnosis, sizeof t->diagnosis, "%s", what);
    lc_free(s.d);
    lc_free(s.c);
    lc_free(s.raw);
    return rc;
}
