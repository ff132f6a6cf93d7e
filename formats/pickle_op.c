/* formats/pickle_op.c: decoding one pickle opcode and its argument, the text decoders
 * of protocol 0, the value arena and the allowlist. Shared by the loader and the
 * scanner so that the two can never read a byte differently.
 *
 * Opcode arguments on the wire (all integers little-endian unless noted):
 *
 *   no argument    ( . 0 1 2 N Q R a b d } e l ] o s t ) u 0x81 0x85-0x89 0x8f-0x94
 *   u8             K BININT1, h BINGET, q BINPUT, 0x80 PROTO, 0x82 EXT1
 *   u16            M BININT2, 0x83 EXT2
 *   i32            J BININT, 0x84 EXT4
 *   u32            j LONG_BINGET, r LONG_BINPUT
 *   f64 big-endian G BINFLOAT
 *   u8  len+bytes  U SHORT_BINSTRING, C SHORT_BINBYTES, 0x8c SHORT_BINUNICODE, 0x8a LONG1
 *   i32 len+bytes  T BINSTRING, 0x8b LONG4           (a negative length is malformed)
 *   u32 len+bytes  X BINUNICODE, B BINBYTES
 *   u64 len+bytes  0x8d BINUNICODE8, 0x8e BINBYTES8, 0x96 BYTEARRAY8
 *   u64            0x95 FRAME (length of the frame that follows)
 *   line "...\n"   I INT, L LONG ("123L"), F FLOAT, S STRING ('quoted'),
 *                  V UNICODE (raw-unicode-escape), P PERSID, g GET, p PUT
 *   two lines      c GLOBAL and i INST: "module\nname\n"
 */
#include "formats/pickle_op_impl.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "libconvert/alloc.h"
#include "libconvert/bytes.h"

/* ---- arena ---- */

struct arena_block {
    struct arena_block *next;
    uint64_t used, cap;
    _Alignas(8) unsigned char data[];
};

#define ARENA_BLOCK ((uint64_t)64 << 10)

void *lc_pickle_op_alloc(lc_pickle_op_arena *a, uint64_t n) {
    if (n > a->limit) /* also keeps the rounding below from wrapping */
        return NULL;
    /* 8-byte steps: nothing here is wider than a pointer, a uint64_t or a double, and a
     * torch pickle makes millions of small values (16-byte steps cost a value 80 bytes
     * instead of 56). */
    n = (n + 7) & ~(uint64_t)7;
    if (n == 0)
        n = 8;
    struct arena_block *b = a->head;
    if (!b || b->cap - b->used < n) {
        uint64_t cap = n > ARENA_BLOCK ? n : ARENA_BLOCK;
        uint64_t total;
        if (lc_add_u64(a->total, cap, &total) || total > a->limit || cap > SIZE_MAX / 2)
            return NULL;
        b = lc_malloc(sizeof *b + (size_t)cap);
        if (!b)
            return NULL;
        a->total = total;
        b->used = 0;
        b->cap = cap;
        if (a->head && a->head->cap - a->head->used > cap - n) {
            /* Keep filling the current block; this big one is used up at once. */
            b->next = a->head->next;
            a->head->next = b;
        } else {
            b->next = a->head;
            a->head = b;
        }
    }
    void *p = b->data + b->used;
    b->used += n;
    memset(p, 0, (size_t)n);
    return p;
}

void lc_pickle_op_arena_free(lc_pickle_op_arena *a) {
    struct arena_block *b = a->head;
    while (b) {
        struct arena_block *next = b->next;
        lc_free(b);
        b = next;
    }
    a->head = NULL;
    a->total = 0;
}

/* ---- opcode reader ---- */

static lc_code read_line(lc_rd *r, const uint8_t **p, uint64_t *n, const char *what) {
    const uint8_t *start = r->base + r->pos;
    const uint8_t *nl = memchr(start, '\n', (size_t)lc_rd_left(r));
    if (!nl)
        return lc_fail(r->err, LC_E_TRUNCATED, lc_rd_at(r), "%s has no ending newline", what);
    *p = start;
    *n = (uint64_t)(nl - start);
    r->pos += *n + 1;
    return LC_OK;
}

static lc_code read_len_bytes(lc_rd *r, uint64_t len, lc_pickle_op *op, const char *what) {
    if (len > lc_rd_left(r))
        return lc_fail(r->err, LC_E_TRUNCATED, lc_rd_at(r),
                       "%s of %" PRIu64 " bytes runs past the end (%" PRIu64 " left)", what, len,
                       lc_rd_left(r));
    op->p = r->base + r->pos;
    op->n = len;
    r->pos += len;
    return LC_OK;
}

/* Protocol-0 decimal: optional sign, digits, no leading zeros beyond "0" (CPython's
 * base-0 parse would read them as octal in one implementation and refuse them in the
 * other). Sets n_int when the value fits in int64; n/p keep the text for big values. */
static lc_code parse_decimal(lc_pickle_op *op, uint64_t at, bool *fits, lc_error *err) {
    const uint8_t *s = op->p;
    uint64_t n = op->n, i = 0;
    bool neg = false;
    if (n && (s[0] == '-' || s[0] == '+')) {
        neg = s[0] == '-';
        i = 1;
    }
    if (i == n)
        return lc_fail(err, LC_E_MALFORMED, at, "integer text is empty");
    if (n - i > LC_PICKLE_OP_MAX_DIGITS)
        return lc_fail(err, LC_E_OVERFLOW, at, "integer of %" PRIu64 " digits exceeds %u",
                       n - i, LC_PICKLE_OP_MAX_DIGITS);
    if (s[i] == '0' && n - i > 1)
        return lc_fail(err, LC_E_MALFORMED, at, "integer text has a leading zero");
    uint64_t mag = 0;
    *fits = true;
    for (uint64_t k = i; k < n; k++) {
        if (s[k] < '0' || s[k] > '9')
            return lc_fail(err, LC_E_MALFORMED, at, "integer text has a non-digit 0x%02x",
                           s[k]);
        if (*fits && (lc_mul_u64(mag, 10, &mag) || lc_add_u64(mag, (uint64_t)(s[k] - '0'), &mag)))
            *fits = false;
    }
    if (*fits && mag > (uint64_t)INT64_MAX + (neg ? 1 : 0))
        *fits = false;
    if (*fits)
        op->n_int = neg ? (int64_t)(0 - mag) : (int64_t)mag;
    return LC_OK;
}

/* A pickler numbers memo entries 0, 1, 2... as it stores them, one opcode of at least
 * a byte each, so entry i is stored past byte i: a PUT of an index beyond the pickle's
 * length is no pickler's, and would cost a memo array of that size (8 bytes made
 * 32 MB before this check). */
static lc_code check_put(lc_rd *r, const lc_pickle_op *op, uint64_t idx) {
    if ((op->code == OP_PUT || op->code == OP_BINPUT || op->code == OP_LONG_BINPUT) &&
        idx >= r->size)
        return lc_fail(r->err, LC_E_OVERFLOW, op->at,
                       "PUT of memo index %" PRIu64 " in a pickle of %" PRIu64 " bytes, which "
                       "can store at most that many", idx, r->size);
    return LC_OK;
}

static lc_code read_index_line(lc_rd *r, lc_pickle_op *op, const char *what) {
    bool fits;
    LC_TRY(read_line(r, &op->p, &op->n, what));
    LC_TRY(parse_decimal(op, op->at, &fits, r->err));
    if (!fits || op->n_int < 0 || op->n_int >= (int64_t)LC_PICKLE_OP_MAX_MEMO)
        return lc_fail(r->err, LC_E_OVERFLOW, op->at, "%s memo index %.*s is out of range 0..%u",
                       what, (int)(op->n > 24 ? 24 : op->n), (const char *)op->p,
                       LC_PICKLE_OP_MAX_MEMO - 1);
    return check_put(r, op, (uint64_t)op->n_int);
}

static lc_code check_index(lc_rd *r, lc_pickle_op *op, uint64_t idx) {
    if (idx >= LC_PICKLE_OP_MAX_MEMO)
        return lc_fail(r->err, LC_E_OVERFLOW, op->at, "memo index %" PRIu64 " exceeds %u", idx,
                       LC_PICKLE_OP_MAX_MEMO - 1);
    LC_TRY(check_put(r, op, idx));
    op->n_int = (int64_t)idx;
    return LC_OK;
}

static lc_code parse_float_text(lc_rd *r, lc_pickle_op *op) {
    char tmp[64];
    if (op->n == 0 || op->n >= sizeof tmp)
        return lc_fail(r->err, LC_E_MALFORMED, op->at, "FLOAT text of %" PRIu64 " bytes", op->n);
    for (uint64_t i = 0; i < op->n; i++) {
        uint8_t c = op->p[i];
        /* strtod also takes hex floats and spaces; Python's float() on repr text never
         * needs them. */
        if (!((c >= '0' && c <= '9') || c == '.' || c == 'e' || c == 'E' || c == '+' ||
              c == '-' || c == 'i' || c == 'n' || c == 'f' || c == 'a' || c == 't' || c == 'y'))
            return lc_fail(r->err, LC_E_MALFORMED, op->at, "FLOAT text has byte 0x%02x", c);
    }
    memcpy(tmp, op->p, (size_t)op->n);
    tmp[op->n] = '\0';
    char *end;
    op->f = strtod(tmp, &end);
    if (end != tmp + op->n)
        return lc_fail(r->err, LC_E_MALFORMED, op->at, "FLOAT text '%s' is not a number", tmp);
    return LC_OK;
}

lc_code lc_pickle_op_read(lc_rd *r, lc_pickle_op *op, lc_error *err) {
    memset(op, 0, sizeof *op);
    op->at = lc_rd_at(r);
    r->err = err;
    LC_TRY(lc_rd_u8(r, &op->code, "opcode"));
    uint8_t u8;
    uint16_t u16;
    uint32_t u32;
    uint64_t u64;
    bool fits;
    switch (op->code) {
    case OP_MARK: case OP_STOP: case OP_POP: case OP_POP_MARK: case OP_DUP: case OP_NONE:
    case OP_BINPERSID: case OP_REDUCE: case OP_APPEND: case OP_BUILD: case OP_DICT:
    case OP_EMPTY_DICT: case OP_APPENDS: case OP_LIST: case OP_EMPTY_LIST: case OP_OBJ:
    case OP_SETITEM: case OP_TUPLE: case OP_EMPTY_TUPLE: case OP_SETITEMS: case OP_NEWOBJ:
    case OP_TUPLE1: case OP_TUPLE2: case OP_TUPLE3: case OP_NEWTRUE: case OP_NEWFALSE:
    case OP_EMPTY_SET: case OP_ADDITEMS: case OP_FROZENSET: case OP_NEWOBJ_EX:
    case OP_STACK_GLOBAL: case OP_MEMOIZE:
        return LC_OK;
    case OP_NEXT_BUFFER: case OP_READONLY_BUFFER:
        return lc_fail(err, LC_E_UNSUPPORTED, op->at,
                       "opcode 0x%02x needs out-of-band buffers, which are not supported",
                       op->code);
    case OP_PROTO:
        LC_TRY(lc_rd_u8(r, &u8, "PROTO"));
        if (u8 > 5)
            return lc_fail(err, LC_E_UNSUPPORTED, op->at, "pickle protocol %u is newer than 5",
                           u8);
        op->n_int = u8;
        return LC_OK;
    case OP_FRAME:
        LC_TRY(lc_rd_u64(r, &u64, "FRAME"));
        if (u64 > lc_rd_left(r))
            return lc_fail(err, LC_E_TRUNCATED, op->at,
                           "frame of %" PRIu64 " bytes runs past the end (%" PRIu64 " left)", u64,
                           lc_rd_left(r));
        op->n_int = (int64_t)u64;
        return LC_OK;
    case OP_BININT:
        LC_TRY(lc_rd_u32(r, &u32, "BININT"));
        op->n_int = (int32_t)u32;
        return LC_OK;
    case OP_BININT1:
        LC_TRY(lc_rd_u8(r, &u8, "BININT1"));
        op->n_int = u8;
        return LC_OK;
    case OP_BININT2:
        LC_TRY(lc_rd_u16(r, &u16, "BININT2"));
        op->n_int = u16;
        return LC_OK;
    case OP_INT:
    case OP_LONG:
        LC_TRY(read_line(r, &op->p, &op->n, op->code == OP_INT ? "INT" : "LONG"));
        if (op->code == OP_INT && op->n == 2 && op->p[0] == '0' &&
            (op->p[1] == '0' || op->p[1] == '1'))
            return LC_OK; /* "00" False, "01" True: the VM reads the text */
        if (op->code == OP_LONG && op->n && op->p[op->n - 1] == 'L')
            op->n--;
        LC_TRY(parse_decimal(op, op->at, &fits, err));
        op->big = !fits; /* the VM converts the text */
        return LC_OK;
    case OP_LONG1:
        LC_TRY(lc_rd_u8(r, &u8, "LONG1"));
        return read_len_bytes(r, u8, op, "LONG1");
    case OP_LONG4:
        LC_TRY(lc_rd_u32(r, &u32, "LONG4"));
        if ((int32_t)u32 < 0)
            return lc_fail(err, LC_E_MALFORMED, op->at, "LONG4 length %" PRId32 " is negative",
                           (int32_t)u32);
        return read_len_bytes(r, u32, op, "LONG4");
    case OP_FLOAT:
        LC_TRY(read_line(r, &op->p, &op->n, "FLOAT"));
        return parse_float_text(r, op);
    case OP_BINFLOAT: {
        const uint8_t *b;
        LC_TRY(lc_rd_bytes(r, 8, &b, "BINFLOAT"));
        uint64_t bits = 0;
        for (int i = 0; i < 8; i++)
            bits = bits << 8 | b[i]; /* big-endian, unlike everything else */
        memcpy(&op->f, &bits, sizeof op->f);
        return LC_OK;
    }
    case OP_STRING: case OP_UNICODE: case OP_PERSID:
        return read_line(r, &op->p, &op->n, "text argument");
    case OP_BINSTRING:
        LC_TRY(lc_rd_u32(r, &u32, "BINSTRING"));
        if ((int32_t)u32 < 0)
            return lc_fail(err, LC_E_MALFORMED, op->at,
                           "BINSTRING length %" PRId32 " is negative", (int32_t)u32);
        return read_len_bytes(r, u32, op, "BINSTRING");
    case OP_SHORT_BINSTRING: case OP_SHORT_BINBYTES: case OP_SHORT_BINUNICODE:
        LC_TRY(lc_rd_u8(r, &u8, "length"));
        return read_len_bytes(r, u8, op, "string");
    case OP_BINUNICODE: case OP_BINBYTES:
        LC_TRY(lc_rd_u32(r, &u32, "length"));
        return read_len_bytes(r, u32, op, "string");
    case OP_BINUNICODE8: case OP_BINBYTES8: case OP_BYTEARRAY8:
        LC_TRY(lc_rd_u64(r, &u64, "length"));
        return read_len_bytes(r, u64, op, "string");
    case OP_GLOBAL: case OP_INST:
        LC_TRY(read_line(r, &op->p, &op->n, "module name"));
        return read_line(r, &op->p2, &op->n2, "global name");
    case OP_GET: case OP_PUT:
        return read_index_line(r, op, op->code == OP_GET ? "GET" : "PUT");
    case OP_BINGET: case OP_BINPUT:
        LC_TRY(lc_rd_u8(r, &u8, "memo index"));
        return check_index(r, op, u8);
    case OP_LONG_BINGET: case OP_LONG_BINPUT:
        LC_TRY(lc_rd_u32(r, &u32, "memo index"));
        return check_index(r, op, u32);
    case OP_EXT1:
        LC_TRY(lc_rd_u8(r, &u8, "EXT1"));
        op->n_int = u8;
        return LC_OK;
    case OP_EXT2:
        LC_TRY(lc_rd_u16(r, &u16, "EXT2"));
        op->n_int = u16;
        return LC_OK;
    case OP_EXT4:
        LC_TRY(lc_rd_u32(r, &u32, "EXT4"));
        op->n_int = (int32_t)u32;
        return LC_OK;
    default:
        return lc_fail(err, LC_E_MALFORMED, op->at, "unknown opcode 0x%02x", op->code);
    }
}

/* ---- text ---- */

bool lc_pickle_op_utf8(const uint8_t *s, uint64_t n) {
    uint64_t i = 0;
    while (i < n) {
        uint8_t c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        uint32_t cp, min;
        int k;
        if ((c & 0xe0) == 0xc0) { cp = c & 0x1f; k = 1; min = 0x80; }
        else if ((c & 0xf0) == 0xe0) { cp = c & 0x0f; k = 2; min = 0x800; }
        else if ((c & 0xf8) == 0xf0) { cp = c & 0x07; k = 3; min = 0x10000; }
        else return false;
        if (n - i <= (uint64_t)k)
            return false;
        for (int j = 1; j <= k; j++) {
            if ((s[i + j] & 0xc0) != 0x80)
                return false;
            cp = cp << 6 | (s[i + j] & 0x3f);
        }
        if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
            return false;
        i += (uint64_t)k + 1;
    }
    return true;
}

static size_t put_utf8(char *d, uint32_t cp) {
    if (cp < 0x80) { d[0] = (char)cp; return 1; }
    if (cp < 0x800) {
        d[0] = (char)(0xc0 | cp >> 6);
        d[1] = (char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        d[0] = (char)(0xe0 | cp >> 12);
        d[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        d[2] = (char)(0x80 | (cp & 0x3f));
        return 3;
    }
    d[0] = (char)(0xf0 | cp >> 18);
    d[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
    d[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
    d[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}

static int hexval(uint8_t c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Python's raw-unicode-escape: bytes are Latin-1 code points, except that \uXXXX and
 * \UXXXXXXXX after an odd run of backslashes are escapes. */
static lc_code raw_unicode_escape(const lc_pickle_op *op, char *d, uint64_t *len, lc_error *err) {
    const uint8_t *s = op->p;
    uint64_t n = op->n, i = 0, o = 0;
    while (i < n) {
        if (s[i] != '\\') {
            o += put_utf8(d + o, s[i++]);
            continue;
        }
        uint64_t run = 0;
        while (i < n && s[i] == '\\') {
            d[o++] = '\\';
            i++;
            run++;
        }
        if ((run & 1) == 0 || i >= n || (s[i] != 'u' && s[i] != 'U'))
            continue;
        o--; /* the last backslash starts the escape */
        int digits = s[i] == 'u' ? 4 : 8;
        i++;
        if (n - i < (uint64_t)digits)
            return lc_fail(err, LC_E_MALFORMED, op->at, "UNICODE text has a truncated escape");
        uint32_t cp = 0;
        for (int k = 0; k < digits; k++) {
            int h = hexval(s[i + (uint64_t)k]);
            if (h < 0)
                return lc_fail(err, LC_E_MALFORMED, op->at, "UNICODE text has a bad escape");
            cp = cp << 4 | (uint32_t)h;
        }
        i += (uint64_t)digits;
        if (cp > 0x10ffff)
            return lc_fail(err, LC_E_MALFORMED, op->at, "UNICODE escape U+%X is beyond U+10FFFF",
                           (unsigned)cp);
        if (cp >= 0xd800 && cp <= 0xdfff)
            return lc_fail(err, LC_E_UNSUPPORTED, op->at,
                           "UNICODE text has a lone surrogate U+%04X", (unsigned)cp);
        o += put_utf8(d + o, cp);
    }
    *len = o;
    return LC_OK;
}

/* Python's escape_decode over the quoted STRING argument (a bytes literal's escapes). */
static lc_code string_escape(const lc_pickle_op *op, char *d, uint64_t *len, lc_error *err) {
    const uint8_t *s = op->p;
    uint64_t n = op->n;
    if (n < 2 || s[0] != s[n - 1] || (s[0] != '\'' && s[0] != '"'))
        return lc_fail(err, LC_E_MALFORMED, op->at, "STRING argument is not quoted");
    uint64_t i = 1, o = 0;
    n--;
    while (i < n) {
        if (s[i] != '\\') {
            d[o++] = (char)s[i++];
            continue;
        }
        if (++i >= n)
            return lc_fail(err, LC_E_MALFORMED, op->at, "STRING argument ends with a backslash");
        uint8_t c = s[i++];
        switch (c) {
        case '\\': case '\'': case '"': d[o++] = (char)c; break;
        case 'a': d[o++] = '\a'; break;
        case 'b': d[o++] = '\b'; break;
        case 'f': d[o++] = '\f'; break;
        case 'n': d[o++] = '\n'; break;
        case 'r': d[o++] = '\r'; break;
        case 't': d[o++] = '\t'; break;
        case 'v': d[o++] = '\v'; break;
        case 'x': {
            int h1 = i < n ? hexval(s[i]) : -1, h2 = i + 1 < n ? hexval(s[i + 1]) : -1;
            if (h1 < 0 || h2 < 0)
                return lc_fail(err, LC_E_MALFORMED, op->at, "STRING argument has a bad \\x escape");
            d[o++] = (char)(h1 << 4 | h2);
            i += 2;
            break;
        }
        default:
            if (c >= '0' && c <= '7') {
                unsigned v = c - '0';
                for (int k = 0; k < 2 && i < n && s[i] >= '0' && s[i] <= '7'; k++)
                    v = v * 8 + (unsigned)(s[i++] - '0');
                d[o++] = (char)(v & 0xff);
            } else { /* unknown escapes stay as written */
                d[o++] = '\\';
                d[o++] = (char)c;
            }
        }
    }
    *len = o;
    return LC_OK;
}

lc_code lc_pickle_op_text(lc_pickle_op_arena *a, const lc_pickle_op *op, char **s,
                          uint64_t *len, lc_error *err) {
    uint64_t cap;
    if (lc_mul_u64(op->n, 2, &cap) || lc_add_u64(cap, 1, &cap))
        return lc_fail(err, LC_E_OVERFLOW, op->at, "string of %" PRIu64 " bytes", op->n);
    char *d = lc_pickle_op_alloc(a, cap);
    if (!d)
        return lc_fail(err, a->total + cap > a->limit ? LC_E_OVERFLOW : LC_E_NOMEM, op->at,
                       "no memory for a string of %" PRIu64 " bytes", op->n);
    uint64_t n = op->n;
    switch (op->code) {
    case OP_UNICODE:
        LC_TRY(raw_unicode_escape(op, d, &n, err));
        break;
    case OP_STRING:
        LC_TRY(string_escape(op, d, &n, err));
        break;
    case OP_PERSID:
        for (uint64_t i = 0; i < n; i++)
            if (op->p[i] >= 0x80)
                return lc_fail(err, LC_E_MALFORMED, op->at, "PERSID text is not ASCII");
        /* fall through */
    default:
        memcpy(d, op->p, (size_t)n);
    }
    /* STRING forms are Python 2 byte strings: torch.load reads them as UTF-8. */
    if (!lc_pickle_op_utf8((const uint8_t *)d, n))
        return lc_fail(err, LC_E_MALFORMED, op->at, "string is not valid UTF-8");
    d[n] = '\0';
    *s = d;
    *len = n;
    return LC_OK;
}

lc_code lc_pickle_op_name(lc_pickle_op_arena *a, const lc_pickle_op *op, const uint8_t *p,
                          uint64_t n, char **s, lc_error *err) {
    if (n == 0 || memchr(p, 0, (size_t)n) || !lc_pickle_op_utf8(p, n))
        return lc_fail(err, LC_E_MALFORMED, op->at,
                       "global name is empty, holds a NUL or is not UTF-8");
    char *d = lc_pickle_op_alloc(a, n + 1);
    if (!d)
        return lc_fail(err, LC_E_NOMEM, op->at, "no memory for a global name");
    memcpy(d, p, (size_t)n);
    d[n] = '\0';
    *s = d;
    return LC_OK;
}

/* ---- allowlist ---- */

/* Every name a real checkpoint needs, and nothing that acts: nothing here is ever
 * called, but keeping the list to data-shaped names keeps the tree we hand to walkers
 * to shapes they know. numpy: training checkpoints hold numpy scalars (scalar + dtype)
 * and arrays (_reconstruct + ndarray + dtype), under numpy.core (numpy 1) or
 * numpy._core (numpy 2). Left out on purpose, so refused by name: quantized tensors
 * (_rebuild_qtensor, the Q*Storage classes, torch.per_tensor_affine...), sparse and
 * nested tensors, builtins.slice/complex/getattr, copyreg._reconstructor (it
 * instantiates arbitrary classes), and every torch function that is not a rebuild
 * helper (torch.load, torch.hub.load). */
static const char *const k_allowed[][2] = {
    {"collections", "OrderedDict"},
    {"builtins", "set"}, {"builtins", "frozenset"}, {"builtins", "bytearray"},
    {"builtins", "bytes"}, {"_codecs", "encode"},
    {"torch._utils", "_rebuild_tensor"}, {"torch._utils", "_rebuild_tensor_v2"},
    {"torch._utils", "_rebuild_tensor_v3"}, {"torch._utils", "_rebuild_parameter"},
    {"torch._utils", "_rebuild_parameter_with_state"},
    {"torch._utils", "_rebuild_device_tensor_from_numpy"},
    {"torch._utils", "_rebuild_meta_tensor_no_storage"},
    {"torch._tensor", "_rebuild_from_type_v2"},
    {"torch", "Tensor"}, {"torch.nn.parameter", "Parameter"},
    {"torch", "Size"}, {"torch", "device"},
    {"torch", "FloatStorage"}, {"torch", "DoubleStorage"}, {"torch", "HalfStorage"},
    {"torch", "BFloat16Storage"}, {"torch", "LongStorage"}, {"torch", "IntStorage"},
    {"torch", "ShortStorage"}, {"torch", "CharStorage"}, {"torch", "ByteStorage"},
    {"torch", "BoolStorage"}, {"torch", "ComplexFloatStorage"},
    {"torch", "ComplexDoubleStorage"}, {"torch", "UntypedStorage"},
    {"torch.storage", "UntypedStorage"}, {"torch.storage", "TypedStorage"},
    {"torch", "float32"}, {"torch", "float"}, {"torch", "float64"}, {"torch", "double"},
    {"torch", "float16"}, {"torch", "half"}, {"torch", "bfloat16"}, {"torch", "int64"},
    {"torch", "long"}, {"torch", "int32"}, {"torch", "int"}, {"torch", "int16"},
    {"torch", "short"}, {"torch", "int8"}, {"torch", "uint8"}, {"torch", "bool"},
    {"torch", "uint16"}, {"torch", "uint32"}, {"torch", "uint64"},
    {"torch", "complex64"}, {"torch", "complex128"}, {"torch", "cfloat"}, {"torch", "cdouble"},
    {"torch", "float8_e4m3fn"}, {"torch", "float8_e5m2"}, {"torch", "float8_e4m3fnuz"},
    {"torch", "float8_e5m2fnuz"}, {"torch", "float8_e8m0fnu"},
    {"numpy.core.multiarray", "scalar"}, {"numpy._core.multiarray", "scalar"},
    {"numpy.core.multiarray", "_reconstruct"}, {"numpy._core.multiarray", "_reconstruct"},
    {"numpy", "dtype"}, {"numpy", "ndarray"},
};

const char *lc_pickle_op_module(const char *module) {
    if (strcmp(module, "__builtin__") == 0)
        return "builtins";
    if (strcmp(module, "copy_reg") == 0)
        return "copyreg";
    return module;
}

const char *const *lc_pickle_op_allowed_entry(const char *module, const char *name) {
    if (!module || !name)
        return NULL;
    module = lc_pickle_op_module(module);
    for (size_t i = 0; i < sizeof k_allowed / sizeof k_allowed[0]; i++)
        if (strcmp(k_allowed[i][0], module) == 0 && strcmp(k_allowed[i][1], name) == 0)
            return k_allowed[i];
    return NULL;
}

bool lc_pickle_op_allowed(const char *module, const char *name) {
    return lc_pickle_op_allowed_entry(module, name) != NULL;
}
