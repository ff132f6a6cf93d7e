/* formats/pth_walk.c: from the pickle tree of a checkpoint to the model's tensors.
 *
 * The tree is inert data (formats/pickle.h): a tensor is a REDUCE node whose
 * callable is one of torch's rebuild functions, a storage a persistent id tuple.
 * This file reads those shapes, never anything else, and checks every offset,
 * size and stride against the storage the tensor views before it may exist:
 *
 *   REDUCE(torch._utils._rebuild_tensor_v2,
 *          ( PERSID(("storage", torch.FloatStorage, "0", "cpu", 12)),  storage
 *            0,                                        offset, elements
 *            (3, 4), (4, 1),                           size, stride (elements)
 *            False, OrderedDict()[, {"neg": True}] ))  requires_grad, hooks, metadata
 *
 * Storage of tensor element i (multi-index i_0..i_n) = offset + sum(i_d * stride_d);
 * a view fits when (offset + sum((size_d - 1) * stride_d) + 1) * element size is at
 * most the storage's bytes. */
#include "formats/pth_walk_impl.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libconvert/alloc.h"
#include "libconvert/bytes.h"
#include "libconvert/hash.h"
#include "libconvert/value.h"

typedef struct walker {
    lc_pth_found *f;
    lc_error     *err;
    uint64_t      stored;                 /* the pickle's bytes in its file */
    uint64_t      visits, max_visits;     /* work budget (pth_walk_impl.h) */
    uint64_t      name_bytes, max_names;  /* name budget */
    char         *name;      /* the dotted path being built */
    size_t        len, cap;
} walker;

/* ---- storage classes and dtypes ---- */

typedef struct named_dtype {
    const char *name;
    lc_dtype    dtype;
} named_dtype;

static const named_dtype storage_classes[] = {
    { "FloatStorage", LC_DT_F32 },  { "DoubleStorage", LC_DT_F64 },
    { "HalfStorage", LC_DT_F16 },   { "BFloat16Storage", LC_DT_BF16 },
    { "LongStorage", LC_DT_I64 },   { "IntStorage", LC_DT_I32 },
    { "ShortStorage", LC_DT_I16 },  { "CharStorage", LC_DT_I8 },
    { "ByteStorage", LC_DT_U8 },    { "BoolStorage", LC_DT_BOOL },
};

/* torch.<name> dtype objects as _rebuild_tensor_v3 names them. */
static const named_dtype torch_dtypes[] = {
    { "float32", LC_DT_F32 },  { "float", LC_DT_F32 },   { "float64", LC_DT_F64 },
    { "double", LC_DT_F64 },   { "float16", LC_DT_F16 }, { "half", LC_DT_F16 },
    { "bfloat16", LC_DT_BF16 }, { "int64", LC_DT_I64 },  { "long", LC_DT_I64 },
    { "int32", LC_DT_I32 },    { "int", LC_DT_I32 },     { "int16", LC_DT_I16 },
    { "short", LC_DT_I16 },    { "int8", LC_DT_I8 },     { "uint8", LC_DT_U8 },
    { "bool", LC_DT_BOOL },    { "float8_e4m3fn", LC_DT_F8_E4M3 },
    { "float8_e5m2", LC_DT_F8_E5M2 }, { "uint16", LC_DT_U16 }, { "uint32", LC_DT_U32 },
    { "uint64", LC_DT_U64 },   { "float8_e8m0fnu", LC_DT_F8_E8M0 },
    { "float8_e4m3fnuz", LC_DT_F8_E4M3FNUZ }, { "float8_e5m2fnuz", LC_DT_F8_E5M2FNUZ },
};

static lc_dtype find_dtype(const named_dtype *tab, size_t n, const char *name) {
    for (size_t i = 0; i < n; i++)
        if (strcmp(tab[i].name, name) == 0)
            return tab[i].dtype;
    return LC_DT_INVALID;
}

/* The storage class's dtype; *untyped for UntypedStorage. */
static lc_code storage_class(walker *w, const lc_pickle_val *cls, lc_dtype *dt, bool *untyped) {
    const char *mod, *name;
    *untyped = false;
    if (!lc_pickle_global(cls, &mod, &name))
        return lc_fail(w->err, LC_E_MALFORMED, lc_pickle_offset(cls),
                       "storage class is a %s, not a global",
                       lc_pickle_kind_name(lc_pickle_kind_of(cls)));
    if (strcmp(name, "UntypedStorage") == 0 &&
        (strcmp(mod, "torch.storage") == 0 || strcmp(mod, "torch") == 0)) {
        *untyped = true;
        *dt = LC_DT_INVALID;
        return LC_OK;
    }
    if (strcmp(mod, "torch") == 0 || strcmp(mod, "torch.cuda") == 0)
        *dt = find_dtype(storage_classes, sizeof storage_classes / sizeof *storage_classes, name);
    else
        *dt = LC_DT_INVALID;
    if (*dt == LC_DT_INVALID)
        return lc_fail(w->err, LC_E_UNSUPPORTED, lc_pickle_offset(cls),
                       "storage class %s.%s is not supported (complex or quantized?)", mod, name);
    return LC_OK;
}

/* ---- the storage table ---- */

/* Storage keys come from the pickle: a keyed hash, so chosen keys cannot collide. */
static uint64_t hash_key(const char *s) { return lc_hash_str(s); }

lc_pth_storage *lc_pth_found_storage(const lc_pth_found *f, const char *key) {
    if (!f->index_cap)
        return NULL;
    for (size_t i = hash_key(key) & (f->index_cap - 1);; i = (i + 1) & (f->index_cap - 1)) {
        if (!f->index[i])
            return NULL;
        lc_pth_storage *s = f->st[f->index[i] - 1];
        if (strcmp(s->key, key) == 0)
            return s;
    }
}

static bool index_put(uint32_t *index, size_t cap, const char *key, uint32_t slot) {
    for (size_t i = hash_key(key) & (cap - 1);; i = (i + 1) & (cap - 1))
        if (!index[i]) {
            index[i] = slot;
            return true;
        }
}

static lc_code add_storage(walker *w, const char *key, lc_dtype dt, uint64_t nbytes,
                           uint64_t at, lc_pth_storage **out) {
    lc_pth_found *f = w->f;
    if (f->n_st >= UINT32_MAX - 1)
        return lc_fail(w->err, LC_E_OVERFLOW, at, "more than %u storages", UINT32_MAX - 2);
    if ((f->n_st + 1) * 2 > f->index_cap) { /* keep the index at most half full */
        size_t cap = f->index_cap ? f->index_cap * 2 : 64;
        uint32_t *idx = lc_calloc(cap, sizeof *idx);
        if (!idx)
            return lc_fail(w->err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
        for (size_t i = 0; i < f->n_st; i++)
            index_put(idx, cap, f->st[i]->key, (uint32_t)i + 1);
        lc_free(f->index);
        f->index = idx;
        f->index_cap = cap;
    }
    if (f->n_st == f->cap_st) {
        size_t cap = f->cap_st ? f->cap_st * 2 : 16;
        lc_pth_storage **st = lc_realloc_array(f->st, cap, sizeof *st);
        if (!st)
            return lc_fail(w->err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
        f->st = st;
        f->cap_st = cap;
    }
    lc_pth_storage *s = lc_calloc(1, sizeof *s);
    if (!s || !(s->key = lc_strdup(key))) {
        lc_free(s);
        return lc_fail(w->err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    }
    s->dtype = dt;
    s->nbytes = nbytes;
    s->at = at;
    s->file_offset = LC_NO_OFFSET;
    s->fd = -1;
    f->st[f->n_st++] = s;
    index_put(f->index, f->index_cap, s->key, (uint32_t)f->n_st);
    *out = s;
    return LC_OK;
}

/* ---- small readers of pickle values ---- */

static lc_code get_u64(walker *w, const lc_pickle_val *v, const char *what, uint64_t *out) {
    int64_t i;
    if (!lc_pickle_get_int(v, &i))
        return lc_fail(w->err, LC_E_MALFORMED, lc_pickle_offset(v), "%s is a %s, not an int",
                       what, lc_pickle_kind_name(lc_pickle_kind_of(v)));
    if (i < 0)
        return lc_fail(w->err, LC_E_MALFORMED, lc_pickle_offset(v), "%s is negative (%" PRId64 ")",
                       what, i);
    *out = (uint64_t)i;
    return LC_OK;
}

/* A size or stride: a tuple of ints, or torch.Size((...)). */
static lc_code get_dims(walker *w, const lc_pickle_val *v, const char *what, uint32_t *ndim,
                        uint64_t *dims) {
    if (lc_pickle_is_call(v, "torch", "Size")) {
        size_t na;
        const lc_pickle_val *const *a = lc_pickle_items(lc_pickle_args(v), LC_PICKLE_TUPLE, &na);
        if (a && na == 1)
            v = a[0];
    }
    size_t n;
    const lc_pickle_val *const *items = lc_pickle_items(v, LC_PICKLE_TUPLE, &n);
    if (!items)
        items = lc_pickle_items(v, LC_PICKLE_LIST, &n);
    if (!items)
        return lc_fail(w->err, LC_E_MALFORMED, lc_pickle_offset(v), "%s is a %s, not a tuple",
                       what, lc_pickle_kind_name(lc_pickle_kind_of(v)));
    if (n > LC_MAX_DIMS)
        return lc_fail(w->err, LC_E_UNSUPPORTED, lc_pickle_offset(v),
                       "%s has %zu dimensions, at most %d are supported", what, n, LC_MAX_DIMS);
    for (size_t i = 0; i < n; i++)
        LC_TRY(get_u64(w, items[i], what, &dims[i]));
    *ndim = (uint32_t)n;
    return LC_OK;
}

/* ---- tensors ---- */

/* The storage a persistent id names: ("storage", class, key, location, numel[, view]). */
static lc_code read_storage(walker *w, const lc_pickle_val *pers, lc_pth_storage **out,
                            bool *untyped) {
    const uint64_t at = lc_pickle_offset(pers);
    const lc_pickle_val *pid = lc_pickle_persid(pers);
    if (!pid)
        return lc_fail(w->err, LC_E_MALFORMED, at, "tensor storage is a %s, not a persistent id",
                       lc_pickle_kind_name(lc_pickle_kind_of(pers)));
    size_t n;
    const lc_pickle_val *const *p = lc_pickle_items(pid, LC_PICKLE_TUPLE, &n);
    if (!p || (n != 5 && n != 6))
        return lc_fail(w->err, LC_E_MALFORMED, at,
                       "persistent id is not a 5- or 6-tuple (%s of %zu items)",
                       lc_pickle_kind_name(lc_pickle_kind_of(pid)), p ? n : 0);
    if (!lc_pickle_str_is(p[0], "storage"))
        return lc_fail(w->err, LC_E_UNSUPPORTED, at, "persistent id of kind %s, not \"storage\"",
                       lc_pickle_str(p[0], NULL) ? lc_pickle_str(p[0], NULL) : "?");
    if (n == 6 && lc_pickle_kind_of(p[5]) != LC_PICKLE_NONE)
        return lc_fail(w->err, LC_E_UNSUPPORTED, lc_pickle_offset(p[5]),
                       "legacy storage views (view metadata) are not supported");
    lc_dtype dt;
    LC_TRY(storage_class(w, p[1], &dt, untyped));
    char keybuf[32];
    size_t klen;
    const char *key = lc_pickle_str(p[2], &klen);
    int64_t ikey;
    if (!key && lc_pickle_get_int(p[2], &ikey)) {
        snprintf(keybuf, sizeof keybuf, "%" PRId64, ikey);
        key = keybuf;
        klen = strlen(key);
    }
    if (!key || klen == 0 || strlen(key) != klen || strchr(key, '/'))
        return lc_fail(w->err, LC_E_MALFORMED, lc_pickle_offset(p[2]),
                       "storage key is not a plain non-empty name");
    uint64_t numel, nbytes;
    LC_TRY(get_u64(w, p[4], "storage size", &numel));
    const uint64_t esize = *untyped ? 1 : lc_dtype_get(dt)->type_size;
    if (lc_mul_u64(numel, esize, &nbytes))
        return lc_fail(w->err, LC_E_OVERFLOW, lc_pickle_offset(p[4]),
                       "storage of %" PRIu64 " elements overflows 64 bits", numel);
    lc_pth_storage *s = lc_pth_found_storage(w->f, key);
    if (s) {
        if (s->dtype != dt || s->nbytes != nbytes)
            return lc_fail(w->err, LC_E_MALFORMED, at,
                           "storage %s is declared as %s of %" PRIu64 " bytes and as %s of %"
                           PRIu64 " bytes", key, lc_dtype_name(s->dtype), s->nbytes,
                           lc_dtype_name(dt), nbytes);
    } else {
        LC_TRY(add_storage(w, key, dt, nbytes, at, &s));
    }
    *out = s;
    return LC_OK;
}

/* metadata {"neg": bool, "conj": bool}: what torch._utils.set_tensor_metadata applies. */
static lc_code read_tensor_meta(walker *w, const lc_pickle_val *md, lc_pth_tensor *t) {
    if (lc_pickle_kind_of(md) == LC_PICKLE_NONE)
        return LC_OK;
    if (lc_pickle_kind_of(md) != LC_PICKLE_DICT)
        return lc_fail(w->err, LC_E_MALFORMED, lc_pickle_offset(md),
                       "tensor metadata is a %s, not a dict",
                       lc_pickle_kind_name(lc_pickle_kind_of(md)));
    for (size_t i = 0; i < lc_pickle_dict_len(md); i++) {
        const lc_pickle_val *k = lc_pickle_dict_key(md, i), *v = lc_pickle_dict_value(md, i);
        const char *ks = lc_pickle_str(k, NULL);
        bool on;
        if (!ks || !lc_pickle_get_bool(v, &on))
            return lc_fail(w->err, LC_E_MALFORMED, lc_pickle_offset(k),
                           "tensor metadata entry is not a str: bool pair");
        if (strcmp(ks, "neg") == 0)
            t->neg = on;
        else if (on)
            return lc_fail(w->err, LC_E_UNSUPPORTED, lc_pickle_offset(k),
                           "tensor metadata \"%s\" is not supported", ks);
    }
    return LC_OK;
}

/* Bytes of storage the view reaches: (offset + sum((size - 1) * stride) + 1) * esize. */
static lc_code check_view(walker *w, const lc_pth_tensor *t) {
    const uint64_t esize = lc_dtype_get(t->dtype)->type_size;
    uint64_t numel = 1, last = t->offset, end;
    for (uint32_t d = 0; d < t->ndim; d++)
        if (lc_mul_u64(numel, t->shape[d], &numel))
            return lc_fail(w->err, LC_E_OVERFLOW, t->at, "tensor shape overflows 64 bits");
    if (numel == 0)
        return LC_OK;
    for (uint32_t d = 0; d < t->ndim; d++) {
        uint64_t step;
        if (lc_mul_u64(t->shape[d] - 1, t->stride[d], &step) || lc_add_u64(last, step, &last))
            return lc_fail(w->err, LC_E_OVERFLOW, t->at, "tensor view overflows 64 bits");
    }
    if (lc_add_u64(last, 1, &end) || lc_mul_u64(end, esize, &end))
        return lc_fail(w->err, LC_E_OVERFLOW, t->at, "tensor view overflows 64 bits");
    if (end > t->st->nbytes)
        return lc_fail(w->err, LC_E_MALFORMED, t->at,
                       "view reaches byte %" PRIu64 " of storage %s, which holds %" PRIu64,
                       end, t->st->key, t->st->nbytes);
    return LC_OK;
}

/* fn(args) with fn one of torch._utils._rebuild_tensor{,_v2,_v3}. */
static lc_code rebuild(walker *w, const char *fn, const lc_pickle_val *args, uint64_t at,
                       lc_pth_tensor *t) {
    size_t n;
    const lc_pickle_val *const *a = lc_pickle_items(args, LC_PICKLE_TUPLE, &n);
    int version = strcmp(fn, "_rebuild_tensor") == 0 ? 1
                : strcmp(fn, "_rebuild_tensor_v2") == 0 ? 2 : 3;
    size_t need = version == 1 ? 4 : version == 2 ? 6 : 7;
    if (!a || n < need || n > need + 1 || (version == 1 && n != 4))
        return lc_fail(w->err, LC_E_MALFORMED, at, "%s called with %zu arguments", fn,
                       a ? n : 0);
    memset(t, 0, sizeof *t);
    t->at = at;
    bool untyped = false;
    LC_TRY(read_storage(w, a[0], &t->st, &untyped));
    LC_TRY(get_u64(w, a[1], "storage offset", &t->offset));
    uint32_t nstride;
    LC_TRY(get_dims(w, a[2], "size", &t->ndim, t->shape));
    LC_TRY(get_dims(w, a[3], "stride", &nstride, t->stride));
    if (nstride != t->ndim)
        return lc_fail(w->err, LC_E_MALFORMED, lc_pickle_offset(a[3]),
                       "%u strides for %u dimensions", nstride, t->ndim);
    t->dtype = t->st->dtype;
    if (version == 3) {
        const char *mod, *name;
        if (!lc_pickle_global(a[6], &mod, &name))
            return lc_fail(w->err, LC_E_MALFORMED, lc_pickle_offset(a[6]),
                           "tensor dtype is a %s, not a global",
                           lc_pickle_kind_name(lc_pickle_kind_of(a[6])));
        lc_dtype dt = strcmp(mod, "torch") == 0
                    ? find_dtype(torch_dtypes, sizeof torch_dtypes / sizeof *torch_dtypes, name)
                    : LC_DT_INVALID;
        if (dt == LC_DT_INVALID)
            return lc_fail(w->err, LC_E_UNSUPPORTED, lc_pickle_offset(a[6]),
                           "dtype %s.%s is not supported", mod, name);
        if (!untyped && dt != t->dtype)
            return lc_fail(w->err, LC_E_MALFORMED, lc_pickle_offset(a[6]),
                           "dtype %s.%s on a %s storage", mod, name, lc_dtype_name(t->dtype));
        t->dtype = dt;
    } else if (untyped) {
        return lc_fail(w->err, LC_E_MALFORMED, at, "%s of an untyped storage has no dtype", fn);
    }
    if (n == need + 1)
        LC_TRY(read_tensor_meta(w, a[need], t));
    if (t->neg && t->dtype == LC_DT_BOOL)
        return lc_fail(w->err, LC_E_MALFORMED, at, "a negated bool tensor");
    return check_view(w, t);
}

static bool is_rebuild_fn(const char *mod, const char *fn) {
    return strcmp(mod, "torch._utils") == 0 &&
           (strcmp(fn, "_rebuild_tensor_v2") == 0 || strcmp(fn, "_rebuild_tensor_v3") == 0 ||
            strcmp(fn, "_rebuild_tensor") == 0);
}

static bool is_param_fn(const char *mod, const char *fn) {
    return strcmp(mod, "torch._utils") == 0 &&
           (strcmp(fn, "_rebuild_parameter") == 0 ||
            strcmp(fn, "_rebuild_parameter_with_state") == 0);
}

static bool is_from_type_fn(const char *mod, const char *fn) {
    return strcmp(mod, "torch._tensor") == 0 && strcmp(fn, "_rebuild_from_type_v2") == 0;
}

/* True when v is a call of any tensor-making function (without checking its args). */
static bool looks_like_tensor(const lc_pickle_val *v) {
    const char *mod, *fn;
    if (lc_pickle_kind_of(v) != LC_PICKLE_REDUCE ||
        !lc_pickle_global(lc_pickle_callable(v), &mod, &fn))
        return false;
    return is_rebuild_fn(mod, fn) || is_param_fn(mod, fn) || is_from_type_fn(mod, fn);
}

/* Reads v as a tensor when it is one (*is); errors only for tensor calls gone wrong. */
static lc_code read_tensor(walker *w, const lc_pickle_val *v, int depth, bool *is,
                           lc_pth_tensor *t) {
    const char *mod, *fn;
    *is = false;
    if (lc_pickle_kind_of(v) != LC_PICKLE_REDUCE ||
        !lc_pickle_global(lc_pickle_callable(v), &mod, &fn))
        return LC_OK;
    const uint64_t at = lc_pickle_offset(v);
    size_t n;
    const lc_pickle_val *const *a = lc_pickle_items(lc_pickle_args(v), LC_PICKLE_TUPLE, &n);
    if (is_rebuild_fn(mod, fn)) {
        *is = true;
        return rebuild(w, fn, lc_pickle_args(v), at, t);
    }
    if (!is_param_fn(mod, fn) && !is_from_type_fn(mod, fn))
        return LC_OK;
    if (depth >= 8)
        return lc_fail(w->err, LC_E_MALFORMED, at, "tensor wrapped %d times", depth);
    if (is_param_fn(mod, fn)) {             /* (tensor, requires_grad, hooks[, state]) */
        if (!a || n < 3 || n > 4)
            return lc_fail(w->err, LC_E_MALFORMED, at, "%s called with %zu arguments", fn,
                           a ? n : 0);
        LC_TRY(read_tensor(w, a[0], depth + 1, is, t));
        if (!*is)
            return lc_fail(w->err, LC_E_MALFORMED, at, "%s of something not a tensor", fn);
        return LC_OK;
    }
    /* _rebuild_from_type_v2(func, type, args, state): the tensor is func(*args). */
    const char *imod, *ifn;
    if (!a || n != 4 || !lc_pickle_global(a[0], &imod, &ifn) || !is_rebuild_fn(imod, ifn))
        return lc_fail(w->err, LC_E_MALFORMED, at,
                       "_rebuild_from_type_v2 without a tensor rebuild function");
    *is = true;
    return rebuild(w, ifn, a[2], at, t);
}

/* ---- the walk ---- */

/* budget = per_byte x stored + base, at most cap. */
static uint64_t budget(uint64_t stored, uint64_t per_byte, uint64_t base, uint64_t cap) {
    uint64_t b;
    if (lc_mul_u64(stored, per_byte, &b) || lc_add_u64(b, base, &b) || b > cap)
        return cap;
    return b;
}

static lc_code visit(walker *w, uint64_t at) {
    if (++w->visits > w->max_visits)
        return lc_fail(w->err, LC_E_OVERFLOW, at,
                       "walking the pickle takes more than %" PRIu64 " steps, its budget (%u "
                       "per stored byte of the pickle: %u x %" PRIu64 " + %u, at most %u): "
                       "values shared through the memo?", w->max_visits, LC_PTH_WORK_PER_BYTE,
                       LC_PTH_WORK_PER_BYTE, w->stored, LC_PTH_WORK_BASE, LC_PTH_MAX_VISITS);
    return LC_OK;
}

/* Charges n bytes of tensor names (a name being built, or one kept). */
static lc_code charge_name(walker *w, uint64_t n, uint64_t at) {
    if (n > w->max_names - w->name_bytes)
        return lc_fail(w->err, LC_E_OVERFLOW, at,
                       "tensor names take more than %" PRIu64 " bytes, their budget (%u per "
                       "stored byte of the pickle: %u x %" PRIu64 " + %u, at most %" PRIu64 ")",
                       w->max_names, LC_PTH_NAME_PER_BYTE, LC_PTH_NAME_PER_BYTE, w->stored,
                       LC_PTH_NAME_BASE, LC_PTH_MAX_NAME_BYTES);
    return LC_OK;
}

/* Appends ".part" (or "part" at the root) to w->name; *saved restores it. A path
 * longer than what is left of the name budget could never be kept: refused before it
 * grows the buffer. */
static lc_code push_name(walker *w, const lc_pickle_val *v, const char *part, size_t plen,
                         size_t *saved) {
    *saved = w->len;
    size_t need = w->len + 1 + plen + 1;
    LC_TRY(charge_name(w, need, lc_pickle_offset(v)));
    if (need > w->cap) {
        size_t cap = w->cap ? w->cap : 64;
        while (cap < need)
            cap *= 2;
        char *p = lc_realloc(w->name, cap);
        if (!p)
            return lc_fail(w->err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
        w->name = p;
        w->cap = cap;
    }
    if (w->len)
        w->name[w->len++] = '.';
    memcpy(w->name + w->len, part, plen);
    w->len += plen;
    w->name[w->len] = '\0';
    return LC_OK;
}

/* A dict key as a name part: str as is, int in decimal; false for other kinds. */
static bool key_text(const lc_pickle_val *k, char *buf, size_t cap, const char **s, size_t *len) {
    int64_t i;
    if ((*s = lc_pickle_str(k, len)))
        return strlen(*s) == *len;
    if (lc_pickle_get_int(k, &i)) {
        snprintf(buf, cap, "%" PRId64, i);
        *s = buf;
        *len = strlen(buf);
        return true;
    }
    return false;
}

static lc_code add_found(walker *w, lc_pth_tensor *t) {
    lc_pth_found *f = w->f;
    if (f->n_t >= LC_PTH_MAX_TENSORS)
        return lc_fail(w->err, LC_E_OVERFLOW, t->at, "more than %u tensors",
                       LC_PTH_MAX_TENSORS);
    if (f->n_t == f->cap_t) {
        size_t cap = f->cap_t ? f->cap_t * 2 : 32;
        lc_pth_packed *nt = lc_realloc_array(f->t, cap, sizeof *nt);
        if (!nt)
            return lc_fail(w->err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
        f->t = nt;
        f->cap_t = cap;
    }
    if (f->cap_dims - f->n_dims < 2 * (size_t)t->ndim) {
        size_t cap = f->cap_dims ? f->cap_dims * 2 : 256;
        uint64_t *nd = lc_realloc_array(f->dims, cap, sizeof *nd);
        if (!nd)
            return lc_fail(w->err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
        f->dims = nd;
        f->cap_dims = cap;
    }
    const char *name = w->len ? w->name : "tensor";
    const uint64_t n = strlen(name) + 1;
    LC_TRY(charge_name(w, n, t->at));
    char *copy = lc_strdup(name);
    if (!copy)
        return lc_fail(w->err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    w->name_bytes += n;
    f->t[f->n_t++] = (lc_pth_packed){ .name = copy, .st = t->st, .offset = t->offset,
                                      .at = t->at, .dims = f->n_dims, .dtype = t->dtype,
                                      .ndim = (uint8_t)t->ndim, .neg = t->neg };
    if (t->ndim) {             /* a scalar has none, and the pool may not exist yet */
        memcpy(f->dims + f->n_dims, t->shape, t->ndim * sizeof *f->dims);
        memcpy(f->dims + f->n_dims + t->ndim, t->stride, t->ndim * sizeof *f->dims);
        f->n_dims += 2 * (size_t)t->ndim;
    }
    return LC_OK;
}

void lc_pth_found_tensor(const lc_pth_found *f, size_t i, lc_pth_tensor *out) {
    const lc_pth_packed *p = &f->t[i];
    *out = (lc_pth_tensor){ .name = p->name, .st = p->st, .dtype = p->dtype, .ndim = p->ndim,
                            .offset = p->offset, .neg = p->neg, .at = p->at };
    if (p->ndim) {
        memcpy(out->shape, f->dims + p->dims, p->ndim * sizeof *f->dims);
        memcpy(out->stride, f->dims + p->dims + p->ndim, p->ndim * sizeof *f->dims);
    }
}

static lc_code walk(walker *w, const lc_pickle_val *v, unsigned depth) {
    LC_TRY(visit(w, lc_pickle_offset(v)));
    if (depth > LC_PTH_MAX_DEPTH)
        return lc_fail(w->err, LC_E_MALFORMED, lc_pickle_offset(v),
                       "objects nested deeper than %u (a cycle?)", LC_PTH_MAX_DEPTH);
    lc_pth_tensor t;
    bool is;
    LC_TRY(read_tensor(w, v, 0, &is, &t));
    if (is)
        return add_found(w, &t);
    size_t n, saved;
    const lc_pickle_val *const *items = lc_pickle_items(v, LC_PICKLE_LIST, &n);
    if (!items)
        items = lc_pickle_items(v, LC_PICKLE_TUPLE, &n);
    if (items) {
        for (size_t i = 0; i < n; i++) {
            char buf[24];
            snprintf(buf, sizeof buf, "%zu", i);
            LC_TRY(push_name(w, items[i], buf, strlen(buf), &saved));
            LC_TRY(walk(w, items[i], depth + 1));
            w->len = saved;
        }
        return LC_OK;
    }
    for (size_t i = 0; i < lc_pickle_dict_len(v); i++) {
        char buf[24];
        const char *s;
        size_t len;
        if (!key_text(lc_pickle_dict_key(v, i), buf, sizeof buf, &s, &len))
            continue; /* tuple or float keys hold no state dict in practice */
        LC_TRY(push_name(w, lc_pickle_dict_value(v, i), s, len, &saved));
        LC_TRY(walk(w, lc_pickle_dict_value(v, i), depth + 1));
        w->len = saved;
    }
    return LC_OK;
}

/* True when some tensor call lies below v (bounded like the walk). */
static lc_code holds_tensors(walker *w, const lc_pickle_val *v, unsigned depth, bool *yes) {
    LC_TRY(visit(w, lc_pickle_offset(v)));
    if (depth > LC_PTH_MAX_DEPTH)
        return lc_fail(w->err, LC_E_MALFORMED, lc_pickle_offset(v),
                       "objects nested deeper than %u (a cycle?)", LC_PTH_MAX_DEPTH);
    if (looks_like_tensor(v)) {
        *yes = true;
        return LC_OK;
    }
    size_t n;
    const lc_pickle_val *const *items = lc_pickle_items(v, LC_PICKLE_LIST, &n);
    if (!items)
        items = lc_pickle_items(v, LC_PICKLE_TUPLE, &n);
    for (size_t i = 0; items && i < n && !*yes; i++)
        LC_TRY(holds_tensors(w, items[i], depth + 1, yes));
    for (size_t i = 0; i < lc_pickle_dict_len(v) && !*yes; i++)
        LC_TRY(holds_tensors(w, lc_pickle_dict_value(v, i), depth + 1, yes));
    return LC_OK;
}

/* The entry under dict key `part` (str, or int written in decimal), or SIZE_MAX. */
static size_t dict_index(const lc_pickle_val *d, const char *part, size_t plen) {
    for (size_t i = 0; i < lc_pickle_dict_len(d); i++) {
        char buf[24];
        const char *s;
        size_t len;
        if (key_text(lc_pickle_dict_key(d, i), buf, sizeof buf, &s, &len) && len == plen &&
            memcmp(s, part, plen) == 0)
            return i;
    }
    return SIZE_MAX;
}

/* The value under dict key `part`, or NULL. */
static const lc_pickle_val *dict_lookup(const lc_pickle_val *d, const char *part, size_t plen) {
    return lc_pickle_dict_value(d, dict_index(d, part, plen));
}

static lc_code choose_by_key(walker *w, const lc_pickle_val *root, const char *key,
                             const lc_pickle_val **out) {
    const lc_pickle_val *v = root;
    const char *p = key;
    while (*p) {
        const char *dot = strchr(p, '.');
        size_t plen = dot ? (size_t)(dot - p) : strlen(p);
        const lc_pickle_val *next = dict_lookup(v, p, plen);
        if (!next)
            return lc_fail(w->err, LC_E_NOTFOUND, lc_pickle_offset(v),
                           "key \"%.*s\" of --key %s is not in the checkpoint", (int)plen, p, key);
        v = next;
        p += plen + (dot != NULL);
    }
    *out = v;
    return LC_OK;
}

/* Counts the tensor calls below v, each time it is reached (bounded like the walk). */
static lc_code count_tensors(walker *w, const lc_pickle_val *v, unsigned depth, size_t *n) {
    LC_TRY(visit(w, lc_pickle_offset(v)));
    if (depth > LC_PTH_MAX_DEPTH)
        return lc_fail(w->err, LC_E_MALFORMED, lc_pickle_offset(v),
                       "objects nested deeper than %u (a cycle?)", LC_PTH_MAX_DEPTH);
    if (looks_like_tensor(v)) {
        (*n)++;
        return LC_OK;
    }
    size_t k;
    const lc_pickle_val *const *items = lc_pickle_items(v, LC_PICKLE_LIST, &k);
    if (!items)
        items = lc_pickle_items(v, LC_PICKLE_TUPLE, &k);
    for (size_t i = 0; items && i < k; i++)
        LC_TRY(count_tensors(w, items[i], depth + 1, n));
    for (size_t i = 0; i < lc_pickle_dict_len(v); i++)
        LC_TRY(count_tensors(w, lc_pickle_dict_value(v, i), depth + 1, n));
    return LC_OK;
}

/* The chosen entry `pick` of root holds the state dict: records in f->note how many
 * tensors the other entries hold (left out) and under which key, when any. */
static lc_code note_left_out(walker *w, const lc_pickle_val *root, size_t pick) {
    size_t total = 0, keys = 0, first = 0;
    for (size_t i = 0; i < lc_pickle_dict_len(root); i++) {
        size_t n = 0;
        if (i != pick)
            LC_TRY(count_tensors(w, lc_pickle_dict_value(root, i), 1, &n));
        if (n && !keys++)
            first = i;
        total += n;
    }
    if (!total)
        return LC_OK;
    char kb[2][24];
    const char *ks[2];
    size_t kl[2];
    const lc_pickle_val *kv[2] = { lc_pickle_dict_key(root, pick),
                                   lc_pickle_dict_key(root, first) };
    for (int j = 0; j < 2; j++)
        if (!key_text(kv[j], kb[j], sizeof kb[j], &ks[j], &kl[j]))
            ks[j] = "?", kl[j] = 1;
    lc_error *note = &w->f->note;
    note->offset = lc_pickle_offset(lc_pickle_dict_value(root, pick));
    snprintf(note->msg, sizeof note->msg,
             "took the tensors under \"%.*s\", as for a training checkpoint, and left out "
             "%zu tensor%s beside it (under \"%.*s\"%s); --key . keeps every tensor",
             (int)(kl[0] > 48 ? 48 : kl[0]), ks[0], total, total == 1 ? "" : "s",
             (int)(kl[1] > 48 ? 48 : kl[1]), ks[1], keys > 1 ? " and more" : "");
    return LC_OK;
}

/* The automatic choice documented at lc_pth_opts.key.
 *
 * What a torch user means by the tensors of a checkpoint: a state dict saved alone is
 * the root; a training checkpoint ({"epoch": 5, "model": {...}, "optimizer": {...}})
 * keeps the weights under a conventional key, which transformers and safetensors'
 * convert script take the same way (the optimizer's moments are not weights), and the
 * tensors left beside it are named in f->note so that the caller can say so. Without
 * such a key, one dict holding every tensor of the object is the state dict wrapped
 * with scalars ({"epoch": 5, "weights": {...}}); but when tensors lie anywhere else
 * too, no part of the object is the state dict, so the root is taken and every tensor
 * kept, named by its full path ("a.b", "a.c"): nothing is dropped without a word, and
 * two paths that flatten to one name are refused as a duplicate by pth_commit.c. */
static lc_code choose_auto(walker *w, const lc_pickle_val *root, const lc_pickle_val **out) {
    static const char *const known[] = { "state_dict", "model_state_dict", "model", "module",
                                         "net", "params" };
    size_t n = lc_pickle_dict_len(root);
    *out = root;
    if (lc_pickle_kind_of(root) != LC_PICKLE_DICT)
        return LC_OK;
    bool all = n > 0;
    for (size_t i = 0; i < n && all; i++)
        all = looks_like_tensor(lc_pickle_dict_value(root, i));
    if (all)
        return LC_OK;
    for (size_t k = 0; k < sizeof known / sizeof *known; k++) {
        const size_t i = dict_index(root, known[k], strlen(known[k]));
        const lc_pickle_val *v = lc_pickle_dict_value(root, i);   /* NULL when absent */
        bool yes = false;
        if (v && lc_pickle_kind_of(v) == LC_PICKLE_DICT)
            LC_TRY(holds_tensors(w, v, 1, &yes));
        if (yes) {
            *out = v;
            return note_left_out(w, root, i);
        }
    }
    const lc_pickle_val *only = NULL;
    size_t holders = 0;
    for (size_t i = 0; i < n; i++) {
        const lc_pickle_val *v = lc_pickle_dict_value(root, i);
        bool yes = false;
        LC_TRY(holds_tensors(w, v, 1, &yes));
        if (yes) {
            only = v;
            holders++;
        }
    }
    if (holders == 1 && lc_pickle_kind_of(only) == LC_PICKLE_DICT)
        *out = only;
    return LC_OK;
}

/* Top-level scalars of a nested checkpoint ("epoch": 5) become metadata. */
static lc_code root_scalars(walker *w, const lc_pickle_val *root, lc_model *m) {
    for (size_t i = 0; i < lc_pickle_dict_len(root); i++) {
        const lc_pickle_val *k = lc_pickle_dict_key(root, i), *v = lc_pickle_dict_value(root, i);
        size_t klen;
        const char *ks = lc_pickle_str(k, &klen);
        if (!ks || strlen(ks) != klen || klen == 0)
            continue;
        lc_value val;
        int64_t iv;
        double fv;
        bool bv;
        size_t slen;
        const char *sv;
        if (lc_pickle_get_bool(v, &bv))
            val = lc_value_bool(bv);
        else if (lc_pickle_get_int(v, &iv))
            val = lc_value_int(LC_VT_I64, iv);
        else if (lc_pickle_get_float(v, &fv))
            val = lc_value_float(LC_VT_F64, fv);
        else if ((sv = lc_pickle_str(v, &slen)))
            LC_TRY(lc_value_string(&val, sv, slen, w->err));
        else
            continue;
        LC_TRY(lc_model_set_meta(m, ks, &val, w->err));
    }
    return LC_OK;
}

lc_code lc_pth_walk(const lc_pickle_val *root, uint64_t stored_bytes, const lc_pth_opts *o,
                    lc_pth_found *f, lc_model *m, lc_error *err) {
    walker w = { .f = f, .err = err, .stored = stored_bytes };
    w.max_visits = budget(stored_bytes, LC_PTH_WORK_PER_BYTE, LC_PTH_WORK_BASE,
                          LC_PTH_MAX_VISITS);
    w.max_names = budget(stored_bytes, LC_PTH_NAME_PER_BYTE, LC_PTH_NAME_BASE,
                         LC_PTH_MAX_NAME_BYTES);
    const bool by_key = o && o->key && o->key[0];
    const lc_pickle_val *top = root;
    lc_code rc;
    if (by_key && strcmp(o->key, ".") == 0)
        rc = LC_OK;                       /* "." is the whole object */
    else if (by_key)
        rc = choose_by_key(&w, root, o->key, &top);
    else
        rc = choose_auto(&w, root, &top);
    if (rc == LC_OK && top != root)
        rc = root_scalars(&w, root, m);
    if (rc == LC_OK)
        rc = walk(&w, top, 0);   /* the same budget as the choice: one walk's work */
    /* An object without tensors converts to nothing: say so instead of writing an
     * empty file. */
    if (rc == LC_OK && f->n_t == 0 && by_key)
        rc = lc_fail(err, LC_E_NOTFOUND, lc_pickle_offset(top),
                     "no tensors found under --key %s (an object of kind %s)", o->key,
                     lc_pickle_kind_name(lc_pickle_kind_of(top)));
    else if (rc == LC_OK && f->n_t == 0)
        rc = lc_fail(err, LC_E_NOTFOUND, lc_pickle_offset(root),
                     "no tensors found in the pickle (its object is of kind %s)",
                     lc_pickle_kind_name(lc_pickle_kind_of(root)));
    lc_free(w.name);
    return rc;
}

void lc_pth_found_free(lc_pth_found *f) {
    if (!f)
        return;
    for (size_t i = 0; i < f->n_st; i++) {
        if (f->st[i])
            lc_free(f->st[i]->key);
        lc_free(f->st[i]);
    }
    for (size_t i = 0; i < f->n_t; i++)
        lc_free(f->t[i].name);
    lc_free(f->st);
    lc_free(f->index);
    lc_free(f->t);
    lc_free(f->dims);
    memset(f, 0, sizeof *f);
}
