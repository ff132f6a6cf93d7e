/* libconvert/json.c: JSON text output and strict UTF-8 validation. */
#include "libconvert/json.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "libconvert/alloc.h"
#include "libconvert/escape.h"

static lc_code reserve(lc_json_buf *b, size_t extra, lc_error *err) {
    /* +1 keeps room for the terminating NUL. */
    if (extra > SIZE_MAX - b->len - 1)
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "json text too large");
    size_t need = b->len + extra + 1;
    if (need <= b->cap)
        return LC_OK;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < need)
        cap = cap > SIZE_MAX / 2 ? need : cap * 2;
    char *p = lc_realloc(b->data, cap);
    if (!p)
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory for %zu bytes of json", cap);
    b->data = p;
    b->cap = cap;
    return LC_OK;
}

lc_code lc_json_put(lc_json_buf *b, const void *p, size_t n, lc_error *err) {
    LC_TRY(reserve(b, n, err));
    if (n)
        memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
    return LC_OK;
}

lc_code lc_json_printf(lc_json_buf *b, lc_error *err, const char *fmt, ...) {
    char small[128];
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (k < 0)
        return lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "bad format");
    if ((size_t)k < sizeof small)
        return lc_json_put(b, small, (size_t)k, err);
    LC_TRY(reserve(b, (size_t)k, err));
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)k + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)k;
    return LC_OK;
}

/* Bytes in the UTF-8 sequence starting at s[0], or 0 when it is not valid there. */
static size_t utf8_seq(const uint8_t *s, size_t left) {
    uint8_t c = s[0];
    if (c < 0x80)
        return 1;
    size_t n;
    uint8_t lo = 0x80, hi = 0xbf; /* allowed range of the second byte */
    if (c >= 0xc2 && c <= 0xdf) {
        n = 2;
    } else if (c >= 0xe0 && c <= 0xef) {
        n = 3;
        if (c == 0xe0)
            lo = 0xa0; /* overlong */
        if (c == 0xed)
            hi = 0x9f; /* surrogates */
    } else if (c >= 0xf0 && c <= 0xf4) {
        n = 4;
        if (c == 0xf0)
            lo = 0x90; /* overlong */
        if (c == 0xf4)
            hi = 0x8f; /* above U+10FFFF */
    } else {
        return 0;
    }
    if (left < n || s[1] < lo || s[1] > hi)
        return 0;
    for (size_t k = 2; k < n; k++)
        if ((s[k] & 0xc0) != 0x80)
            return 0;
    return n;
}

size_t lc_json_utf8_valid_prefix(const uint8_t *s, size_t len) {
    size_t i = 0;
    while (i < len) {
        /* Fast path over ASCII, the common case for headers. */
        if (s[i] < 0x80) {
            i++;
            continue;
        }
        size_t n = utf8_seq(s + i, len - i);
        if (n == 0)
            return i;
        i += n;
    }
    return len;
}

static lc_code put_string(lc_json_buf *b, const char *s, size_t len, bool display,
                          lc_error *err) {
    const uint8_t *u = (const uint8_t *)s;
    LC_TRY(lc_json_put(b, "\"", 1, err));
    size_t run = 0; /* start of the pending run of bytes copied as they are */
    for (size_t i = 0; i < len;) {
        uint8_t c = u[i];
        char esc[8];
        size_t n = 0, step = 1;
        if (c == '"' || c == '\\') {
            esc[0] = '\\';
            esc[1] = (char)c;
            n = 2;
        } else if (c < 0x20 || (display && c >= 0x7f)) {
            n = lc_escape_one(u + i, len - i, true, &step, esc);
        } else if (c >= 0x80) {
            step = utf8_seq(u + i, len - i);
            if (step == 0) {
                memcpy(esc, "\\ufffd", 6);
                n = 6;
                step = 1;
            }
        }
        if (n) {
            LC_TRY(lc_json_put(b, s + run, i - run, err));
            LC_TRY(lc_json_put(b, esc, n, err));
            run = i + step;
        }
        i += step;
    }
    LC_TRY(lc_json_put(b, s + run, len - run, err));
    return lc_json_put(b, "\"", 1, err);
}

lc_code lc_json_put_string(lc_json_buf *b, const char *s, size_t len, lc_error *err) {
    return put_string(b, s, len, false, err);
}

lc_code lc_json_put_display(lc_json_buf *b, const char *s, size_t len, lc_error *err) {
    return put_string(b, s, len, true, err);
}

void lc_json_buf_free(lc_json_buf *b) {
    if (!b)
        return;
    lc_free(b->data);
    memset(b, 0, sizeof *b);
}
