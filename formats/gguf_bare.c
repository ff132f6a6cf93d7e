/* formats/gguf_bare.c: widening into GGUF's dtypes and narrowing back (see the header).
 * The widenings are all lossless, so the narrowing cast on the way out gives back the
 * original bytes; only U64 values of 2^63 and more do not fit I64 and fail. */
#include "formats/gguf_bare.h"

#include <string.h>

#include "libconvert/alloc.h"
#include "libconvert/convert.h"

static const size_t PREFIX_LEN = sizeof LC_GGUF_BARE_DTYPE_PREFIX - 1;

lc_dtype lc_gguf_bare_carrier(lc_dtype dt) {
    switch (dt) {
    case LC_DT_BOOL:    return LC_DT_I8;
    case LC_DT_U8:      return LC_DT_I16;
    case LC_DT_U16:     return LC_DT_I32;
    case LC_DT_U32:     return LC_DT_I64;
    case LC_DT_U64:     return LC_DT_I64;
    case LC_DT_F8_E4M3: return LC_DT_F16;
    case LC_DT_F8_E5M2: return LC_DT_F16;
    case LC_DT_F8_E4M3FNUZ: return LC_DT_F16;
    case LC_DT_F8_E5M2FNUZ: return LC_DT_F16;
    default:
        return lc_dtype_get(dt)->gguf_id >= 0 ? dt : LC_DT_INVALID;
    }
}

static bool has_prefix(const char *key) {
    return strncmp(key, LC_GGUF_BARE_DTYPE_PREFIX, PREFIX_LEN) == 0;
}

/* PREFIX + name in a new string; NULL when out of memory. */
static char *dtype_key(const char *name) {
    size_t n = strlen(name);
    char *k = lc_malloc(PREFIX_LEN + n + 1);
    if (k) {
        memcpy(k, LC_GGUF_BARE_DTYPE_PREFIX, PREFIX_LEN);
        memcpy(k + PREFIX_LEN, name, n + 1);
    }
    return k;
}

lc_code lc_gguf_bare_encode(lc_model *m, lc_error *err) {
    for (size_t i = 0; i < lc_model_meta_count(m); i++) {
        const char *key = lc_model_meta(m, i)->key;
        if (has_prefix(key) || strcmp(key, LC_GGUF_BARE_ARCH_KEY) == 0) {
            lc_fail(err, LC_E_UNSUPPORTED, LC_NO_OFFSET,
                    "metadata key uses a name reserved for what a container records");
            lc_err_context(err, NULL, key);
            return LC_E_UNSUPPORTED;
        }
    }
    for (size_t i = 0; i < lc_model_meta_count(m); i++)
        if (strcmp(lc_model_meta(m, i)->key, "general.architecture") == 0)
            LC_TRY(lc_model_rename_meta(m, i, LC_GGUF_BARE_ARCH_KEY, err));
    for (size_t i = 0; i < lc_model_tensor_count(m); i++) {
        lc_tensor *t = lc_model_tensor(m, i);
        const lc_dtype to = lc_gguf_bare_carrier(t->dtype);
        if (to == t->dtype || to == LC_DT_INVALID)
            continue; /* the GGUF writer names a dtype it cannot carry */
        const lc_dtype from = t->dtype;
        char *key = dtype_key(t->name);
        if (!key)
            return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
        lc_code rc = lc_model_set_meta_str(m, key, lc_dtype_name(from), err);
        lc_free(key);
        if (rc == LC_OK)
            rc = lc_tensor_cast(t, to, err);
        if (rc != LC_OK) {
            lc_err_context(err, NULL, t->name);
            return rc;
        }
    }
    return LC_OK;
}

/* ---- decode: a new model whose tensors forward to the old one's ---- */

static lc_code forward_read(void *ctx, const lc_tensor *t, uint64_t off, void *dst, size_t len,
                            lc_error *err) {
    (void)t;
    return lc_tensor_read((const lc_tensor *)ctx, off, dst, len, err);
}
static const lc_source_ops forward_ops = { forward_read, NULL };

static void free_model(void *m) { lc_model_free(m); }

/* The recorded dtype for tensor t, or t's own; LC_E_MALFORMED for a bad record. */
static lc_code recorded(const lc_model *m, const lc_tensor *t, lc_dtype *dt, lc_error *err) {
    char *key = dtype_key(t->name);
    if (!key)
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    const lc_value *v = lc_model_find_meta(m, key);
    lc_code rc = LC_OK;
    *dt = t->dtype;
    if (v) {
        lc_dtype want = v->type == LC_VT_STRING ? lc_dtype_from_name(v->str.ptr) : LC_DT_INVALID;
        if (want == LC_DT_INVALID || lc_gguf_bare_carrier(want) != t->dtype)
            rc = lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET,
                         "recorded dtype is not one that %s carries", lc_dtype_name(t->dtype));
        else
            *dt = want;
    }
    if (rc != LC_OK)
        lc_err_context(err, NULL, key);
    lc_free(key);
    return rc;
}

lc_code lc_gguf_bare_decode(lc_model *m, lc_model **out, lc_error *err) {
    lc_code rc = LC_OK;
    *out = NULL;
    lc_model *n = lc_model_new();
    if (!n) {
        lc_model_free(m);
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    }
    if ((rc = lc_model_own(n, m, free_model, err)) != LC_OK)   /* frees m on failure */
        goto done;
    for (size_t i = 0; i < lc_model_meta_count(m); i++) {
        const lc_kv *kv = lc_model_meta(m, i);
        if (has_prefix(kv->key)) {
            if (!lc_model_find_tensor(m, kv->key + PREFIX_LEN)) {
                rc = lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET, "recorded dtype for a tensor "
                             "that is not in the file");
                lc_err_context(err, NULL, kv->key);
                goto done;
            }
            continue;
        }
        lc_value v;
        lc_model_take_meta(m, i, &v);   /* m is consumed: a long array is moved, not copied */
        const char *key = strcmp(kv->key, LC_GGUF_BARE_ARCH_KEY) == 0 ? "general.architecture"
                                                                       : kv->key;
        if ((rc = lc_model_add_meta(n, key, &v, err)) != LC_OK)
            goto done;
    }
    for (size_t i = 0; i < lc_model_tensor_count(m); i++) {
        lc_tensor *src = lc_model_tensor(m, i), *t;
        lc_dtype dt = src->dtype;
        if ((rc = recorded(m, src, &dt, err)) != LC_OK ||
            (rc = lc_model_add_tensor(n, src->name, src->dtype, src->ndim, src->shape, &t,
                                      err)) != LC_OK)
            goto done;
        t->data = src->data;           /* zero-copy views stay views */
        t->file_offset = src->file_offset;
        if (src->data && src->ops && !src->ops->free) {
            t->ops = src->ops;         /* e.g. lc_map_view_ops: keeps the file range */
            t->ctx = src->ctx;
        } else if (!src->data) {
            t->ops = &forward_ops;
            t->ctx = src;
        }
        if ((rc = lc_tensor_cast(t, dt, err)) != LC_OK) {
            lc_err_context(err, NULL, t->name);
            goto done;
        }
    }
    *out = n;
    n = NULL;
done:
    lc_model_free(n);
    return rc;
}
