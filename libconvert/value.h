/* libconvert/value.h: typed metadata values, the GGUF value model.
 *
 * A value is a scalar, a string or an array whose items are values of one type
 * (arrays may nest). Type ids equal GGUF's so readers and writers map 1:1.
 * A value owns its string bytes and its items; lc_value_clear() releases them. */
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
        struct { lc_vtype elem; uint64_t count; lc_value *items; } arr;
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
/* An array of `count` zeroed items of type `elem`, each with its type set. */
lc_code lc_value_array(lc_value *v, lc_vtype elem, uint64_t count, lc_error *err);
/* Deep copy. */
lc_code lc_value_copy(lc_value *dst, const lc_value *src, lc_error *err);
/* Releases what v owns and leaves it a U8 zero; NULL-safe. */
void lc_value_clear(lc_value *v);

#endif
