/* libconvert/json_scan.c: a strict JSON pull scanner (see json_scan.h).
 *
 * One state says what may come next; a stack of LC_JSCAN_MAX_DEPTH bytes says which
 * containers are open. Separators (',' ':') and whitespace are consumed between
 * tokens, so each call returns one token or an error at the first byte that breaks
 * the grammar. */
#include "libconvert/json_scan.h"

#include <inttypes.h>
#include <string.h>

enum {
    E_VALUE,            /* a value must come: at the start, after ':', after ',' in an array */
    E_VALUE_OR_CLOSE,   /* just after '[' */
    E_KEY_OR_CLOSE,     /* just after '{' */
    E_KEY,              /* after ',' in an object */
    E_COLON,            /* after a key */
    E_COMMA_OR_CLOSE,   /* after a value inside a container */
    E_DONE              /* the top-level value is complete */
};

void lc_jscan_init(lc_jscan *j, const void *s, uint64_t n, uint64_t base) {
    memset(j, 0, sizeof *j);
    j->s = s;
    j->n = n;
    j->base = base;
    j->expect = E_VALUE;
}

static bool is_ws(uint8_t c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
static bool is_digit(uint8_t c) { return c >= '0' && c <= '9'; }

static int hex(uint8_t c) {
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
         : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* The code unit of the \uXXXX escape at s[i] (the backslash), or -1. */
static long u_escape(const lc_jscan *j, uint64_t i) {
    if (j->n - i < 6 || j->s[i] != '\\' || j->s[i + 1] != 'u')
        return -1;
    long v = 0;
    for (int k = 2; k < 6; k++) {
        const int h = hex(j->s[i + k]);
        if (h < 0)
            return -1;
        v = v * 16 + h;
    }
    return v;
}

static lc_code bad(const lc_jscan *j, uint64_t i, const char *what, lc_error *err) {
    return lc_fail(err, LC_E_MALFORMED, j->base + i, "not valid JSON: %s", what);
}

/* A string starting at the quote s[pos]; sets *end past the closing quote. */
static lc_code scan_string(const lc_jscan *j, uint64_t *end, lc_error *err) {
    const uint64_t start = j->pos;
    uint64_t i = start + 1;
    for (;;) {
        if (i >= j->n)
            return lc_fail(err, LC_E_MALFORMED, j->base + start, "unterminated string");
        const uint8_t c = j->s[i];
        if (c == '"') {
            *end = i + 1;
            return LC_OK;
        }
        if (c < 0x20)   /* JSON wants these escaped; serde_json refuses them raw */
            return lc_fail(err, LC_E_MALFORMED, j->base + i,
                           "raw control byte 0x%02x inside a string", c);
        if (c != '\\') {
            i++;
            continue;
        }
        if (i + 1 >= j->n)
            return lc_fail(err, LC_E_MALFORMED, j->base + start, "unterminated string");
        if (strchr("\"\\/bfnrt", j->s[i + 1]) && j->s[i + 1]) {
            i += 2;
            continue;
        }
        const long u = u_escape(j, i);
        if (u < 0)
            return bad(j, i, "a bad escape in a string", err);
        if (u == 0)     /* a C string would end there and change the name */
            return lc_fail(err, LC_E_UNSUPPORTED, j->base + i, "\\u0000 inside a string");
        if (u >= 0xdc00 && u <= 0xdfff)
            return bad(j, i, "a lone low surrogate in a string", err);
        if (u >= 0xd800 && u <= 0xdbff) {
            const long lo = u_escape(j, i + 6);
            if (lo < 0xdc00 || lo > 0xdfff)
                return bad(j, i, "a high surrogate without its low half", err);
            i += 12;
        } else {
            i += 6;
        }
    }
}

/* A number at s[pos] (RFC 8259 grammar); sets *end past it. */
static lc_code scan_number(const lc_jscan *j, uint64_t *end, lc_error *err) {
    const uint8_t *s = j->s;
    const uint64_t n = j->n;
    uint64_t i = j->pos;
    if (s[i] == '-')
        i++;
    if (i < n && s[i] == '0') {
        i++;
    } else if (i < n && is_digit(s[i])) {
        while (i < n && is_digit(s[i]))
            i++;
    } else {
        return bad(j, i, "a number without digits", err);
    }
    if (i < n && s[i] == '.') {
        if (++i >= n || !is_digit(s[i]))
            return bad(j, i, "no digit after a decimal point", err);
        while (i < n && is_digit(s[i]))
            i++;
    }
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < n && (s[i] == '+' || s[i] == '-'))
            i++;
        if (i >= n || !is_digit(s[i]))
            return bad(j, i, "no digit in an exponent", err);
        while (i < n && is_digit(s[i]))
            i++;
    }
    *end = i;
    return LC_OK;
}

/* After a complete value: what the enclosing container wants next. */
static void value_done(lc_jscan *j) {
    j->expect = j->depth ? E_COMMA_OR_CLOSE : E_DONE;
}

static lc_code open_container(lc_jscan *j, bool object, lc_jtok *t, lc_error *err) {
    if (j->depth == LC_JSCAN_MAX_DEPTH)
        return lc_fail(err, LC_E_MALFORMED, j->base + j->pos,
                       "JSON nested deeper than %d levels", LC_JSCAN_MAX_DEPTH);
    j->stack[j->depth++] = object;
    t->kind = object ? LC_JT_OBJ : LC_JT_ARR;
    t->len = 1;
    j->pos++;
    j->expect = object ? E_KEY_OR_CLOSE : E_VALUE_OR_CLOSE;
    return LC_OK;
}

static lc_code close_container(lc_jscan *j, lc_jtok *t) {
    const bool object = j->stack[--j->depth];
    t->kind = object ? LC_JT_OBJ_END : LC_JT_ARR_END;
    t->len = 1;
    j->pos++;
    value_done(j);
    return LC_OK;
}

static lc_code scan_value(lc_jscan *j, lc_jtok *t, lc_error *err) {
    const uint8_t c = j->s[j->pos];
    uint64_t end = j->pos;
    static const struct { const char *word; lc_jkind kind; } lits[] = {
        { "true", LC_JT_TRUE }, { "false", LC_JT_FALSE }, { "null", LC_JT_NULL },
    };
    switch (c) {
    case '{': return open_container(j, true, t, err);
    case '[': return open_container(j, false, t, err);
    case '"':
        LC_TRY(scan_string(j, &end, err));
        t->kind = LC_JT_STR;
        break;
    case 't': case 'f': case 'n':
        for (size_t k = 0; k < sizeof lits / sizeof *lits; k++) {
            const size_t len = strlen(lits[k].word);
            if (lits[k].word[0] == c) {
                if (j->n - j->pos < len || memcmp(j->s + j->pos, lits[k].word, len) != 0)
                    return bad(j, j->pos, "a misspelt literal", err);
                t->kind = lits[k].kind;
                end = j->pos + len;
            }
        }
        break;
    default:
        if (c != '-' && !is_digit(c))
            return lc_fail(err, LC_E_MALFORMED, j->base + j->pos,
                           "byte 0x%02x cannot start a JSON value", c);
        LC_TRY(scan_number(j, &end, err));
        t->kind = LC_JT_NUM;
        break;
    }
    t->len = end - j->pos;
    j->pos = end;
    value_done(j);
    return LC_OK;
}

lc_code lc_jscan_next(lc_jscan *j, lc_jtok *t, lc_error *err) {
    for (;;) {
        if (j->expect == E_DONE) {
            t->kind = LC_JT_END;
            t->at = j->base + j->pos;
            t->len = 0;
            return LC_OK;
        }
        while (j->pos < j->n && is_ws(j->s[j->pos]))
            j->pos++;
        if (j->pos >= j->n)
            return bad(j, j->pos, "the text ends inside the value", err);
        const uint8_t c = j->s[j->pos];
        t->at = j->base + j->pos;
        const bool in_object = j->depth && j->stack[j->depth - 1];
        switch (j->expect) {
        case E_COLON:
            if (c != ':')
                return bad(j, j->pos, "expected ':' after an object key", err);
            j->pos++;
            j->expect = E_VALUE;
            continue;
        case E_COMMA_OR_CLOSE:
            if (c == ',') {
                j->pos++;
                j->expect = in_object ? E_KEY : E_VALUE;
                continue;
            }
            if (c == (in_object ? '}' : ']'))
                return close_container(j, t);
            return bad(j, j->pos, in_object ? "expected ',' or '}' after a value"
                                            : "expected ',' or ']' after a value", err);
        case E_KEY_OR_CLOSE:
            if (c == '}')
                return close_container(j, t);
            /* fall through */
        case E_KEY: {
            if (c != '"')
                return bad(j, j->pos, "expected a string key", err);
            uint64_t end;
            LC_TRY(scan_string(j, &end, err));
            t->kind = LC_JT_KEY;
            t->len = end - j->pos;
            j->pos = end;
            j->expect = E_COLON;
            return LC_OK;
        }
        case E_VALUE_OR_CLOSE:
            if (c == ']')
                return close_container(j, t);
            /* fall through */
        default:
            return scan_value(j, t, err);
        }
    }
}

lc_code lc_jscan_skip(lc_jscan *j, const lc_jtok *t, lc_error *err) {
    if (t->kind != LC_JT_OBJ && t->kind != LC_JT_ARR)
        return LC_OK;
    const int depth = j->depth - 1;   /* t's container is open */
    lc_jtok x;
    do
        LC_TRY(lc_jscan_next(j, &x, err));
    while (j->depth > depth);
    return LC_OK;
}

lc_code lc_jscan_count(const lc_jscan *j, const lc_jtok *t, uint64_t *count, lc_error *err) {
    lc_jscan c = *j;
    lc_jtok x;
    *count = 0;
    if (t->kind != LC_JT_OBJ && t->kind != LC_JT_ARR)
        return LC_OK;
    for (;;) {
        LC_TRY(lc_jscan_next(&c, &x, err));
        if (x.kind == LC_JT_OBJ_END || x.kind == LC_JT_ARR_END)
            return LC_OK;
        ++*count;
        if (x.kind == LC_JT_KEY)
            LC_TRY(lc_jscan_next(&c, &x, err));
        LC_TRY(lc_jscan_skip(&c, &x, err));
    }
}

/* Writes code point cp as UTF-8; returns the bytes written. */
static size_t put_utf8(char *out, unsigned long cp) {
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xc0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xe0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        out[2] = (char)(0x80 | (cp & 0x3f));
        return 3;
    }
    out[0] = (char)(0xf0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
    out[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}

/* The scanner checked every escape, so decoding trusts them. Each escape is at least
 * as long as what it decodes to, so the text never outgrows the token. */
size_t lc_jscan_decode(const lc_jscan *j, const lc_jtok *t, char *out) {
    const uint64_t from = t->at - j->base + 1, to = t->at - j->base + t->len - 1;
    size_t o = 0;
    for (uint64_t i = from; i < to;) {
        const uint8_t c = j->s[i];
        if (c != '\\') {
            out[o++] = (char)c;
            i++;
            continue;
        }
        const uint8_t e = j->s[i + 1];
        static const char from_esc[] = "\"\\/bfnrt", to_esc[] = "\"\\/\b\f\n\r\t";
        const char *p = strchr(from_esc, e);
        if (e != 'u' && p) {
            out[o++] = to_esc[p - from_esc];
            i += 2;
            continue;
        }
        unsigned long cp = (unsigned long)u_escape(j, i);
        i += 6;
        if (cp >= 0xd800 && cp <= 0xdbff) {
            cp = 0x10000 + ((cp - 0xd800) << 10) + ((unsigned long)u_escape(j, i) - 0xdc00);
            i += 6;
        }
        o += put_utf8(out + o, cp);
    }
    out[o] = '\0';
    return o;
}

bool lc_jscan_equals(const lc_jscan *j, const lc_jtok *t, const char *s) {
    char buf[256];
    const size_t len = strlen(s);
    /* An escape takes at most 6 bytes per byte it decodes to. */
    if (t->len < 2 || t->len - 2 > 6 * (uint64_t)len || t->len > sizeof buf)
        return false;
    return lc_jscan_decode(j, t, buf) == len && memcmp(buf, s, len) == 0;
}

/* ---- bounding a tree parser ---- */

/* What malloc(len + 1) takes in glibc: a 16-byte-aligned chunk with an 8-byte
 * header, at least 32 bytes. */
static uint64_t string_cost(uint64_t len) {
    const uint64_t chunk = (len + 1 + 8 + 15) & ~(uint64_t)15;
    return chunk < 32 ? 32 : chunk;
}

#define NODE_COST 80u   /* sizeof(cJSON) and its chunk header */

uint64_t lc_json_tree_cost(const void *text, size_t n) {
    const uint8_t *s = text;
    uint64_t cost = 0;
    for (size_t i = 0; i < n;) {
        const uint8_t c = s[i];
        if (c == '"') {
            size_t k = i + 1;
            for (;;) {   /* the closing quote: one with an even run of backslashes before it */
                const uint8_t *q = memchr(s + k, '"', n - k);
                if (!q) {
                    k = n;
                    break;
                }
                k = (size_t)(q - s);
                size_t bs = 0;
                while (k - bs > i + 1 && s[k - bs - 1] == '\\')
                    bs++;
                if (bs % 2 == 0)
                    break;
                k++;
            }
            cost += string_cost(k - i - 1);   /* the raw text: never shorter than decoded */
            i = k + 1;
            size_t after = i;
            while (after < n && is_ws(s[after]))
                after++;
            if (after >= n || s[after] != ':')   /* a value, not a key: a node too */
                cost += NODE_COST;
        } else if (c == '{' || c == '[') {
            cost += NODE_COST;
            i++;
        } else if (c == '-' || is_digit(c) || c == 't' || c == 'f' || c == 'n') {
            cost += NODE_COST;
            i++;
            while (i < n && (is_digit(s[i]) || (s[i] >= 'a' && s[i] <= 'z') || s[i] == '.' ||
                             s[i] == '+' || s[i] == '-' || s[i] == 'E'))
                i++;
        } else {
            i++;
        }
    }
    return cost;
}

lc_code lc_json_tree_check(const void *s, size_t n, lc_error *err) {
    const uint64_t cost = lc_json_tree_cost(s, n);
    const uint64_t ratio_cap = (uint64_t)LC_JSON_TREE_RATIO * n + ((uint64_t)1 << 20);
    if (cost <= ratio_cap && cost <= LC_JSON_TREE_MAX)
        return LC_OK;
    return lc_fail(err, LC_E_OVERFLOW, 0, "parsing these %zu bytes of JSON would take %" PRIu64
                   " bytes of memory, more than %s", n, cost,
                   cost > LC_JSON_TREE_MAX ? "the 1 GiB limit"
                                           : "24 times the text (real files take 10-15)");
}
