/* libconvert/escape.c: terminal-safe text for names read from files. */
#include "libconvert/escape.h"

#include <string.h>

/* Length of the valid UTF-8 sequence at s[0..n) and its code point, or 0. */
static size_t utf8_decode(const uint8_t *s, size_t n, uint32_t *cp) {
    const uint8_t c = s[0];
    size_t len;
    uint8_t lo = 0x80, hi = 0xbf; /* allowed range of the second byte */
    if (c < 0x80) {
        *cp = c;
        return 1;
    } else if (c >= 0xc2 && c <= 0xdf) {
        len = 2;
        *cp = c & 0x1fu;
    } else if (c >= 0xe0 && c <= 0xef) {
        len = 3;
        *cp = c & 0x0fu;
        lo = c == 0xe0 ? 0xa0 : 0x80; /* overlong */
        hi = c == 0xed ? 0x9f : 0xbf; /* surrogates */
    } else if (c >= 0xf0 && c <= 0xf4) {
        len = 4;
        *cp = c & 0x07u;
        lo = c == 0xf0 ? 0x90 : 0x80; /* overlong */
        hi = c == 0xf4 ? 0x8f : 0xbf; /* above U+10FFFF */
    } else {
        return 0;
    }
    if (n < len || s[1] < lo || s[1] > hi)
        return 0;
    for (size_t k = 1; k < len; k++) {
        if ((s[k] & 0xc0) != 0x80)
            return 0;
        *cp = *cp << 6 | (s[k] & 0x3fu);
    }
    return len;
}

/* Code points a terminal acts on or that reorder the text around them. */
static bool unsafe_cp(uint32_t cp) {
    return (cp >= 0x80 && cp <= 0x9f) || cp == 0x061c || cp == 0x200e || cp == 0x200f ||
           (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069);
}

static size_t hex_escape(char out[8], const char *fmt, unsigned v) {
    static const char digits[] = "0123456789abcdef";
    size_t n = 0;
    for (const char *f = fmt; *f; f++) {
        if (*f != '#') {
            out[n++] = *f;
            continue;
        }
        int width = f[1] - '0';
        for (int k = width - 1; k >= 0; k--)
            out[n++] = digits[(v >> (4 * k)) & 0xf];
        f++;
    }
    return n;
}

size_t lc_escape_one(const uint8_t *s, size_t n, bool json, size_t *step, char out[8]) {
    const uint8_t c = s[0];
    *step = 1;
    if (c < 0x20 || c == 0x7f) {
        const char *shortf = c == '\n' ? "\\n" : c == '\r' ? "\\r" : c == '\t' ? "\\t"
                           : json && c == '\b' ? "\\b" : json && c == '\f' ? "\\f" : NULL;
        if (shortf) {
            memcpy(out, shortf, 2);
            return 2;
        }
        return hex_escape(out, json ? "\\u#4" : "\\x#2", c);
    }
    if (c < 0x80)
        return 0;
    uint32_t cp;
    const size_t len = utf8_decode(s, n, &cp);
    if (len == 0)
        return json ? hex_escape(out, "\\u#4", 0xfffd) : hex_escape(out, "\\x#2", c);
    *step = len;
    return unsafe_cp(cp) ? hex_escape(out, "\\u#4", cp) : 0;
}

size_t lc_escape(char *dst, size_t cap, const char *s, size_t n) {
    const uint8_t *u = (const uint8_t *)s;
    size_t w = 0;
    for (size_t i = 0; i < n;) {
        char esc[8];
        size_t step, k = lc_escape_one(u + i, n - i, false, &step, esc);
        const char *src = k ? esc : s + i;
        const size_t len = k ? k : step;
        if (len >= cap - w)
            break;
        memcpy(dst + w, src, len);
        w += len;
        i += step;
    }
    dst[w] = '\0';
    return w;
}

bool lc_escape_fputs(FILE *f, const char *s) {
    const uint8_t *u = (const uint8_t *)s;
    const size_t n = strlen(s);
    size_t run = 0; /* start of the bytes not yet written, all safe */
    for (size_t i = 0; i < n;) {
        char esc[8];
        size_t step, k = lc_escape_one(u + i, n - i, false, &step, esc);
        if (k) {
            if (fwrite(s + run, 1, i - run, f) != i - run || fwrite(esc, 1, k, f) != k)
                return false;
            run = i + step;
        }
        i += step;
    }
    return fwrite(s + run, 1, n - run, f) == n - run;
}
