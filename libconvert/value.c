/* libconvert/value.c: typed metadata values. */
#include "libconvert/value.h"

#include <string.h>

#include "libconvert/alloc.h"

const char *lc_vtype_name(lc_vtype t) {
    static const char *const names[LC_VT_COUNT] = {
        "u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "string", "array", "u64", "i64", "f64",
    };
    return (unsigned)t < LC_VT_COUNT ? names[t] : "?";
}

size_t lc_vtype_size(lc_vtype t) {
    static const size_t sizes[LC_VT_COUNT] = { 1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8 };
    return (unsigned)t < LC_VT_COUNT ? sizes[t] : 0;
}

lc_value lc_value_uint(lc_vtype t, uint64_t u) {
    lc_value v;
    memset(&v, 0, sizeof v);
    v.type = t;
    v.u = u;
    return v;
}

lc_value lc_value_int(lc_vtype t, int64_t i) {
    lc_value v;
    memset(&v, 0, sizeof v);
    v.type = t;
    v.i = i;
    return v;
}

lc_value lc_value_float(lc_vtype t, double f) {
    lc_value v;
    memset(&v, 0, sizeof v);
    v.type = t;
    v.f = f;
    return v;
}

lc_value lc_value_bool(bool b) {
    lc_value v;
    memset(&v, 0, sizeof v);
    v.type = LC_VT_BOOL;
    v.b = b;
    return v;
}

lc_code lc_value_string(lc_value *v, const char *s, size_t len, lc_error *err) {
    char *p = lc_strndup(s, len);
    if (!p)
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory for a %zu-byte string", len);
    memset(v, 0, sizeof *v);
    v->type = LC_VT_STRING;
    v->str.ptr = p;
    v->str.len = len;
    return LC_OK;
}

lc_code lc_value_array(lc_value *v, lc_vtype elem, uint64_t count, lc_error *err) {
    if (count > SIZE_MAX / sizeof(lc_value))
        return lc_fail(err, LC_E_OVERFLOW, LC_NO_OFFSET, "array of %llu items is too large",
                       (unsigned long long)count);
    lc_value *items = lc_calloc((size_t)count, sizeof *items);
    if (!items)
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory for an array of %llu items",
                       (unsigned long long)count);
    for (uint64_t k = 0; k < count; k++)
        items[k].type = elem;
    memset(v, 0, sizeof *v);
    v->type = LC_VT_ARRAY;
    v->arr.elem = elem;
    v->arr.count = count;
    v->arr.items = items;
    return LC_OK;
}

lc_code lc_value_copy(lc_value *dst, const lc_value *src, lc_error *err) {
    if (src->type == LC_VT_STRING)
        return lc_value_string(dst, src->str.ptr, (size_t)src->str.len, err);
    if (src->type != LC_VT_ARRAY) {
        *dst = *src;
        return LC_OK;
    }
    lc_value out;
    LC_TRY(lc_value_array(&out, src->arr.elem, src->arr.count, err));
    for (uint64_t k = 0; k < src->arr.count; k++) {
        lc_code rc = lc_value_copy(&out.arr.items[k], &src->arr.items[k], err);
        if (rc != LC_OK) {
            out.arr.count = k; /* only the copied items own anything */
            lc_value_clear(&out);
            return rc;
        }
    }
    *dst = out;
    return LC_OK;
}

void lc_value_clear(lc_value *v) {
    if (!v)
        return;
    if (v->type == LC_VT_STRING) {
        lc_free(v->str.ptr);
    } else if (v->type == LC_VT_ARRAY) {
        for (uint64_t k = 0; k < v->arr.count; k++)
            lc_value_clear(&v->arr.items[k]);
        lc_free(v->arr.items);
    }
    memset(v, 0, sizeof *v);
}
