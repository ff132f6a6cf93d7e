/* libconvert/model.c: the model container.
 * Tensors are kept as an array of pointers so that pointers handed out stay valid as
 * the model grows; names are indexed by an open-addressing hash so that duplicate
 * detection stays linear for checkpoints with hundreds of thousands of tensors. */
#include "libconvert/model.h"

#include <string.h>

#include "libconvert/alloc.h"

typedef struct owned {
    void *res;
    void (*free_fn)(void *);
} owned;

struct lc_model {
    lc_tensor **tensors;
    size_t      n_tensors, cap_tensors;
    uint32_t   *index;      /* hash slots: tensor number + 1, 0 = empty */
    size_t      index_cap;  /* power of two, or 0 */
    lc_kv      *meta;
    size_t      n_meta, cap_meta;
    uint32_t   *meta_index;      /* same scheme for metadata keys: a hostile header may */
    size_t      meta_index_cap;  /* carry millions of them, so no linear search */
    owned      *owned;
    size_t      n_owned, cap_owned;
};

static uint64_t hash_name(const char *s) {
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 1099511628211ull;
    return h;
}

/* Grows a buffer to hold at least `need` items; false when out of memory. */
static bool grow(void **buf, size_t *cap, size_t need, size_t item) {
    if (need <= *cap)
        return true;
    size_t n = *cap ? *cap : 8;
    while (n < need) {
        if (n > SIZE_MAX / 2)
            return false;
        n *= 2;
    }
    void *p = lc_realloc_array(*buf, n, item);
    if (!p)
        return false;
    *buf = p;
    *cap = n;
    return true;
}

lc_model *lc_model_new(void) { return lc_calloc(1, sizeof(lc_model)); }

void lc_model_free(lc_model *m) {
    if (!m)
        return;
    for (size_t i = 0; i < m->n_tensors; i++) {
        lc_tensor *t = m->tensors[i];
        if (t->ops && t->ops->free)
            t->ops->free(t->ctx);
        lc_free(t->name);
        lc_free(t);
    }
    lc_free(m->tensors);
    lc_free(m->index);
    for (size_t i = 0; i < m->n_meta; i++) {
        lc_free(m->meta[i].key);
        lc_value_clear(&m->meta[i].val);
    }
    lc_free(m->meta);
    lc_free(m->meta_index);
    for (size_t i = m->n_owned; i-- > 0;)
        m->owned[i].free_fn(m->owned[i].res);
    lc_free(m->owned);
    lc_free(m);
}

static size_t find_slot(const lc_model *m, const char *name, bool *found) {
    size_t mask = m->index_cap - 1, s = (size_t)hash_name(name) & mask;
    for (;; s = (s + 1) & mask) {
        uint32_t v = m->index[s];
        if (v == 0) {
            *found = false;
            return s;
        }
        if (strcmp(m->tensors[v - 1]->name, name) == 0) {
            *found = true;
            return s;
        }
    }
}

static bool rehash(lc_model *m, size_t cap) {
    uint32_t *idx = lc_calloc(cap, sizeof *idx);
    if (!idx)
        return false;
    lc_free(m->index);
    m->index = idx;
    m->index_cap = cap;
    for (size_t i = 0; i < m->n_tensors; i++) {
        bool found;
        size_t s = find_slot(m, m->tensors[i]->name, &found);
        m->index[s] = (uint32_t)(i + 1);
    }
    return true;
}

lc_code lc_model_add_tensor(lc_model *m, const char *name, lc_dtype dtype, uint32_t ndim,
                            const uint64_t *shape, lc_tensor **out, lc_error *err) {
    if (out)
        *out = NULL;
    uint64_t nbytes;
    LC_TRY(lc_shape_nbytes(dtype, ndim, shape, &nbytes, err));
    if (m->n_tensors >= UINT32_MAX - 1)
        return lc_fail(err, LC_E_OVERFLOW, LC_NO_OFFSET, "too many tensors");
    /* Keep the hash at most half full. */
    if ((m->n_tensors + 1) * 2 > m->index_cap &&
        !rehash(m, m->index_cap ? m->index_cap * 2 : 64))
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory indexing tensors");
    bool found;
    size_t slot = find_slot(m, name, &found);
    if (found) {
        lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET, "duplicate tensor name");
        lc_err_context(err, NULL, name);
        return LC_E_MALFORMED;
    }
    if (!grow((void **)&m->tensors, &m->cap_tensors, m->n_tensors + 1, sizeof *m->tensors))
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory adding a tensor");
    lc_tensor *t = lc_calloc(1, sizeof *t);
    char *nm = lc_strdup(name);
    if (!t || !nm) {
        lc_free(t);
        lc_free(nm);
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory adding a tensor");
    }
    t->name = nm;
    t->dtype = dtype;
    t->ndim = ndim;
    if (ndim)
        memcpy(t->shape, shape, ndim * sizeof *shape);
    t->nbytes = nbytes;
    t->file_offset = LC_NO_OFFSET;
    m->tensors[m->n_tensors++] = t;
    m->index[slot] = (uint32_t)m->n_tensors;
    if (out)
        *out = t;
    return LC_OK;
}

size_t lc_model_tensor_count(const lc_model *m) { return m->n_tensors; }

lc_tensor *lc_model_tensor(const lc_model *m, size_t i) {
    return i < m->n_tensors ? m->tensors[i] : NULL;
}

lc_tensor *lc_model_find_tensor(const lc_model *m, const char *name) {
    if (!m->index_cap)
        return NULL;
    bool found;
    size_t s = find_slot(m, name, &found);
    return found ? m->tensors[m->index[s] - 1] : NULL;
}

static size_t find_meta_slot(const lc_model *m, const char *key, bool *found) {
    size_t mask = m->meta_index_cap - 1, s = (size_t)hash_name(key) & mask;
    for (;; s = (s + 1) & mask) {
        uint32_t v = m->meta_index[s];
        if (v == 0) {
            *found = false;
            return s;
        }
        if (strcmp(m->meta[v - 1].key, key) == 0) {
            *found = true;
            return s;
        }
    }
}

static bool rehash_meta(lc_model *m, size_t cap) {
    uint32_t *idx = lc_calloc(cap, sizeof *idx);
    if (!idx)
        return false;
    lc_free(m->meta_index);
    m->meta_index = idx;
    m->meta_index_cap = cap;
    for (size_t i = 0; i < m->n_meta; i++) {
        bool found;
        size_t s = find_meta_slot(m, m->meta[i].key, &found);
        m->meta_index[s] = (uint32_t)(i + 1);
    }
    return true;
}

static lc_kv *find_kv(const lc_model *m, const char *key) {
    if (!m->meta_index_cap)
        return NULL;
    bool found;
    size_t s = find_meta_slot(m, key, &found);
    return found ? &m->meta[m->meta_index[s] - 1] : NULL;
}

static lc_code put_meta(lc_model *m, const char *key, lc_value *val, bool replace,
                        lc_error *err) {
    lc_code rc = LC_OK;
    lc_kv *kv = find_kv(m, key);
    if (kv) {
        if (!replace) {
            rc = lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET, "duplicate metadata key");
            lc_err_context(err, NULL, key);
            goto done;
        }
        lc_value_clear(&kv->val);
        kv->val = *val;
        memset(val, 0, sizeof *val);
        return LC_OK;
    }
    if (m->n_meta >= UINT32_MAX - 1) {
        rc = lc_fail(err, LC_E_OVERFLOW, LC_NO_OFFSET, "too many metadata keys");
        goto done;
    }
    char *k = NULL;
    if (((m->n_meta + 1) * 2 > m->meta_index_cap &&
         !rehash_meta(m, m->meta_index_cap ? m->meta_index_cap * 2 : 64)) ||
        !grow((void **)&m->meta, &m->cap_meta, m->n_meta + 1, sizeof *m->meta) ||
        !(k = lc_strdup(key))) {
        rc = lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory adding metadata");
        goto done;
    }
    m->meta[m->n_meta].key = k;
    m->meta[m->n_meta].val = *val;
    m->n_meta++;
    bool found;
    m->meta_index[find_meta_slot(m, k, &found)] = (uint32_t)m->n_meta;
    memset(val, 0, sizeof *val);
    return LC_OK;
done:
    lc_value_clear(val);
    return rc;
}

lc_code lc_model_set_meta(lc_model *m, const char *key, lc_value *val, lc_error *err) {
    return put_meta(m, key, val, true, err);
}

lc_code lc_model_add_meta(lc_model *m, const char *key, lc_value *val, lc_error *err) {
    return put_meta(m, key, val, false, err);
}

lc_code lc_model_set_meta_str(lc_model *m, const char *key, const char *s, lc_error *err) {
    lc_value v;
    LC_TRY(lc_value_string(&v, s, strlen(s), err));
    return lc_model_set_meta(m, key, &v, err);
}

size_t lc_model_meta_count(const lc_model *m) { return m->n_meta; }

const lc_kv *lc_model_meta(const lc_model *m, size_t i) {
    return i < m->n_meta ? &m->meta[i] : NULL;
}

const lc_value *lc_model_find_meta(const lc_model *m, const char *key) {
    lc_kv *kv = find_kv(m, key);
    return kv ? &kv->val : NULL;
}

lc_code lc_model_own(lc_model *m, void *res, void (*free_fn)(void *), lc_error *err) {
    if (!grow((void **)&m->owned, &m->cap_owned, m->n_owned + 1, sizeof *m->owned)) {
        free_fn(res);
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    }
    m->owned[m->n_owned].res = res;
    m->owned[m->n_owned].free_fn = free_fn;
    m->n_owned++;
    return LC_OK;
}
