/* libconvert/value.h: typed metadata values, the GGUF value model.
 *
 * A value is a scalar, a string or an array whose items are values of one type
 * (arrays may nest). Type ids equal GGUF's so readers and writers map 1:1.
 * A value owns its string bytes and its items; lc_value_clear() releases them.
 *
 * Arrays are packed, so that an array costs about what it takes on the GGUF wire
 * (a file may hold a 60 MiB array of u8):
 *   scalars   one buffer of count items at their wire width, little-endian (u8 and
 *             bool 1 byte, f32 4, ...), as GGUF writes them;
 *   strings   one buffer of the texts, each NUL-terminated, and their end offsets;
 *   arrays    one lc_value per item (each costs at least 12 bytes on the wire).
 * `arr.elem` and `arr.count` may be read directly; items only through the
 * lc_value_arr_* calls below, never through `arr.packed`. */
#ifndef LC_LIBCONVERT_VALUE_H
#define LC_LIBCONVERT_VALUE_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#include "libconvert/error.h"

typedef enum lc_vtype {
    LC_VT_U8 = 0, LC_VT_I8 = 1, LC_VT_U16 = 2, LC_VT_I16 = 3, LC_VT_U32 = 4, LC_VT_I32 = 5,
    LC_VT_F32 = 6, LC_VT_BOOL = 7, LC_VT_STRING = 8, LC_VT_ARRAY = 9, LC_VT_U64 = 10,
    LC_VT_I64 = 11, LC_VT_F64 = 12,
    LC_VT_COUNT
} lc_vtype;

typedef struct lc_value lc_value;
struct lc_value {
    lc_vtype type;
    union {
        uint64_t u;                                          /* U8 U16 U32 U64 */
        int64_t  i;                                          /* I8 I16 I32 I64 */
        double   f;                                          /* F32 (exact) and F64 */
        bool     b;                                          /* BOOL */
        struct { char *ptr; uint64_t len; } str;             /* NUL-terminated too */
        struct {
            lc_vtype elem;
            uint64_t count;
            /* private (value.c): the items; up to 8 bytes of scalars sit inline */
            union { void *ptr; uint8_t inl[8]; } packed;
        } arr;
    };
};

/* "u32", "string", "array"...; "?" when out of range. */
const char *lc_vtype_name(lc_vtype t);
/* Bytes of one scalar of type t on the GGUF wire; 0 for string and array. */
size_t lc_vtype_size(lc_vtype t);

/* Scalar constructors (no allocation). */
lc_value lc_value_uint(lc_vtype t, uint64_t u);
lc_value lc_value_int(lc_vtype t, int64_t i);
lc_value lc_value_float(lc_vtype t, double f);
lc_value lc_value_bool(bool b);

/* Copies `len` bytes of s into a new string value. LC_E_NOMEM on failure (v untouched). */
lc_code lc_value_string(lc_value *v, const char *s, size_t len, lc_error *err);
/* An array of `count` items of type `elem`: zeros, empty strings, or empty arrays of u8.
 * LC_E_OVERFLOW / LC_E_NOMEM on failure (v untouched). */
lc_code lc_value_array(lc_value *v, lc_vtype elem, uint64_t count, lc_error *err);
/* An array of `count` strings with room for `bytes` bytes of text in all (NULs not
 * counted): every item reads as "" until lc_value_arr_set_str fills it. */
lc_code lc_value_string_array(lc_value *v, uint64_t count, uint64_t bytes, lc_error *err);
/* Deep copy. */
lc_code lc_value_copy(lc_value *dst, const lc_value *src, lc_error *err);
/* Releases what v owns and leaves it a U8 zero; NULL-safe. */
void lc_value_clear(lc_value *v);

/* ---- array items ----
 * Getters take an index below arr.count and answer 0, 0.0, "" or NULL for an index
 * out of range or an item of another kind; they never fail. */

/* An integer item (any width and sign) as the union's u or i would hold it: signed
 * items sign-extended, unsigned ones zero-extended; bool items 0 or 1. */
uint64_t lc_value_arr_uint(const lc_value *a, uint64_t i);
int64_t  lc_value_arr_int(const lc_value *a, uint64_t i);
/* An f32 or f64 item (f32 exact, as a double). */
double   lc_value_arr_float(const lc_value *a, uint64_t i);
/* A string item, NUL-terminated; *len (if not NULL) gets its length. Borrowed: valid
 * until the array is changed, moved or cleared. */
const char *lc_value_arr_str(const lc_value *a, uint64_t i, size_t *len);
/* An item of an array of arrays; borrowed like a string. */
const lc_value *lc_value_arr_item(const lc_value *a, uint64_t i);
/* Any item as a value. A string or array item is a borrowed view into a: read it,
 * never clear or keep it. */
lc_value lc_value_arr_get(const lc_value *a, uint64_t i);
/* The items of an array of scalars as GGUF writes them: count * lc_vtype_size(elem)
 * little-endian bytes, for bulk reads and writes (NULL for strings and arrays, or
 * when count is 0). Valid until a is moved or cleared. */
void *lc_value_arr_data(const lc_value *a);

/* Sets item i to `item`, whose type must be arr.elem (LC_E_ARG otherwise, and for i
 * out of range). A scalar is stored at its wire width; a string is copied in, in
 * index order as lc_value_arr_set_str; an array is moved in: a owns it from then on,
 * even when the call fails. */
lc_code lc_value_arr_set(lc_value *a, uint64_t i, lc_value item, lc_error *err);
/* Fills string i of a string array. Strings are filled in index order (0, 1, ...),
 * each once, within the bytes the array was made with: LC_E_ARG otherwise. */
lc_code lc_value_arr_set_str(lc_value *a, uint64_t i, const char *s, size_t len,
                             lc_error *err);

#endif
