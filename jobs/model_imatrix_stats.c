/* jobs/model_imatrix_stats.c: --show-statistics (model_imatrix.h): llama-imatrix's
 * statistics of an importance matrix file, computed in float in its order of operations
 * (tools/imatrix/imatrix.cpp: compute_statistics, compute_cossim, show_statistics) so
 * that the figures print the same. */
#include "jobs/model_imatrix.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/gguf_imatrix.h"
#include "libconvert/alloc.h"

void lc_job_imatrix_stats_free(lc_job_imatrix_stats *r) {
    if (!r)
        return;
    lc_free(r->t);
    lc_free(r->l);
    memset(r, 0, sizeof *r);
}

/* llama-imatrix's process_tensor_name: the item after "blk" and the one before "weight"
 * of the '.'-separated name. */
static void split_name(lc_imatrix_tstat *s) {
    char items[16][64];
    int n = 0;
    for (const char *p = s->name; n < 16; n++) {
        const char *dot = strchr(p, '.');
        const size_t len = dot ? (size_t)(dot - p) : strlen(p);
        snprintf(items[n], sizeof items[n], "%.*s", (int)len, p);
        if (!dot) {
            n++;
            break;
        }
        p = dot + 1;
    }
    s->layer[0] = s->tensor[0] = 0;
    for (int i = 0; i + 1 < n; i++)
        if (strcmp(items[i], "blk") == 0) {
            snprintf(s->layer, sizeof s->layer, "%s", items[i + 1]);
            break;
        }
    for (int i = 1; i < n; i++)
        if (strcmp(items[i], "weight") == 0) {
            snprintf(s->tensor, sizeof s->tensor, "%s", items[i - 1]);
            break;
        }
    if (!s->tensor[0])
        snprintf(s->tensor, sizeof s->tensor, "%s", s->name);
    if (!s->layer[0])
        snprintf(s->layer, sizeof s->layer, "-");
    char *end;
    const long v = strtol(s->layer, &end, 10);
    s->blk = end != s->layer && v >= 0 && v < 1 << 30 ? (int)v : -1;
}

/* compute_statistics over act[0..n) (the experts with a count, one after another). */
static void figures(lc_imatrix_tstat *s, const float *act, size_t n) {
    float total = 0, sq = 0, mx = act[0], mn = act[0];
    for (size_t i = 0; i < n; i++) {
        total += act[i];
        sq += act[i] * act[i];
        mx = act[i] > mx ? act[i] : mx;
        mn = act[i] < mn ? act[i] : mn;
    }
    const float mean = total / (float)n;
    const float var = sq / (float)n - mean * mean;
    const float dev = sqrtf(var > 0.0f ? var : 0.0f);
    size_t inactive = 0, above = 0;
    float entropy = 0;
    for (size_t i = 0; i < n; i++) {
        inactive += fabsf(act[i]) <= 1e-5f;
        if (total > 0) {
            const float p = act[i] / total;
            if (p > 0)
                entropy -= p * log2f(p);
        }
        above += dev > 0.0f && (act[i] - mean) / dev > 1;
    }
    s->total = total, s->mean = mean, s->max = mx, s->min = mn;
    s->elements = (int)n;
    s->stddev = dev;
    s->active = 1 - (float)inactive / (float)n;
    s->entropy = entropy;
    s->zd = (float)above / (float)s->elements;
}

/* One entry: its raw sums (all experts, for the cosine) into raw, its figures into s.
 * False when no expert has a count (llama-imatrix leaves it out). */
static lc_code entry_stats(const lc_imatrix *im, size_t i, float *raw, float *act,
                           lc_imatrix_tstat *s, bool *kept, lc_error *err) {
    const uint64_t nmat = lc_imatrix_matrices(im, i);
    const uint64_t ne0 = lc_imatrix_values(im, i) / nmat;
    size_t n = 0;
    for (uint64_t m = 0; m < nmat; m++) {
        int64_t count;
        float *row = raw + m * ne0;
        LC_TRY(lc_imatrix_raw(im, i, m, row, &count, err));
        for (uint64_t j = 0; count != 0 && j < ne0; j++)
            act[n++] = row[j] / (float)count;
    }
    *kept = n > 0;
    snprintf(s->name, sizeof s->name, "%s", lc_imatrix_name(im, i));
    split_name(s);
    if (n)
        figures(s, act, n);
    return LC_OK;
}

static int by_tensor_then_total(const void *x, const void *y) {
    const lc_imatrix_tstat *a = x, *b = y;
    const int c = strcmp(a->tensor, b->tensor);
    if (c)
        return c;
    return a->total > b->total ? -1 : a->total < b->total;
}

/* compute_cossim: the raw sums against the same name one layer down. */
static void cosines(const lc_imatrix *im, lc_imatrix_tstat *t, size_t n, float *const *raw,
                    const uint64_t *len) {
    for (size_t i = 0; i < n; i++) {
        t[i].cossim = 0;
        const char *at = strstr(t[i].name, "blk.");
        if (!at || t[i].blk <= 0)
            continue;
        char prev[160];
        const char *digits = at + 4;
        size_t nd = strspn(digits, "0123456789");
        snprintf(prev, sizeof prev, "%.*s%d%s", (int)(digits - t[i].name), t[i].name,
                 t[i].blk - 1, digits + nd);
        const size_t j = lc_imatrix_find(im, prev);
        const size_t k = lc_imatrix_find(im, t[i].name);
        if (j == SIZE_MAX || k == SIZE_MAX || !raw[j] || len[j] != len[k])
            continue;
        float dp = 0, cm = 0, pm = 0;
        for (uint64_t v = 0; v < len[k]; v++) {
            dp += raw[k][v] * raw[j][v];
            cm += raw[k][v] * raw[k][v];
            pm += raw[j][v] * raw[j][v];
        }
        t[i].cossim = dp / (sqrtf(cm) * sqrtf(pm));
    }
}

/* Per layer (ascending; entries of no layer left out): the element-weighted averages. */
static lc_code layers(lc_job_imatrix_stats *r, lc_error *err) {
    int top = -1;
    for (size_t i = 0; i < r->n; i++)
        top = r->t[i].blk > top ? r->t[i].blk : top;
    if (top < 0)
        return LC_OK;
    float *w = lc_calloc((size_t)top + 1, 3 * sizeof *w);
    int *el = lc_calloc((size_t)top + 1, sizeof *el);
    r->l = lc_calloc((size_t)top + 1, sizeof *r->l);
    lc_code rc = LC_OK;
    if (!w || !el || !r->l) {
        rc = lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
        goto done;
    }
    for (size_t i = 0; i < r->n; i++) {
        const lc_imatrix_tstat *s = &r->t[i];
        if (s->blk < 0)
            continue;
        w[3 * s->blk] += (float)s->elements * s->total;
        w[3 * s->blk + 1] += (float)s->elements * s->zd;
        w[3 * s->blk + 2] += (float)s->elements * s->cossim;
        el[s->blk] += s->elements;
    }
    for (int b = 0; b <= top; b++)
        if (el[b])
            r->l[r->nl++] = (lc_imatrix_lstat){ b, w[3 * b] / (float)el[b],
                                                w[3 * b + 1] / (float)el[b],
                                                w[3 * b + 2] / (float)el[b] };
done:
    lc_free(w);
    lc_free(el);
    return rc;
}

lc_code lc_job_imatrix_statistics(const char *path, lc_job_imatrix_stats *r, lc_error *err) {
    memset(r, 0, sizeof *r);
    lc_imatrix *im = NULL;
    LC_TRY(lc_imatrix_open(path, &im, err));
    const size_t n = lc_imatrix_count(im);
    float **raw = lc_calloc(n, sizeof *raw);
    uint64_t *len = lc_calloc(n, sizeof *len);
    float *act = NULL;
    lc_code rc = LC_OK;
    uint64_t most = 1;
    for (size_t i = 0; i < n; i++)
        most = lc_imatrix_values(im, i) > most ? lc_imatrix_values(im, i) : most;
    if (!raw || !len || !(r->t = lc_calloc(n ? n : 1, sizeof *r->t)) ||
        !(act = lc_malloc_array((size_t)most, sizeof *act))) {
        rc = lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
        goto done;
    }
    for (size_t i = 0; i < n && rc == LC_OK; i++) {
        bool kept = false;
        len[i] = lc_imatrix_values(im, i);
        if (!(raw[i] = lc_malloc_array((size_t)len[i], sizeof **raw))) {
            rc = lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
            break;
        }
        rc = entry_stats(im, i, raw[i], act, &r->t[r->n], &kept, err);
        r->n += kept;
    }
    if (rc == LC_OK && r->n == 0)
        rc = lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET, "no entry has data");
    if (rc == LC_OK) {
        cosines(im, r->t, r->n, raw, len);
        qsort(r->t, r->n, sizeof *r->t, by_tensor_then_total);
        rc = layers(r, err);
    }
done:
    for (size_t i = 0; raw && i < n; i++)
        lc_free(raw[i]);
    lc_free(raw);
    lc_free(len);
    lc_free(act);
    lc_imatrix_free(im);
    if (rc != LC_OK) {
        lc_job_imatrix_stats_free(r);
        lc_err_context(err, path, NULL);
    }
    return rc;
}
