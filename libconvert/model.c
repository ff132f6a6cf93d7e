/* libconvert/model.c: the model container.
 * Tensors are kept as an array of pointers so that pointers handed out stay valid as
 * the model grows; names are indexed by an open-addressing table over a keyed hash so
 * that duplicate detection stays linear for checkpoints with hundreds of thousands of
 * tensors, whatever names a file chose. */
#include "libconvert/model.h"

#include <string.h>

#include "libconvert/alloc.h"
#include "libconvert/hash.h"

typedef struct owned {
    void *res;
    void (*free_fn)(void *);
} owned;

/* Open addressing over names read from files, so the hash is keyed (libconvert/hash.h):
 * chosen names cannot pile into one cluster. A slot holds the 32 hash bits that pick
 * its bucket (so growing never hashes a name again, and most probes skip strcmp) and
 * the item number + 1; 0 is an empty slot. Kept at most half full. */
typedef struct name_index {
    uint64_t *slot;
    size_t    cap;  /* power of two, or 0 */
} name_index;

static uint64_t slot_make(uint32_t h, size_t item) { return (uint64_t)h << 32 | (item + 1); }
static uint32_t slot_hash(uint64_t s) { return (uint32_t)(s >> 32); }
static size_t   slot_item(uint64_t s) { return (size_t)(uint32_t)s - 1; }

struct lc_model {
    lc_tensor **tensors;
    size_t      n_tensors, cap_tensors;
    name_index  index;      /* tensor names */
    lc_kv      *meta;
    size_t      n_meta, cap_meta;
    name_index  meta_index; /* metadata keys: a hostile header may carry millions */
    owned      *owned;
    size_t      n_owned, cap_owned;
    lc_warning *warn;
    size_t      n_warn, cap_warn, dropped_warn;
    bool        refusal_kept;
};

static const char *tensor_name(const lc_model *m, size_t i) { return m->tensors[i]->name; }
static const char *meta_key(const lc_model *m, size_t i) { return m->meta[i].key; }

/* The slot holding NAME (*found) or the empty slot where it would go. */
static size_t index_find(const lc_model *m, const name_index *ix,
                         const char *(*name_of)(const lc_model *, size_t), const char *name,
                         uint32_t h, bool *found) {
    const size_t mask = ix->cap - 1;
    for (size_t s = h & mask;; s = (s + 1) & mask) {
        const uint64_t v = ix->slot[s];
        if (v == 0) {
            *found = false;
            return s;
        }
        if (slot_hash(v) == h && strcmp(name_of(m, slot_item(v)), name) == 0) {
            *found = true;
            return s;
        }
    }
}

/* Makes room for one more item; false when out of memory. */
static bool index_reserve(name_index *ix, size_t n_items) {
    if ((n_items + 1) * 2 <= ix->cap)
        return true;
    const size_t cap = ix->cap ? ix->cap * 2 : 64;
    uint64_t *slot = lc_calloc(cap, sizeof *slot);
    if (!slot)
        return false;
    for (size_t i = 0; i < ix->cap; i++) {
        const uint64_t v = ix->slot[i];
        if (v == 0)
            continue;
        size_t s = slot_hash(v) & (cap - 1);
        while (slot[s])
            s = (s + 1) & (cap - 1);
        slot[s] = v;
    }
    lc_free(ix->slot);
    ix->slot = slot;
    ix->cap = cap;
    return true;
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
    lc_free(m->index.slot);
    for (size_t i = 0; i < m->n_meta; i++) {
        lc_free(m->meta[i].key);
        lc_value_clear(&m->meta[i].val);
    }
    lc_free(m->meta);
    lc_free(m->meta_index.slot);
    for (size_t i = m->n_owned; i-- > 0;)
        m->owned[i].free_fn(m->owned[i].res);
    lc_free(m->owned);
    lc_free(m->warn);
    lc_free(m);
}

lc_code lc_model_add_tensor(lc_model *m, const char *name, lc_dtype dtype, uint32_t ndim,
                            const uint64_t *shape, lc_tensor **out, lc_error *err) {
    if (out)
        *out = NULL;
    uint64_t nbytes;
    LC_TRY(lc_shape_nbytes(dtype, ndim, shape, &nbytes, err));
    if (m->n_tensors >= UINT32_MAX - 1)
        return lc_fail(err, LC_E_OVERFLOW, LC_NO_OFFSET, "too many tensors");
    if (!index_reserve(&m->index, m->n_tensors))
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory indexing tensors");
    const uint32_t h = (uint32_t)lc_hash_str(name);
    bool found;
    size_t slot = index_find(m, &m->index, tensor_name, name, h, &found);
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
    m->index.slot[slot] = slot_make(h, m->n_tensors);
    m->tensors[m->n_tensors++] = t;
    if (out)
        *out = t;
    return LC_OK;
}

size_t lc_model_tensor_count(const lc_model *m) { return m->n_tensors; }

lc_tensor *lc_model_tensor(const lc_model *m, size_t i) {
    return i < m->n_tensors ? m->tensors[i] : NULL;
}

lc_tensor *lc_model_find_tensor(const lc_model *m, const char *name) {
    if (!m->index.cap)
        return NULL;
    bool found;
    size_t s = index_find(m, &m->index, tensor_name, name, (uint32_t)lc_hash_str(name), &found);
    return found ? m->tensors[slot_item(m->index.slot[s])] : NULL;
}

static lc_kv *find_kv(const lc_model *m, const char *key, uint32_t h) {
    if (!m->meta_index.cap)
        return NULL;
    bool found;
    size_t s = index_find(m, &m->meta_index, meta_key, key, h, &found);
    return found ? &m->meta[slot_item(m->meta_index.slot[s])] : NULL;
}

static lc_code put_meta(lc_model *m, const char *key, lc_value *val, bool replace,
                        lc_error *err) {
    lc_code rc = LC_OK;
    const uint32_t h = (uint32_t)lc_hash_str(key);
    lc_kv *kv = find_kv(m, key, h);
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
    if (!index_reserve(&m->meta_index, m->n_meta) ||
        !grow((void **)&m->meta, &m->cap_meta, m->n_meta + 1, sizeof *m->meta) ||
        !(k = lc_strdup(key))) {
        rc = lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory adding metadata");
        goto done;
    }
    bool found;
    const size_t slot = index_find(m, &m->meta_index, meta_key, k, h, &found);
    m->meta_index.slot[slot] = slot_make(h, m->n_meta);
    m->meta[m->n_meta].key = k;
    m->meta[m->n_meta].val = *val;
    m->n_meta++;
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

lc_code lc_model_rename_meta(lc_model *m, size_t i, const char *key, lc_error *err) {
    if (find_kv(m, key, (uint32_t)lc_hash_str(key))) {
        lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET, "duplicate metadata key");
        lc_err_context(err, NULL, key);
        return LC_E_MALFORMED;
    }
    char *k = lc_strdup(key);
    if (!k)
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory renaming metadata");
    lc_free(m->meta[i].key);
    m->meta[i].key = k;
    /* The index is rebuilt rather than edited: a rename is rare, and linear probing has
     * no simple delete. */
    memset(m->meta_index.slot, 0, m->meta_index.cap * sizeof *m->meta_index.slot);
    for (size_t j = 0; j < m->n_meta; j++) {
        const uint32_t h = (uint32_t)lc_hash_str(m->meta[j].key);
        bool found;
        const size_t s = index_find(m, &m->meta_index, meta_key, m->meta[j].key, h, &found);
        m->meta_index.slot[s] = slot_make(h, j);
    }
    return LC_OK;
}

size_t lc_model_meta_count(const lc_model *m) { return m->n_meta; }

void lc_model_take_meta(lc_model *m, size_t i, lc_value *out) {
    *out = m->meta[i].val;
    m->meta[i].val = lc_value_uint(LC_VT_U8, 0);
}

const lc_kv *lc_model_meta(const lc_model *m, size_t i) {
    return i < m->n_meta ? &m->meta[i] : NULL;
}

const lc_value *lc_model_find_meta(const lc_model *m, const char *key) {
    lc_kv *kv = find_kv(m, key, (uint32_t)lc_hash_str(key));
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

lc_code lc_model_warn(lc_model *m, const char *rule, bool refused, const lc_error *e,
                      lc_error *err) {
    const bool first_refusal = refused && !m->refusal_kept;
    if (m->n_warn >= LC_MODEL_MAX_WARNINGS && !first_refusal) {
        m->dropped_warn++;
        return LC_OK;
    }
    if (!grow((void **)&m->warn, &m->cap_warn, m->n_warn + 1, sizeof *m->warn)) {
        lc_fail(err, LC_E_NOMEM, e->offset, "out of memory recording a warning");
        lc_err_context(err, NULL, rule);
        return LC_E_NOMEM;
    }
    lc_warning *w = &m->warn[m->n_warn++];
    w->rule = rule;
    w->refused = refused;
    w->e = *e;
    w->e.path[0] = '\0';
    m->refusal_kept |= refused;
    return LC_OK;
}

size_t lc_model_warning_count(const lc_model *m) { return m->n_warn; }
size_t lc_model_warnings_dropped(const lc_model *m) { return m->dropped_warn; }

const lc_warning *lc_model_warning(const lc_model *m, size_t i) {
    return i < m->n_warn ? &m->warn[i] : NULL;
}

const lc_warning *lc_model_first_refusal(const lc_model *m) {
    for (size_t i = 0; i < m->n_warn; i++)
        if (m->warn[i].refused)
            return &m->warn[i];
    return NULL;
}
