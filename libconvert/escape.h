/* libconvert/escape.h: names from files made safe to print on a terminal.
 *
 * A tensor name, metadata key or zip entry is whatever bytes the file's author chose:
 * printed raw, "a\nall checks passed\x1b[32m" forges a second, coloured line. Every
 * line we print that holds such bytes (the error line from lc_err_format, the
 * model-inspect report, pth2safetensors --list and --scan, progress labels) goes
 * through here, or through lc_json_put_display for the quoted JSON forms. Escaped:
 *   - C0 controls as \n, \r, \t or \xHH, and DEL as \x7f;
 *   - each byte that is not part of valid UTF-8 as \xHH;
 *   - the C1 controls U+0080..U+009F (some terminals act on them) and the Unicode
 *     bidirectional controls (U+061C, U+200E-U+200F, U+202A-U+202E, U+2066-U+2069,
 *     which reorder what is shown) as \uHHHH.
 * Everything else, backslashes and printable UTF-8 included, is kept as it is. */
#ifndef LC_LIBCONVERT_ESCAPE_H
#define LC_LIBCONVERT_ESCAPE_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include <stdio.h>

/* Writes the escaped form of s[0..n) into dst (cap >= 1 bytes, always NUL-terminated)
 * and returns its length. When it does not fit, it stops before the first escape or
 * UTF-8 character that would not fit whole. */
size_t lc_escape(char *dst, size_t cap, const char *s, size_t n);

/* Writes the escaped form of the C string s to f; false on a write error. */
bool lc_escape_fputs(FILE *f, const char *s);

/* The escape for the code point (or byte) at s[0..n) when one is needed: its length
 * in *step (>= 1) and the escape text in out (at least 8 bytes); returns the escape's
 * length, 0 when the *step bytes print as they are. For printers that escape as they
 * go (libconvert/json.c). `json` picks \u00HH over \xHH, the one form JSON knows; an
 * invalid byte is then \ufffd. */
size_t lc_escape_one(const uint8_t *s, size_t n, bool json, size_t *step, char out[8]);

#endif
