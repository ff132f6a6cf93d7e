/* formats/gguf_imatrix.c: llama-imatrix's files, GGUF and legacy .dat (see imatrix.h). */
#include "formats/gguf_imatrix.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/gguf.h"
#include "libconvert/alloc.h"
#include "libconvert/map.h"
#include "libconvert/model.h"
#include "libconvert/rd.h"

typedef struct entry {
    char *name;                 /* owned */
    size_t seq;                 /* its place in the file (the later of a repeated name wins) */
    uint64_t nvalues, nmat;
    const lc_tensor *sums, *counts;     /* GGUF */
    uint64_t sums_at;           /* legacy: file offset of the values */
    int64_t ncall;              /* legacy */
} entry;

struct lc_imatrix {
    lc_model *gguf;             /* GGUF: owns the map the tensors view */
    lc_map *map;                /* legacy, opened from a path */
    const uint8_t *data;        /* legacy: the file's bytes (map's, or the caller's) */
    uint64_t size;
    entry *e;
    size_t n;
    char *dataset;
    int32_t chunks;
    bool legacy;
};

void lc_imatrix_free(lc_imatrix *im) {
    if (!im)
        return;
    for (size_t i = 0; i < im->n; i++)
        lc_free(im->e[i].name);
    lc_free(im->e);
    lc_free(im->dataset);
    lc_model_free(im->gguf);
    lc_map_close(im->map);
    lc_free(im);
}

static int by_name(const void *a, const void *b) {
    const entry *x = a, *y = b;
    const int c = strcmp(x->name, y->name);
    return c ? c : x->seq < y->seq ? -1 : x->seq > y->seq;
}

static lc_code add_entry(lc_imatrix *im, size_t *cap, const char *name, size_t len,
                         entry **out, lc_error *err) {
    if (im->n == *cap) {
        const size_t nc = *cap ? 2 * *cap : 64;
        entry *e = lc_realloc_array(im->e, nc, sizeof *e);
        if (!e)
            return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
        im->e = e;
        *cap = nc;
    }
    entry *e = &im->e[im->n];
    *e = (entry){ .seq = im->n };
    if (!(e->name = lc_strndup(name, len)))
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    im->n++;
    *out = e;
    return LC_OK;
}

/* ---- legacy .dat ---- */

static lc_code read_i32(lc_rd *r, int32_t *v, const char *what) {
    uint32_t u;
    LC_TRY(lc_rd_u32(r, &u, what));
    *v = (int32_t)u;
    return LC_OK;
}

static lc_code open_legacy(lc_imatrix *im, lc_error *err) {
    lc_rd r = lc_rd_init(im->data, im->size, 0, err);
    char where[96] = "";
    size_t cap = 0;
    int32_t n_entries;
    lc_code rc = read_i32(&r, &n_entries, "the entry count");
    if (rc == LC_OK && n_entries < 1)
        rc = lc_fail(err, LC_E_MALFORMED, 0, "no entries (count %" PRId32 ")", n_entries);
    for (int32_t i = 0; rc == LC_OK && i < n_entries; i++) {
        snprintf(where, sizeof where, "entry %" PRId32 " of %" PRId32, i + 1, n_entries);
        int32_t len, ncall, nval;
        const uint8_t *name, *vals;
        const uint64_t at = lc_rd_at(&r);
        if ((rc = read_i32(&r, &len, "a name length")) != LC_OK)
            break;
        if (len < 0) {
            rc = lc_fail(err, LC_E_MALFORMED, at, "name length %" PRId32, len);
            break;
        }
        if ((rc = lc_rd_bytes(&r, (uint64_t)len, &name, "the name")) != LC_OK)
            break;
        const size_t nlen = strnlen((const char *)name, (size_t)len);
        snprintf(where, sizeof where, "%.*s", nlen < 90 ? (int)nlen : 90, (const char *)name);
        const uint64_t at_n = lc_rd_at(&r) + 4;
        if ((rc = read_i32(&r, &ncall, "the call count")) != LC_OK ||
            (rc = read_i32(&r, &nval, "the value count")) != LC_OK)
            break;
        if (nval < 1) {
            rc = lc_fail(err, LC_E_MALFORMED, at_n, "%" PRId32 " values", nval);
            break;
        }
        const uint64_t at_v = lc_rd_at(&r);
        if ((rc = lc_rd_bytes(&r, (uint64_t)nval * 4, &vals, "the values")) != LC_OK)
            break;
        /* A repeated name replaces the earlier entry (std::map's operator[]): merged
         * after the sort (merge_names). */
        entry *e = NULL;
        if ((rc = add_entry(im, &cap, (const char *)name, nlen, &e, err)) != LC_OK)
            break;
        e->nvalues = (uint64_t)nval;
        e->nmat = 1;
        e->sums_at = at_v;
        e->ncall = ncall;
    }
    if (rc != LC_OK) {
        lc_err_context(err, NULL, where);
        return rc;
    }
    /* The optional tail: an i32 chunk count (what is there of it), then the dataset. */
    uint8_t cnt[4] = { 0 };
    const uint64_t left = lc_rd_left(&r);
    if (left > 0) {
        memcpy(cnt, im->data + r.pos, left < 4 ? (size_t)left : 4);
        im->chunks = (int32_t)lc_load_le32(cnt);
        if (left >= 4) {
            r.pos += 4;
            int32_t len;
            const uint8_t *ds;
            if (lc_rd_left(&r) >= 4 && read_i32(&r, &len, "") == LC_OK && len > 0 &&
                lc_rd_left(&r) >= (uint64_t)len && lc_rd_bytes(&r, (uint64_t)len, &ds, "") == LC_OK &&
                !(im->dataset = lc_strndup((const char *)ds, strnlen((const char *)ds, (size_t)len))))
                return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
        }
    }
    im->legacy = true;
    return LC_OK;
}

/* ---- GGUF ---- */

static bool strip(const char *name, const char *suffix, size_t *len) {
    const size_t n = strlen(name), s = strlen(suffix);
    if (n < s || strcmp(name + n - s, suffix) != 0)
        return false;
    *len = n - s;
    return true;
}

/* The GGUF is parsed from PATH (its own map) or, when path is NULL, from im->data. */
static lc_code open_gguf(lc_imatrix *im, const char *path, lc_error *err) {
    LC_TRY(path ? lc_gguf_load(path, &im->gguf, err)
                : lc_gguf_load_mem(im->data, im->size, &im->gguf, err));
    const lc_model *m = im->gguf;
    const size_t nt = lc_model_tensor_count(m);
    if (nt < 1)
        return lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET, "no tensors: no importance data");
    const lc_value *ds = lc_model_find_meta(m, "imatrix.datasets");
    const lc_value *cc = lc_model_find_meta(m, "imatrix.chunk_count");
    const lc_value *cs = lc_model_find_meta(m, "imatrix.chunk_size");
    if (!ds || !cc || !cs)
        return lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET, "missing imatrix metadata (%s)",
                       !ds ? "imatrix.datasets" : !cc ? "imatrix.chunk_count" :
                       "imatrix.chunk_size");
    if (cc->type != LC_VT_U32 || cs->type != LC_VT_U32)
        return lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET, "imatrix.chunk_%s is not a u32",
                       cc->type != LC_VT_U32 ? "count" : "size");
    im->chunks = (int32_t)(uint32_t)cc->u;
    if (ds->type == LC_VT_ARRAY && ds->arr.elem == LC_VT_STRING && ds->arr.count > 0) {
        size_t len;
        const char *s = lc_value_arr_str(ds, 0, &len);
        if (!(im->dataset = lc_strndup(s, strnlen(s, len))))
            return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    }
    size_t cap = 0;
    for (size_t i = 0; i < nt; i++) {
        const lc_tensor *t = lc_model_tensor(m, i);
        size_t len;
        const bool sums = strip(t->name, ".in_sum2", &len);
        if (!sums && !strip(t->name, ".counts", &len))
            continue;
        entry *e = NULL;
        LC_TRY(add_entry(im, &cap, t->name, len, &e, err));
        if (t->dtype != LC_DT_F32)
            return lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET, "%s is %s, not F32", t->name,
                           lc_dtype_name(t->dtype));
        if (sums)
            e->sums = t;
        else
            e->counts = t;
    }
    /* The .in_sum2 and .counts of one name meet once sorted (ggml refuses a repeated
     * tensor name, so there is one of each at most). */
    if (im->n > 1)
        qsort(im->e, im->n, sizeof *im->e, by_name);
    size_t w = 0;
    for (size_t k = 0; k < im->n; k++) {
        if (w > 0 && strcmp(im->e[w - 1].name, im->e[k].name) == 0) {
            entry *d = &im->e[w - 1];
            if (im->e[k].sums)
                d->sums = im->e[k].sums;
            if (im->e[k].counts)
                d->counts = im->e[k].counts;
            lc_free(im->e[k].name);
            continue;
        }
        im->e[w++] = im->e[k];
    }
    im->n = w;
    for (size_t k = 0; k < im->n; k++) {
        entry *e = &im->e[k];
        lc_error *er = err;
        if (!e->sums || !e->counts) {
            lc_fail(er, LC_E_MALFORMED, LC_NO_OFFSET, "%s without %s", e->sums ? "sums" :
                    "counts", e->sums ? "counts" : "sums");
            lc_err_context(err, NULL, e->name);
            return err ? err->code : LC_E_MALFORMED;
        }
        if (!lc_tensor_numel(e->sums, &e->nvalues) || !lc_tensor_numel(e->counts, &e->nmat) ||
            e->nmat == 0 || e->nvalues % e->nmat != 0 || e->nvalues == 0) {
            lc_fail(er, LC_E_MALFORMED, LC_NO_OFFSET, "%" PRIu64 " sums are not whole rows for "
                    "%" PRIu64 " counts", e->nvalues, e->nmat);
            lc_err_context(err, NULL, e->name);
            return err ? err->code : LC_E_MALFORMED;
        }
    }
    return LC_OK;
}

/* Opens from PATH, or (path NULL) from the caller's buf/size. */
static lc_code open_any(const char *path, const void *buf, uint64_t size, lc_imatrix **out,
                        lc_error *err) {
    *out = NULL;
    lc_imatrix *im = lc_calloc(1, sizeof *im);
    if (!im)
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    lc_code rc = LC_OK;
    if (path && (rc = lc_map_open(path, &im->map, err)) == LC_OK) {
        buf = im->map->data;
        size = im->map->size;
    }
    im->data = buf;
    im->size = size;
    if (rc == LC_OK) {
        if (size >= 4 && memcmp(buf, "GGUF", 4) == 0) {
            if (path) {
                lc_map_close(im->map);  /* the GGUF reader maps it itself */
                im->map = NULL;
                im->data = NULL;
            }
            rc = open_gguf(im, path, err);
        } else {
            rc = open_legacy(im, err);
        }
    }
    if (rc == LC_OK && im->n == 0)
        rc = lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET, "no importance data");
    if (rc != LC_OK) {
        lc_err_context(err, path, NULL);
        lc_imatrix_free(im);
        return rc;
    }
    /* Sorted by name; of a repeated name (legacy) the last in the file is kept. */
    if (im->n > 1)
        qsort(im->e, im->n, sizeof *im->e, by_name);
    size_t w = 0;
    for (size_t k = 0; k < im->n; k++) {
        if (k + 1 < im->n && strcmp(im->e[k].name, im->e[k + 1].name) == 0) {
            lc_free(im->e[k].name);
            continue;
        }
        im->e[w++] = im->e[k];
    }
    im->n = w;
    *out = im;
    return LC_OK;
}

lc_code lc_imatrix_open(const char *path, lc_imatrix **out, lc_error *err) {
    return open_any(path, NULL, 0, out, err);
}

lc_code lc_imatrix_open_mem(const void *buf, uint64_t size, lc_imatrix **out, lc_error *err) {
    return open_any(NULL, buf, size, out, err);
}

size_t lc_imatrix_count(const lc_imatrix *im) { return im->n; }
const char *lc_imatrix_name(const lc_imatrix *im, size_t i) { return im->e[i].name; }
uint64_t lc_imatrix_values(const lc_imatrix *im, size_t i) { return im->e[i].nvalues; }
uint64_t lc_imatrix_matrices(const lc_imatrix *im, size_t i) { return im->e[i].nmat; }
const char *lc_imatrix_dataset(const lc_imatrix *im) { return im->dataset; }
int32_t lc_imatrix_chunks(const lc_imatrix *im) { return im->chunks; }
bool lc_imatrix_is_legacy(const lc_imatrix *im) { return im->legacy; }

size_t lc_imatrix_find(const lc_imatrix *im, const char *name) {
    size_t lo = 0, hi = im->n;
    while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;
        const int c = strcmp(im->e[mid].name, name);
        if (c == 0)
            return mid;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return SIZE_MAX;
}

/* std::lround of a count as an int64 (a NaN or one out of range: LONG_MIN, as glibc). */
static int64_t round_count(float c) {
    if (!(fabsf(c) < 0x1p63f))
        return INT64_MIN;
    return (int64_t)llroundf(c);
}

lc_code lc_imatrix_weights(const lc_imatrix *im, size_t i, uint64_t mat, float *out,
                           lc_error *err) {
    const entry *e = &im->e[i];
    const uint64_t ne0 = e->nvalues / e->nmat;
    if (im->legacy) {
        memcpy(out, im->data + e->sums_at, (size_t)ne0 * 4);
        const int64_t ncall = e->ncall;
        if (ncall > 0)
            for (uint64_t k = 0; k < ne0; k++)
                out[k] = out[k] / (float)ncall;
        return LC_OK;
    }
    float c;
    LC_TRY(lc_tensor_read(e->counts, mat * 4, &c, 4, err));
    LC_TRY(lc_tensor_read(e->sums, mat * ne0 * 4, out, (size_t)ne0 * 4, err));
    const float count = (float)round_count(c);
    if (count > 0.0f)
        for (uint64_t k = 0; k < ne0; k++)
            out[k] = out[k] / count;
    else
        for (uint64_t k = 0; k < ne0; k++)
            out[k] = 1;
    return LC_OK;
}

lc_code lc_imatrix_raw(const lc_imatrix *im, size_t i, uint64_t mat, float *sums,
                       int64_t *count, lc_error *err) {
    const entry *e = &im->e[i];
    const uint64_t ne0 = e->nvalues / e->nmat;
    if (im->legacy) {
        memcpy(sums, im->data + e->sums_at, (size_t)ne0 * 4);
        *count = e->ncall;
        return LC_OK;
    }
    float c;
    LC_TRY(lc_tensor_read(e->counts, mat * 4, &c, 4, err));
    LC_TRY(lc_tensor_read(e->sums, mat * ne0 * 4, sums, (size_t)ne0 * 4, err));
    *count = round_count(c);
    return LC_OK;
}
