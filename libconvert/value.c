/* libconvert/value.c: typed metadata values, arrays packed (see value.h).
 *
 * arr.packed by element type:
 *   scalar  count * size bytes, little-endian; inline in packed.inl when they fit
 *           in 8 bytes (an array of arrays of one or two items then costs no
 *           allocation per item), else a buffer at packed.ptr;
 *   string  packed.ptr -> | u64 cap | u64 end[count] | text[cap] |: string k is
 *           text[end[k-1] .. end[k] - 1) followed by its NUL (end[-1] = 0); end[k]
 *           is 0 while string k is unset, which reads as "". Filled in index order,
 *           so the texts lie in order; cap counts the NULs too;
 *   array   packed.ptr -> lc_value[count].
 * An array of 0 items holds no buffer (packed.ptr NULL). */
#include "libconvert/value.h"

#include <inttypes.h>
#include <string.h>

#include "libconvert/alloc.h"
#include "libconvert/bytes.h"

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

/* ---- the packed layouts ---- */

static bool is_scalar(lc_vtype t) { return lc_vtype_size(t) != 0; }

static bool is_array_of(const lc_value *a, lc_vtype elem) {
    return a && a->type == LC_VT_ARRAY && a->arr.elem == elem;
}

/* Scalar items (only): inline when they fit in packed.inl. */
static bool scalars_inline(const lc_value *a) {
    return a->arr.count <= sizeof a->arr.packed.inl / lc_vtype_size(a->arr.elem);
}

static const uint8_t *scalars(const lc_value *a) {
    return scalars_inline(a) ? a->arr.packed.inl : a->arr.packed.ptr;
}

static uint64_t *str_ends(const lc_value *a) { return (uint64_t *)a->arr.packed.ptr + 1; }
static uint64_t  str_cap(const lc_value *a) { return *(const uint64_t *)a->arr.packed.ptr; }
static char     *str_text(const lc_value *a) { return (char *)(str_ends(a) + a->arr.count); }

/* Bytes of a string array's buffer; 0 when it has none. */
static size_t str_block_size(const lc_value *a) {
    return a->arr.packed.ptr ? (size_t)(8 + 8 * a->arr.count + str_cap(a)) : 0;
}

static lc_value *items(const lc_value *a) { return a->arr.packed.ptr; }

static lc_value empty_array(lc_vtype elem, uint64_t count) {
    lc_value v;
    memset(&v, 0, sizeof v);
    v.type = LC_VT_ARRAY;
    v.arr.elem = elem;
    v.arr.count = count;
    return v;
}

static lc_code too_large(lc_error *err, lc_vtype elem, uint64_t count) {
    return lc_fail(err, LC_E_OVERFLOW, LC_NO_OFFSET, "array of %" PRIu64 " %s items is too large",
                   count, lc_vtype_name(elem));
}

static lc_code no_memory(lc_error *err, lc_vtype elem, uint64_t count) {
    return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory for an array of %" PRIu64
                   " %s items", count, lc_vtype_name(elem));
}

lc_code lc_value_string_array(lc_value *v, uint64_t count, uint64_t bytes, lc_error *err) {
    lc_value out = empty_array(LC_VT_STRING, count);
    if (count) {
        uint64_t cap, size;
        if (count > (SIZE_MAX - 8) / 8 || lc_add_u64(bytes, count, &cap) ||
            lc_add_u64(8 + 8 * count, cap, &size) || size > SIZE_MAX)
            return too_large(err, LC_VT_STRING, count);
        uint64_t *p = lc_malloc((size_t)size);
        if (!p)
            return no_memory(err, LC_VT_STRING, count);
        p[0] = cap;
        memset(p + 1, 0, (size_t)(8 * count));     /* every string unset: "" */
        out.arr.packed.ptr = p;
    }
    *v = out;
    return LC_OK;
}

lc_code lc_value_array(lc_value *v, lc_vtype elem, uint64_t count, lc_error *err) {
    if ((unsigned)elem >= LC_VT_COUNT)
        return lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "invalid array element type %d", (int)elem);
    if (elem == LC_VT_STRING)
        return lc_value_string_array(v, count, 0, err);
    const size_t size = lc_vtype_size(elem);
    lc_value out = empty_array(elem, count);
    if (elem == LC_VT_ARRAY && count) {
        if (count > SIZE_MAX / sizeof(lc_value))
            return too_large(err, elem, count);
        lc_value *it = lc_calloc((size_t)count, sizeof *it);
        if (!it)
            return no_memory(err, elem, count);
        for (uint64_t k = 0; k < count; k++)
            it[k] = empty_array(LC_VT_U8, 0);
        out.arr.packed.ptr = it;
    } else if (size && count > sizeof out.arr.packed.inl / size) {   /* not inline */
        if (count > SIZE_MAX / size)
            return too_large(err, elem, count);
        if (!(out.arr.packed.ptr = lc_calloc((size_t)count, size)))
            return no_memory(err, elem, count);
    }
    *v = out;
    return LC_OK;
}

lc_code lc_value_copy(lc_value *dst, const lc_value *src, lc_error *err) {
    if (src->type == LC_VT_STRING)
        return lc_value_string(dst, src->str.ptr, (size_t)src->str.len, err);
    if (src->type != LC_VT_ARRAY) {
        *dst = *src;
        return LC_OK;
    }
    lc_value out = empty_array(src->arr.elem, src->arr.count);
    if (src->arr.elem == LC_VT_ARRAY) {
        LC_TRY(lc_value_array(&out, LC_VT_ARRAY, src->arr.count, err));
        for (uint64_t k = 0; k < src->arr.count; k++) {
            lc_code rc = lc_value_copy(&items(&out)[k], &items(src)[k], err);
            if (rc != LC_OK) {
                lc_value_clear(&out);
                return rc;
            }
        }
    } else {
        const size_t size = src->arr.elem == LC_VT_STRING ? str_block_size(src)
                            : scalars_inline(src) ? 0
                            : (size_t)src->arr.count * lc_vtype_size(src->arr.elem);
        if (size) {
            if (!(out.arr.packed.ptr = lc_malloc(size)))
                return no_memory(err, src->arr.elem, src->arr.count);
            memcpy(out.arr.packed.ptr, src->arr.packed.ptr, size);
        } else {
            out.arr.packed = src->arr.packed;   /* inline items, or no buffer */
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
        if (v->arr.elem == LC_VT_ARRAY && v->arr.packed.ptr) {
            for (uint64_t k = 0; k < v->arr.count; k++)
                lc_value_clear(&items(v)[k]);
            lc_free(v->arr.packed.ptr);
        } else if (!is_scalar(v->arr.elem) || !scalars_inline(v)) {
            lc_free(v->arr.packed.ptr);
        }
    }
    memset(v, 0, sizeof *v);
}

/* ---- items ---- */

/* An item of an array of scalars: the index is in range. */
static bool scalar_item(const lc_value *a, uint64_t i) {
    return a && a->type == LC_VT_ARRAY && is_scalar(a->arr.elem) && i < a->arr.count;
}

uint64_t lc_value_arr_uint(const lc_value *a, uint64_t i) {
    if (!scalar_item(a, i))
        return 0;
    const uint8_t *p = scalars(a);
    switch (a->arr.elem) {
    case LC_VT_U8:   return p[i];
    case LC_VT_I8:   return (uint64_t)(int64_t)(int8_t)p[i];
    case LC_VT_BOOL: return p[i] != 0;
    case LC_VT_U16:  return lc_load_le16(p + 2 * i);
    case LC_VT_I16:  return (uint64_t)(int64_t)(int16_t)lc_load_le16(p + 2 * i);
    case LC_VT_U32:  return lc_load_le32(p + 4 * i);
    case LC_VT_I32:  return (uint64_t)(int64_t)(int32_t)lc_load_le32(p + 4 * i);
    case LC_VT_U64: case LC_VT_I64: return lc_load_le64(p + 8 * i);
    default:         return 0;
    }
}

int64_t lc_value_arr_int(const lc_value *a, uint64_t i) {
    return (int64_t)lc_value_arr_uint(a, i);
}

double lc_value_arr_float(const lc_value *a, uint64_t i) {
    if (!scalar_item(a, i))
        return 0.0;
    const uint8_t *p = scalars(a);
    if (a->arr.elem == LC_VT_F32)
        return (double)lc_bits_to_f32(lc_load_le32(p + 4 * i));
    if (a->arr.elem == LC_VT_F64) {
        const uint64_t u = lc_load_le64(p + 8 * i);
        double d;
        memcpy(&d, &u, sizeof d);
        return d;
    }
    return 0.0;
}

const char *lc_value_arr_str(const lc_value *a, uint64_t i, size_t *len) {
    if (len)
        *len = 0;
    if (!is_array_of(a, LC_VT_STRING) || i >= a->arr.count)
        return "";
    const uint64_t *end = str_ends(a);
    if (end[i] == 0)
        return "";
    const uint64_t start = i ? end[i - 1] : 0;
    if (len)
        *len = (size_t)(end[i] - start - 1);
    return str_text(a) + start;
}

const lc_value *lc_value_arr_item(const lc_value *a, uint64_t i) {
    return is_array_of(a, LC_VT_ARRAY) && i < a->arr.count ? &items(a)[i] : NULL;
}

lc_value lc_value_arr_get(const lc_value *a, uint64_t i) {
    lc_value v = lc_value_uint(LC_VT_U8, 0);
    if (!a || a->type != LC_VT_ARRAY || i >= a->arr.count)
        return v;
    switch (a->arr.elem) {
    case LC_VT_U8: case LC_VT_U16: case LC_VT_U32: case LC_VT_U64:
        return lc_value_uint(a->arr.elem, lc_value_arr_uint(a, i));
    case LC_VT_I8: case LC_VT_I16: case LC_VT_I32: case LC_VT_I64:
        return lc_value_int(a->arr.elem, lc_value_arr_int(a, i));
    case LC_VT_F32: case LC_VT_F64:
        return lc_value_float(a->arr.elem, lc_value_arr_float(a, i));
    case LC_VT_BOOL:
        return lc_value_bool(lc_value_arr_uint(a, i) != 0);
    case LC_VT_STRING: {
        size_t len;
        const char *s = lc_value_arr_str(a, i, &len);
        v.type = LC_VT_STRING;
        v.str.ptr = (char *)(uintptr_t)s;   /* a view: value.h says never to clear it */
        v.str.len = len;
        return v;
    }
    case LC_VT_ARRAY:
        return items(a)[i];
    default:
        return v;
    }
}

void *lc_value_arr_data(const lc_value *a) {
    if (!a || a->type != LC_VT_ARRAY || !is_scalar(a->arr.elem) || a->arr.count == 0)
        return NULL;
    return (void *)(uintptr_t)scalars(a);
}

lc_code lc_value_arr_set_str(lc_value *a, uint64_t i, const char *s, size_t len,
                             lc_error *err) {
    if (!is_array_of(a, LC_VT_STRING) || i >= a->arr.count)
        return lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "no string item %" PRIu64 " to set", i);
    uint64_t *end = str_ends(a);
    if (end[i] != 0 || (i && end[i - 1] == 0))
        return lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "string item %" PRIu64 " set out of order",
                       i);
    /* Room for this text, its NUL, and the NULs of the strings still to come. */
    const uint64_t start = i ? end[i - 1] : 0, cap = str_cap(a), later = a->arr.count - 1 - i;
    if (len > cap || cap - len < start + 1 + later)
        return lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "string item %" PRIu64 " of %zu bytes "
                       "passes the bytes the array was made with", i, len);
    char *text = str_text(a) + start;
    if (len)
        memcpy(text, s, len);
    text[len] = '\0';
    end[i] = start + len + 1;
    return LC_OK;
}

lc_code lc_value_arr_set(lc_value *a, uint64_t i, lc_value item, lc_error *err) {
    if (!a || a->type != LC_VT_ARRAY || i >= a->arr.count || item.type != a->arr.elem) {
        lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "cannot set item %" PRIu64 " of an array of %s "
                "to a %s", i, a && a->type == LC_VT_ARRAY ? lc_vtype_name(a->arr.elem) : "?",
                lc_vtype_name(item.type));
        if (item.type == LC_VT_ARRAY)
            lc_value_clear(&item);   /* taken even on failure */
        return LC_E_ARG;
    }
    if (item.type == LC_VT_STRING)
        return lc_value_arr_set_str(a, i, item.str.ptr, (size_t)item.str.len, err);
    if (item.type == LC_VT_ARRAY) {
        lc_value_clear(&items(a)[i]);
        items(a)[i] = item;
        return LC_OK;
    }
    uint8_t *p = (uint8_t *)(uintptr_t)scalars(a);
    switch (item.type) {
    case LC_VT_U8: case LC_VT_I8: p[i] = (uint8_t)item.u; break;
    case LC_VT_BOOL: p[i] = item.b ? 1 : 0; break;
    case LC_VT_U16: case LC_VT_I16: lc_store_le16(p + 2 * i, (uint16_t)item.u); break;
    case LC_VT_U32: case LC_VT_I32: lc_store_le32(p + 4 * i, (uint32_t)item.u); break;
    case LC_VT_F32: lc_store_le32(p + 4 * i, lc_f32_to_bits((float)item.f)); break;
    case LC_VT_F64: {
        uint64_t u;
        memcpy(&u, &item.f, sizeof u);
        lc_store_le64(p + 8 * i, u);
        break;
    }
    default: lc_store_le64(p + 8 * i, item.u); break;   /* U64, I64 */
    }
    return LC_OK;
}
