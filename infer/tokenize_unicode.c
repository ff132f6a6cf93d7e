/* infer/tokenize_unicode.c: UTF-8 and code point classes, exactly as llama.cpp's
 * src/unicode.cpp reads them (the tokens depend on every quirk), and GPT-2's byte
 * alphabet. */
#include "infer/tokenize_impl.h"
#include "infer/tokenize_ucd_impl.h"

#define N_RUNS (sizeof LC_UNICODE_RUNS / sizeof *LC_UNICODE_RUNS)

uint16_t lc_tok_uc_flags(uint32_t cp) {
    if (cp > 0x10FFFF)
        return LC_UC_UNDEFINED;
    /* The last run starting at or before cp. */
    size_t lo = 0, hi = N_RUNS;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if ((LC_UNICODE_RUNS[mid] >> 8) <= cp)
            lo = mid;
        else
            hi = mid;
    }
    uint16_t b = (uint16_t)(LC_UNICODE_RUNS[lo] & 0xFF);
    /* Whitespace is packed as a pair of class bits no category has (see the header). */
    if (b == (LC_UC_SEPARATOR | LC_UC_CONTROL))
        return LC_UC_SEPARATOR | LC_UC_WHITESPACE;
    if (b == (LC_UC_CONTROL | LC_UC_UNDEFINED))
        return LC_UC_CONTROL | LC_UC_WHITESPACE;
    return b;
}

const char *lc_tok_uc_version(void) { return LC_UNICODE_VERSION; }

size_t lc_tok_utf8_len(uint8_t lead) {
    static const uint8_t len[16] = { 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4 };
    return len[lead >> 4];
}

static bool cont(const uint8_t *s, size_t len, size_t i) {
    return i < len && (s[i] & 0xC0) == 0x80;
}

uint32_t lc_tok_utf8_next(const uint8_t *s, size_t len, size_t *at) {
    size_t i = *at;
    uint8_t b = s[i];
    if (!(b & 0x80)) {
        *at = i + 1;
        return b;
    }
    /* Each shape needs all its continuation bytes; overlong forms and surrogates pass,
     * as they do in llama.cpp. */
    if ((b & 0x40) && !(b & 0x20) && cont(s, len, i + 1)) {
        *at = i + 2;
        return (uint32_t)(b & 0x1F) << 6 | (s[i + 1] & 0x3F);
    }
    if ((b & 0x40) && (b & 0x20) && !(b & 0x10) && cont(s, len, i + 1) &&
        cont(s, len, i + 2)) {
        *at = i + 3;
        return (uint32_t)(b & 0x0F) << 12 | (uint32_t)(s[i + 1] & 0x3F) << 6 |
               (s[i + 2] & 0x3F);
    }
    if ((b & 0x40) && (b & 0x20) && (b & 0x10) && !(b & 0x08) && cont(s, len, i + 1) &&
        cont(s, len, i + 2) && cont(s, len, i + 3)) {
        *at = i + 4;
        return (uint32_t)(b & 0x07) << 18 | (uint32_t)(s[i + 1] & 0x3F) << 12 |
               (uint32_t)(s[i + 2] & 0x3F) << 6 | (s[i + 3] & 0x3F);
    }
    *at = i + 1;
    return 0xFFFD;
}

size_t lc_tok_utf8_put(uint32_t cp, char out[4]) {
    if (cp <= 0x7F) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp <= 0x7FF) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp <= 0xFFFF) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | ((cp >> 18) & 0x07));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* GPT-2's bytes_to_unicode: printable Latin-1 bytes stand for themselves; the 68 others
 * (0x00-0x20, 0x7F-0xA0, 0xAD) take U+0100, U+0101, ... in byte order. */
uint32_t lc_tok_byte_cp(uint8_t b) {
    if (b <= 0x20)
        return 0x100 + b;
    if (b >= 0x7F && b <= 0xA0)
        return 0x100 + 33 + (uint32_t)(b - 0x7F);
    if (b == 0xAD)
        return 0x100 + 67;
    return b;
}

int lc_tok_cp_byte(uint32_t cp) {
    if (cp < 0x100)
        return (cp <= 0x20 || (cp >= 0x7F && cp <= 0xA0) || cp == 0xAD) ? -1 : (int)cp;
    if (cp < 0x100 + 33)
        return (int)(cp - 0x100);
    if (cp < 0x100 + 67)
        return (int)(cp - 0x100 - 33 + 0x7F);
    return cp == 0x100 + 67 ? 0xAD : -1;
}
