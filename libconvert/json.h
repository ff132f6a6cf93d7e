/* libconvert/json.h: the JSON text we write, and the UTF-8 rule we read with.
 *
 * A growable byte buffer plus string escaping that matches serde_json's compact
 * output byte for byte (what the safetensors reference writes): `"` and `\` are
 * backslash-escaped, \b \f \n \r \t get their short forms, other bytes below 0x20
 * become \u00XX with lower-case hex, everything else (including non-ASCII UTF-8)
 * is copied as is. Used by the safetensors writer, model-inspect and test drivers. */
#ifndef LC_LIBCONVERT_JSON_H
#define LC_LIBCONVERT_JSON_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#include "libconvert/error.h"

typedef struct lc_json_buf {
    char  *data;   /* owned; NUL-terminated after every successful append */
    size_t len, cap;
} lc_json_buf;

/* Appends n bytes. LC_E_NOMEM when the buffer cannot grow (b keeps what it had). */
lc_code lc_json_put(lc_json_buf *b, const void *p, size_t n, lc_error *err);
/* Appends printf-formatted text. */
lc_code lc_json_printf(lc_json_buf *b, lc_error *err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Appends s[0..len) as a quoted JSON string, escaped as described above. Bytes that
 * are not valid UTF-8 are written as \ufffd so the output is always valid JSON. */
lc_code lc_json_put_string(lc_json_buf *b, const char *s, size_t len, lc_error *err);
/* The same, and DEL, the C1 controls and the bidirectional controls escaped as \uHHHH
 * too (libconvert/escape.h): still valid JSON for the same string, and safe to show on
 * a terminal. For reports (model-inspect), never for files that must match serde_json. */
lc_code lc_json_put_display(lc_json_buf *b, const char *s, size_t len, lc_error *err);
/* Releases the bytes and zeroes b; NULL-safe. */
void lc_json_buf_free(lc_json_buf *b);

/* Length of the longest valid UTF-8 prefix of s[0..len), so == len when all of it is
 * valid. Strict like Rust's str::from_utf8: no overlong forms, no surrogates, nothing
 * above U+10FFFF. */
size_t lc_json_utf8_valid_prefix(const uint8_t *s, size_t len);

#endif
