/* formats/gguf.c: GGUF reader (zero-copy over a map) and streaming writer.
 *
 *   offset  size         field
 *   0       4            magic "GGUF"
 *   4       4            u32 version (2, 3; a byte-swapped 2 or 3 means big-endian)
 *   8       8            u64 n_tensors
 *   16      8            u64 n_kv
 *   24      ...          n_kv x | u64 keylen | key | u32 vtype | value |
 *                          value: scalar (1/2/4/8 bytes), string | u64 len | bytes |,
 *                          array  | u32 elem vtype | u64 count | count x value |
 *           ...          n_tensors x | u64 namelen | name | u32 n_dims | u64 ne[n_dims] |
 *                                    | u32 ggml type | u64 offset |
 *           pad          zeros up to a multiple of the alignment
 *   D       ...          data: tensor i at D + offset_i, offset_0 = 0,
 *                          offset_{i+1} = offset_i + pad(nbytes_i); each tensor padded
 *
 * Reader policy (ggml's gguf.cpp is the loader our files must satisfy, so we hold
 * input to the same rules): offsets must equal the running sum exactly, which also
 * rules out overlap and gaps; bytes after the last tensor are allowed (ggml ignores
 * them); bools must be 0 or 1 so a copy is byte-identical; names and keys may not
 * contain NUL because the IR keeps them as C strings. */
#include "formats/gguf.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "libconvert/alloc.h"
#include "libconvert/bytes.h"
#include "libconvert/json.h"
#include "libconvert/map.h"
#include "libconvert/outfile.h"
#include "libconvert/segments.h"
#include "libconvert/rd.h"

/* Smallest wire size of a metadata entry (empty key, u32 type, u8 value) and of a
 * tensor info (empty name, n_dims 0, type, offset): counts are checked against these
 * before the loop so a huge count fails at once. */
#define MIN_KV_BYTES 13u
#define MIN_TENSOR_INFO_BYTES 24u

static const char ALIGNMENT_KEY[] = "general.alignment";

static bool is_pow2(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

/* Smallest wire size of one value of type t (arrays: empty array). */
static uint64_t min_value_bytes(lc_vtype t) {
    if (t == LC_VT_STRING)
        return 8;
    if (t == LC_VT_ARRAY)
        return 12;
    return lc_vtype_size(t);
}

/* ---- the rules a file is held to ----
 *
 * Every rule the reader checks, with its source, in one table. Sources: "ggml" is
 * gguf_init_from_reader in ggml's src/gguf.cpp (ggml-org/ggml d99724f2, the file
 * llama.cpp carries as ggml/src/gguf.cpp), "loader" llama.cpp's llama-model-loader.cpp,
 * "spec" ggml's docs/gguf.md, "ours" a limit of our own. Levels:
 *   FATAL   refused in every mode: the file cannot be laid out or read without it;
 *   REFUSE  refused by lc_gguf_load; a lenient open (model-inspect) records a warning
 *           (lc_model_warn, refused = true) and reads on;
 *   NOTE    accepted, because real producers write it and we read it fine, but the
 *           spec or llama.cpp does not: only a lenient open checks it, as a warning.
 * Not rules: version 2 (the spec says 3; ggml reads 2 and so do we), bytes after the
 * last tensor (ggml ignores them), lower-case architecture names (llama.cpp's own
 * "command-r" breaks the spec's [a-z0-9]+). */
typedef enum { FATAL, REFUSE, NOTE } rule_level;

typedef enum {
    R_MAGIC, R_BIG_ENDIAN, R_VERSION, R_COUNTS, R_TRUNCATED,
    R_KEY_NUL, R_KEY_EMPTY, R_KEY_LONG, R_KEY_CONTROL, R_KEY_SEGMENT, R_KEY_ASCII, R_KEY_CASE,
    R_KEY_DUP, R_VALUE_TYPE, R_STRING_LONG, R_STRING_UTF8, R_ARRAY_LONG, R_ARRAY_DEPTH,
    R_ARRAY_NESTED, R_BOOL, R_ALIGN_TYPE, R_ALIGN_VALUE,
    R_NAME_NUL, R_NAME_LONG, R_NAME_DUP, R_NDIMS, R_NE_NEGATIVE, R_NUMEL, R_TYPE,
    R_ROW_BLOCKS, R_NBYTES, R_OFFSET_ALIGNED, R_OFFSET_SUM, R_DATA_START, R_HEADER_PAD,
    R_DATA_BOUNDS, R_TENSOR_PAD, R_DATA_END, R_QUANT_VERSION, R_ARCH,
    R_COUNT
} rule_id;

static const struct {
    const char *id;
    rule_level  level;
    lc_code     code;
    const char *source;
} RULES[R_COUNT] = {
    [R_MAGIC]         = { "gguf.magic", FATAL, LC_E_MALFORMED, "spec, ggml: \"GGUF\"" },
    [R_BIG_ENDIAN]    = { "gguf.big-endian", FATAL, LC_E_UNSUPPORTED,
                          "ggml: version & 0xffff == 0 is the other byte order" },
    [R_VERSION]       = { "gguf.version", FATAL, LC_E_UNSUPPORTED,
                          "ggml: 0, 1 (obsolete) and above 3 refused" },
    [R_COUNTS]        = { "gguf.counts", FATAL, LC_E_TRUNCATED,
                          "ours: both counts fit in the bytes left (ggml: SIZE_MAX bound)" },
    [R_TRUNCATED]     = { "gguf.truncated", FATAL, LC_E_TRUNCATED,
                          "ggml: every field within the file" },
    [R_KEY_NUL]       = { "gguf.key-nul", FATAL, LC_E_MALFORMED,
                          "ours: keys are C strings in the IR (spec: ASCII)" },
    [R_KEY_EMPTY]     = { "gguf.key-empty", REFUSE, LC_E_MALFORMED,
                          "ggml (llama/24917): empty keys refused" },
    [R_KEY_LONG]      = { "gguf.key-too-long", REFUSE, LC_E_MALFORMED,
                          "spec: a key is at most 65535 bytes" },
    [R_KEY_CONTROL]   = { "gguf.key-control", REFUSE, LC_E_MALFORMED,
                          "spec: ASCII lower_snake_case, so never a control byte or DEL" },
    [R_KEY_SEGMENT]   = { "gguf.key-segment", REFUSE, LC_E_MALFORMED,
                          "spec: segments separated by '.', none empty" },
    [R_KEY_ASCII]     = { "gguf.key-ascii", NOTE, LC_E_MALFORMED,
                          "spec: keys are ASCII (gguf-py writes any UTF-8, ggml reads it)" },
    [R_KEY_CASE]      = { "gguf.key-case", NOTE, LC_E_MALFORMED,
                          "spec: segments are lower_snake_case (llama.cpp writes "
                          "command-r.*)" },
    [R_KEY_DUP]       = { "gguf.key-duplicate", REFUSE, LC_E_MALFORMED,
                          "ggml, spec: duplicate keys refused" },
    [R_VALUE_TYPE]    = { "gguf.value-type", FATAL, LC_E_MALFORMED,
                          "ggml, spec: value types 0..12" },
    [R_STRING_LONG]   = { "gguf.string-too-long", FATAL, LC_E_OVERFLOW,
                          "ggml: GGUF_MAX_STRING_LENGTH, 1 GiB" },
    [R_STRING_UTF8]   = { "gguf.string-utf8", NOTE, LC_E_MALFORMED,
                          "spec: strings are UTF-8 (ggml does not check)" },
    [R_ARRAY_LONG]    = { "gguf.array-too-long", FATAL, LC_E_OVERFLOW,
                          "ggml: GGUF_MAX_ARRAY_ELEMENTS, 2^30" },
    [R_ARRAY_DEPTH]   = { "gguf.array-depth", FATAL, LC_E_OVERFLOW,
                          "ours: arrays nested at most LC_GGUF_MAX_DEPTH deep" },
    [R_ARRAY_NESTED]  = { "gguf.array-nested", NOTE, LC_E_UNSUPPORTED,
                          "ggml refuses arrays of arrays; the spec allows them, gguf-py "
                          "writes them" },
    [R_BOOL]          = { "gguf.bool", REFUSE, LC_E_MALFORMED,
                          "spec: a bool is 0 or 1, anything else invalid (ggml: != 0)" },
    [R_ALIGN_TYPE]    = { "gguf.alignment-type", REFUSE, LC_E_MALFORMED,
                          "ggml (llama/25596): general.alignment is a u32" },
    [R_ALIGN_VALUE]   = { "gguf.alignment-value", REFUSE, LC_E_MALFORMED,
                          "ggml: a power of two; spec: a multiple of 8" },
    [R_NAME_NUL]      = { "gguf.name-nul", FATAL, LC_E_MALFORMED,
                          "ours: names are C strings in the IR" },
    [R_NAME_LONG]     = { "gguf.name-too-long", REFUSE, LC_E_MALFORMED,
                          "ggml: shorter than GGML_MAX_NAME (64); spec: at most 64 bytes" },
    [R_NAME_DUP]      = { "gguf.name-duplicate", REFUSE, LC_E_MALFORMED,
                          "ggml, loader: duplicate tensor names refused" },
    [R_NDIMS]         = { "gguf.n-dims", REFUSE, LC_E_MALFORMED,
                          "ggml: at most GGML_MAX_DIMS (4); spec (above LC_MAX_DIMS: "
                          "fatal)" },
    [R_NE_NEGATIVE]   = { "gguf.ne-negative", FATAL, LC_E_OVERFLOW,
                          "ggml: each ne[] a non-negative int64" },
    [R_NUMEL]         = { "gguf.numel", FATAL, LC_E_OVERFLOW,
                          "ggml: element count below INT64_MAX, checked as it does" },
    [R_TYPE]          = { "gguf.type", FATAL, LC_E_UNSUPPORTED,
                          "ggml: a type below GGML_TYPE_COUNT with a block size (ours: "
                          "one the IR knows)" },
    [R_ROW_BLOCKS]    = { "gguf.row-blocks", FATAL, LC_E_MALFORMED,
                          "ggml: ne[0] a multiple of the type's block size" },
    [R_NBYTES]        = { "gguf.nbytes", FATAL, LC_E_OVERFLOW,
                          "ggml: byte size representable" },
    [R_OFFSET_ALIGNED]= { "gguf.offset-aligned", REFUSE, LC_E_MALFORMED,
                          "spec: each offset a multiple of the alignment" },
    [R_OFFSET_SUM]    = { "gguf.offset-order", REFUSE, LC_E_MALFORMED,
                          "ggml: each offset is the running sum of padded sizes" },
    [R_DATA_START]    = { "gguf.data-start", FATAL, LC_E_TRUNCATED,
                          "ggml: the padded data section starts within the file" },
    [R_HEADER_PAD]    = { "gguf.header-padding", REFUSE, LC_E_MALFORMED,
                          "spec: padding to the alignment is 0x00 bytes" },
    [R_DATA_BOUNDS]   = { "gguf.data-bounds", FATAL, LC_E_TRUNCATED,
                          "loader: each tensor's data within the file" },
    [R_TENSOR_PAD]    = { "gguf.tensor-padding", NOTE, LC_E_MALFORMED,
                          "spec: space between tensors should be padded with 0x00" },
    [R_DATA_END]      = { "gguf.data-end", NOTE, LC_E_TRUNCATED,
                          "ggml (no_alloc = false, as gguf-split reads): the data section "
                          "with the last tensor's padding within the file (llama.cpp's "
                          "loader needs only each tensor's bytes)" },
    [R_QUANT_VERSION] = { "gguf.quantization-version", NOTE, LC_E_NOTFOUND,
                          "spec: general.quantization_version (u32) when a tensor is "
                          "quantized" },
    [R_ARCH]          = { "gguf.architecture", NOTE, LC_E_NOTFOUND,
                          "spec, loader: general.architecture, a string, in a model" },
};

/* ---- reader ---- */

typedef struct parser {
    lc_rd     r;
    lc_model *m;
    bool      lenient;
    lc_error *err;
} parser;

/* Rule `id` broken at file offset `at`; `where` names the key or tensor (or NULL).
 * Returns the rule's code when the file is refused here: always for FATAL, for
 * REFUSE unless lenient. Otherwise records a warning and returns LC_OK (LC_E_NOMEM
 * when even that fails): the caller reads on as its comment says. NOTE rules are
 * only checked by callers when lenient. */
static lc_code broke(parser *p, rule_id id, uint64_t at, const char *where, const char *fmt,
                     ...) __attribute__((format(printf, 5, 6)));
static lc_code broke(parser *p, rule_id id, uint64_t at, const char *where, const char *fmt,
                     ...) {
    lc_error e = { 0 };
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e.msg, sizeof e.msg, fmt, ap);
    va_end(ap);
    e.code = RULES[id].code;
    e.offset = at;
    if (RULES[id].level == FATAL || (RULES[id].level == REFUSE && !p->lenient)) {
        lc_fail(p->err, e.code, at, "%s", e.msg);
        lc_err_context(p->err, NULL, where);
        return e.code;
    }
    lc_err_context(&e, NULL, where);
    return lc_model_warn(p->m, RULES[id].id, RULES[id].level == REFUSE, &e, p->err);
}

/* A borrowed string view; at is the offset of its length field. */
static lc_code read_str(parser *p, const char **s, uint64_t *len, const char *what) {
    lc_rd *r = &p->r;
    const uint64_t at = lc_rd_at(r);
    LC_TRY(lc_rd_u64(r, len, what));
    if (*len > lc_rd_left(r))
        return lc_fail(r->err, LC_E_TRUNCATED, at,
                       "%s of %" PRIu64 " bytes runs past the end (%" PRIu64 " bytes left)",
                       what, *len, lc_rd_left(r));
    if (*len > LC_GGUF_MAX_STRING)
        return broke(p, R_STRING_LONG, at, NULL, "%s of %" PRIu64 " bytes, ggml reads at most "
                     "%" PRIu64, what, *len, (uint64_t)LC_GGUF_MAX_STRING);
    *s = (const char *)r->base + r->pos;
    r->pos += *len;
    return LC_OK;
}

/* Reads a key or tensor name into a new C string; NUL bytes are refused. */
static lc_code read_name(parser *p, char **out, bool key) {
    const char *what = key ? "metadata key" : "tensor name";
    const uint64_t at = lc_rd_at(&p->r);
    const char *s;
    uint64_t len;
    *out = NULL;
    LC_TRY(read_str(p, &s, &len, what));
    if (memchr(s, '\0', (size_t)len))
        return broke(p, key ? R_KEY_NUL : R_NAME_NUL, at, NULL, "%s contains a NUL byte", what);
    if (!(*out = lc_strndup(s, (size_t)len)))
        return lc_fail(p->err, LC_E_NOMEM, at, "out of memory copying a %" PRIu64 "-byte %s",
                       len, what);
    return LC_OK;
}

/* The spec's key grammar, the part every producer keeps: not empty, at most 65535
 * bytes, no control byte or DEL, no empty '.'-separated segment. Returns the rule a
 * key breaks (R_COUNT: none) with a message in msg. The reader and the writer share
 * it: we write no key we would refuse to read. */
static rule_id key_fault(const char *key, char *msg, size_t cap) {
    const size_t len = strlen(key);
    if (len == 0) {
        snprintf(msg, cap, "metadata key is empty");
        return R_KEY_EMPTY;
    }
    if (len > LC_GGUF_MAX_KEY) {
        snprintf(msg, cap, "metadata key of %zu bytes, the spec allows %d", len,
                 LC_GGUF_MAX_KEY);
        return R_KEY_LONG;
    }
    for (size_t i = 0; i < len; i++) {
        const uint8_t c = (uint8_t)key[i];
        if (c < 0x20 || c == 0x7f) {
            snprintf(msg, cap, "metadata key holds the control byte 0x%02x at %zu", c, i);
            return R_KEY_CONTROL;
        }
        if (c == '.' && (i == 0 || i + 1 == len || key[i + 1] == '.')) {
            snprintf(msg, cap, "metadata key has an empty segment at byte %zu", i + (i > 0));
            return R_KEY_SEGMENT;
        }
    }
    return R_COUNT;
}

/* What real producers break of the spec's key grammar (UTF-8, upper case, '-') is a
 * NOTE, for a lenient open; the rest (key_fault) is refused. */
static lc_code check_key(parser *p, const char *key, uint64_t at) {
    char msg[96];
    const rule_id fault = key_fault(key, msg, sizeof msg);
    if (fault != R_COUNT)
        return broke(p, fault, at, key[0] ? key : NULL, "%s", msg);
    if (!p->lenient)
        return LC_OK;
    bool ascii = true, snake = true;
    /* llama.cpp names some architectures with a hyphen (command-r, gpt-oss, nomic-bert-moe)
     * and prefixes their keys with that name: the file's own architecture is no fault. */
    const lc_value *arch = lc_model_find_meta(p->m, "general.architecture");
    const char *from = key;
    if (arch && arch->type == LC_VT_STRING && arch->str.len && arch->str.len < strlen(key) &&
        memcmp(key, arch->str.ptr, (size_t)arch->str.len) == 0 && key[arch->str.len] == '.') {
        from = key + arch->str.len;
        for (const char *c = key; c < from; c++)   /* lower case, digits, '_' and '-' only */
            if (!(*c == '-' || *c == '_' || (*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9')))
                from = key;
    }
    for (const uint8_t *c = (const uint8_t *)key; *c; c++) {
        ascii &= *c < 0x80;
        if (c < (const uint8_t *)from)
            continue;
        snake &= *c == '.' || *c == '_' || (*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9');
    }
    if (!ascii)
        return broke(p, R_KEY_ASCII, at, key, "metadata key is not ASCII");
    if (!snake)
        return broke(p, R_KEY_CASE, at, key, "metadata key is not lower_snake_case");
    return LC_OK;
}

static lc_code read_vtype(lc_rd *r, lc_vtype *t, const char *what) {
    const uint64_t at = lc_rd_at(r);
    uint32_t v;
    LC_TRY(lc_rd_u32(r, &v, what));
    if (v >= LC_VT_COUNT)
        return lc_fail(r->err, LC_E_MALFORMED, at, "unknown %s %" PRIu32 " (0..12 exist)", what,
                       v);
    *t = (lc_vtype)v;
    return LC_OK;
}

static lc_code read_value(parser *p, lc_vtype t, int depth, const char *key, lc_value *out);

/* One string value's checks (read_str's, and UTF-8 when lenient); *s is a view. */
static lc_code read_string(parser *p, const char *key, const char **s, uint64_t *len) {
    const uint64_t at = lc_rd_at(&p->r);
    LC_TRY(read_str(p, s, len, "string value"));
    if (p->lenient && lc_json_utf8_valid_prefix((const uint8_t *)*s, (size_t)*len) != *len)
        LC_TRY(broke(p, R_STRING_UTF8, at, key, "string value is not valid UTF-8"));
    return LC_OK;
}

/* count strings into one packed array: a first pass checks them and sums their bytes
 * (at most what the wire holds), a second copies them, so the array costs its text,
 * a NUL and an 8-byte offset per string: never more than the wire's bytes + 1/8. */
static lc_code read_strings(parser *p, uint64_t count, const char *key, lc_value *out) {
    lc_rd *r = &p->r;
    const uint64_t start = r->pos;
    uint64_t bytes = 0, len;
    const char *s;
    for (uint64_t k = 0; k < count; k++) {
        LC_TRY(read_string(p, key, &s, &len));
        bytes += len;   /* each len fits in the file, so the sum does too */
    }
    lc_value v;
    LC_TRY(lc_value_string_array(&v, count, bytes, r->err));
    r->pos = start;
    for (uint64_t k = 0; k < count; k++) {
        len = lc_load_le64(r->base + r->pos);   /* checked by the first pass */
        s = (const char *)r->base + r->pos + 8;
        r->pos += 8 + len;
        lc_code rc = lc_value_arr_set_str(&v, k, s, (size_t)len, r->err);
        if (rc != LC_OK) {
            lc_value_clear(&v);
            return rc;
        }
    }
    *out = v;
    return LC_OK;
}

/* count scalars of type elem, copied as they are on the wire (value.h keeps them
 * packed the same way); bools are checked one by one as read_value does. */
static lc_code read_scalars(parser *p, lc_vtype elem, uint64_t count, const char *key,
                            lc_value *out) {
    lc_rd *r = &p->r;
    const uint64_t at = lc_rd_at(r);
    const uint8_t *b;
    LC_TRY(lc_rd_bytes(r, count * lc_vtype_size(elem), &b, "array items"));
    if (elem == LC_VT_BOOL) {
        for (uint64_t k = 0; k < count; k++)
            if (b[k] > 1)   /* lenient: read as ggml does, nonzero is true */
                LC_TRY(broke(p, R_BOOL, at + k, key, "bool value is %u, not 0 or 1", b[k]));
    }
    lc_value v;
    LC_TRY(lc_value_array(&v, elem, count, r->err));
    uint8_t *dst = lc_value_arr_data(&v);
    if (elem == LC_VT_BOOL) {
        for (uint64_t k = 0; k < count; k++)
            dst[k] = b[k] != 0;
    } else if (count) {
        memcpy(dst, b, (size_t)(count * lc_vtype_size(elem)));
    }
    *out = v;
    return LC_OK;
}

static lc_code read_array(parser *p, int depth, const char *key, lc_value *out) {
    lc_rd *r = &p->r;
    const uint64_t at = lc_rd_at(r);
    lc_vtype elem;
    uint64_t count, need;
    if (depth >= LC_GGUF_MAX_DEPTH)
        return lc_fail(r->err, LC_E_OVERFLOW, at, "arrays nested deeper than %d levels",
                       LC_GGUF_MAX_DEPTH);
    LC_TRY(read_vtype(r, &elem, "array element type"));
    const uint64_t count_at = lc_rd_at(r);
    LC_TRY(lc_rd_u64(r, &count, "array count"));
    if (lc_mul_u64(count, min_value_bytes(elem), &need))
        return lc_fail(r->err, LC_E_OVERFLOW, count_at,
                       "array of %" PRIu64 " %s items overflows 64 bits", count,
                       lc_vtype_name(elem));
    if (need > lc_rd_left(r))
        return lc_fail(r->err, LC_E_TRUNCATED, count_at,
                       "array of %" PRIu64 " %s items needs at least %" PRIu64
                       " bytes, %" PRIu64 " left", count, lc_vtype_name(elem), need,
                       lc_rd_left(r));
    if (count > LC_GGUF_MAX_ARRAY)
        return broke(p, R_ARRAY_LONG, count_at, key, "array of %" PRIu64 " items, ggml reads at "
                     "most %" PRIu64, count, (uint64_t)LC_GGUF_MAX_ARRAY);
    if (p->lenient && elem == LC_VT_ARRAY && depth == 0)
        LC_TRY(broke(p, R_ARRAY_NESTED, at, key, "an array of arrays, which llama.cpp cannot "
                     "load"));
    if (elem == LC_VT_STRING)
        return read_strings(p, count, key, out);
    if (elem != LC_VT_ARRAY)
        return read_scalars(p, elem, count, key, out);
    lc_value v;
    LC_TRY(lc_value_array(&v, elem, count, r->err));
    for (uint64_t k = 0; k < count; k++) {
        lc_value item;
        lc_code rc = read_value(p, elem, depth + 1, key, &item);
        if (rc == LC_OK)
            rc = lc_value_arr_set(&v, k, item, r->err);   /* takes item */
        if (rc != LC_OK) {
            lc_value_clear(&v);
            return rc;
        }
    }
    *out = v;
    return LC_OK;
}

static lc_code read_value(parser *p, lc_vtype t, int depth, const char *key, lc_value *out) {
    lc_rd *r = &p->r;
    const uint64_t at = lc_rd_at(r);
    const uint8_t *b;
    switch (t) {
    case LC_VT_STRING: {
        const char *s;
        uint64_t len;
        LC_TRY(read_string(p, key, &s, &len));
        return lc_value_string(out, s, (size_t)len, r->err);
    }
    case LC_VT_ARRAY:
        return read_array(p, depth, key, out);
    case LC_VT_BOOL:
        LC_TRY(lc_rd_bytes(r, 1, &b, "bool value"));
        if (b[0] > 1)   /* lenient: read as ggml does, nonzero is true */
            LC_TRY(broke(p, R_BOOL, at, key, "bool value is %u, not 0 or 1", b[0]));
        *out = lc_value_bool(b[0] != 0);
        return LC_OK;
    default:
        break;
    }
    LC_TRY(lc_rd_bytes(r, lc_vtype_size(t), &b, "metadata value"));
    switch (t) {
    case LC_VT_U8:  *out = lc_value_uint(t, b[0]); break;
    case LC_VT_U16: *out = lc_value_uint(t, lc_load_le16(b)); break;
    case LC_VT_U32: *out = lc_value_uint(t, lc_load_le32(b)); break;
    case LC_VT_U64: *out = lc_value_uint(t, lc_load_le64(b)); break;
    case LC_VT_I8:  *out = lc_value_int(t, (int8_t)b[0]); break;
    case LC_VT_I16: *out = lc_value_int(t, (int16_t)lc_load_le16(b)); break;
    case LC_VT_I32: *out = lc_value_int(t, (int32_t)lc_load_le32(b)); break;
    case LC_VT_I64: *out = lc_value_int(t, (int64_t)lc_load_le64(b)); break;
    case LC_VT_F32: *out = lc_value_float(t, lc_bits_to_f32(lc_load_le32(b))); break;
    default: {
        uint64_t u = lc_load_le64(b);
        double d;
        memcpy(&d, &u, sizeof d);
        *out = lc_value_float(t, d);
        break;
    }
    }
    return LC_OK;
}

static lc_code parse_header(lc_rd *r, lc_gguf_info *info) {
    const uint8_t *magic;
    LC_TRY(lc_rd_bytes(r, 4, &magic, "magic"));
    if (memcmp(magic, "GGUF", 4) != 0)
        return lc_fail(r->err, LC_E_MALFORMED, 0,
                       "bad magic %02x %02x %02x %02x, expected \"GGUF\"", magic[0], magic[1],
                       magic[2], magic[3]);
    uint32_t v;
    LC_TRY(lc_rd_u32(r, &v, "version"));
    const uint32_t swapped = __builtin_bswap32(v);
    if ((v & 0xffffu) == 0 && swapped >= 1 && swapped <= 3)
        return lc_fail(r->err, LC_E_UNSUPPORTED, 4,
                       "version field reads %" PRIu32 " byte-swapped: a big-endian GGUF, "
                       "which is not supported", swapped);
    if (v == 1)
        return lc_fail(r->err, LC_E_UNSUPPORTED, 4,
                       "GGUF version 1 is obsolete and not supported (only 2 and 3)");
    if (v != 2 && v != 3)
        return lc_fail(r->err, LC_E_UNSUPPORTED, 4,
                       "GGUF version %" PRIu32 " is not supported (only 2 and 3)", v);
    info->version = v;
    LC_TRY(lc_rd_u64(r, &info->n_tensors, "tensor count"));
    LC_TRY(lc_rd_u64(r, &info->n_kv, "metadata count"));
    /* Both counts must fit in what is left before anything is sized by them. */
    uint64_t t_need, kv_need, need;
    if (lc_mul_u64(info->n_tensors, MIN_TENSOR_INFO_BYTES, &t_need))
        return lc_fail(r->err, LC_E_OVERFLOW, 8, "tensor count %" PRIu64 " overflows 64 bits",
                       info->n_tensors);
    if (t_need > lc_rd_left(r))
        return lc_fail(r->err, LC_E_TRUNCATED, 8,
                       "%" PRIu64 " tensor infos need at least %" PRIu64 " bytes, %" PRIu64
                       " left", info->n_tensors, t_need, lc_rd_left(r));
    if (lc_mul_u64(info->n_kv, MIN_KV_BYTES, &kv_need) || lc_add_u64(kv_need, t_need, &need))
        return lc_fail(r->err, LC_E_OVERFLOW, 16, "metadata count %" PRIu64
                       " overflows 64 bits", info->n_kv);
    if (need > lc_rd_left(r))
        return lc_fail(r->err, LC_E_TRUNCATED, 16,
                       "%" PRIu64 " metadata entries and %" PRIu64 " tensor infos need at "
                       "least %" PRIu64 " bytes, %" PRIu64 " left", info->n_kv,
                       info->n_tensors, need, lc_rd_left(r));
    return LC_OK;
}

/* general.alignment: a u32 power of two, at least 8. Lenient: an unusable value
 * leaves the default in place and the offsets say the rest. */
static lc_code check_alignment(parser *p, const lc_value *val, uint64_t type_at,
                               uint64_t val_at, lc_gguf_info *info) {
    if (val->type != LC_VT_U32)
        return broke(p, R_ALIGN_TYPE, type_at, ALIGNMENT_KEY, "alignment has type %s, must be "
                     "u32", lc_vtype_name(val->type));
    if (!is_pow2(val->u))
        return broke(p, R_ALIGN_VALUE, val_at, ALIGNMENT_KEY,
                     "alignment %" PRIu64 " is not a nonzero power of two", val->u);
    if (val->u < 8)
        LC_TRY(broke(p, R_ALIGN_VALUE, val_at, ALIGNMENT_KEY,
                     "alignment %" PRIu64 " is not a multiple of 8", val->u));
    info->alignment = (uint32_t)val->u;
    return LC_OK;
}

/* One metadata entry; a failure names the key in err->where once it is known. */
static lc_code parse_kv(parser *p, lc_gguf_info *info) {
    lc_rd *r = &p->r;
    const uint64_t key_at = lc_rd_at(r);
    char *key = NULL;
    lc_value val = lc_value_uint(LC_VT_U8, 0);
    lc_code rc = read_name(p, &key, true);
    if (rc != LC_OK)
        return rc;
    if ((rc = check_key(p, key, key_at)) != LC_OK)
        goto done;
    /* Hashed: many keys stay linear. Lenient: the first value is kept. */
    const bool dup = lc_model_find_meta(p->m, key) != NULL;
    if (dup && (rc = broke(p, R_KEY_DUP, key_at, key, "duplicate metadata key")) != LC_OK)
        goto done;
    const uint64_t type_at = lc_rd_at(r);
    lc_vtype t;
    if ((rc = read_vtype(r, &t, "value type")) != LC_OK)
        goto done;
    const uint64_t val_at = lc_rd_at(r);
    if ((rc = read_value(p, t, 0, key, &val)) != LC_OK)
        goto done;
    if (!dup && strcmp(key, ALIGNMENT_KEY) == 0 &&
        (rc = check_alignment(p, &val, type_at, val_at, info)) != LC_OK)
        goto done;
    if (!dup)
        rc = lc_model_add_meta(p->m, key, &val, r->err);
done:
    lc_value_clear(&val);
    if (rc != LC_OK)
        lc_err_context(r->err, NULL, key);
    lc_free(key);
    return rc;
}

/* ggml's element-count rule, as gguf.cpp writes it: when no dimension is 0, each
 * partial product must stay below INT64_MAX / the next dimension. */
static bool numel_ok(const uint64_t *ne, uint32_t ndim) {
    for (uint32_t d = 0; d < ndim; d++)
        if (ne[d] == 0)
            return true;
    uint64_t prod = ndim ? ne[0] : 1;
    for (uint32_t d = 1; d < ndim; d++) {
        if ((uint64_t)INT64_MAX / ne[d] <= prod)
            return false;
        prod *= ne[d];
    }
    return prod < (uint64_t)INT64_MAX;
}

/* One tensor info; *expected is the running sum of padded sizes, advanced here. The
 * tensor's file_offset holds its offset relative to the data section until that is
 * known; *off_at is the file offset of the offset field, or LC_NO_OFFSET for a
 * duplicate a lenient open leaves out. */
static lc_code parse_tensor_info(parser *p, uint32_t align, uint64_t *expected,
                                 uint64_t *off_at) {
    lc_rd *r = &p->r;
    lc_error *err = p->err;
    const uint64_t name_at = lc_rd_at(r);
    char *name = NULL;
    lc_code rc = read_name(p, &name, false);
    if (rc != LC_OK)
        return rc;
    const size_t name_len = strlen(name);
    if (name_len >= LC_GGUF_MAX_NAME &&
        (rc = broke(p, R_NAME_LONG, name_at, name, "tensor name of %zu bytes; ggml reads names "
                    "shorter than %d", name_len, LC_GGUF_MAX_NAME)) != LC_OK)
        goto done;
    /* Lenient: the info is read and laid out, but only the first tensor is shown. */
    const bool dup = lc_model_find_tensor(p->m, name) != NULL;
    if (dup && (rc = broke(p, R_NAME_DUP, name_at, name, "duplicate tensor name")) != LC_OK)
        goto done;
    const uint64_t ndim_at = lc_rd_at(r);
    uint32_t ndim;
    if ((rc = lc_rd_u32(r, &ndim, "n_dims")) != LC_OK)
        goto done;
    if (ndim > LC_MAX_DIMS) {
        rc = lc_fail(err, LC_E_MALFORMED, ndim_at, "%" PRIu32 " dimensions, at most %d",
                     ndim, LC_GGUF_MAX_DIMS);
        goto done;
    }
    if (ndim > LC_GGUF_MAX_DIMS &&
        (rc = broke(p, R_NDIMS, ndim_at, name, "%" PRIu32 " dimensions, at most %d", ndim,
                    LC_GGUF_MAX_DIMS)) != LC_OK)
        goto done;
    const uint64_t ne_at = lc_rd_at(r);
    uint64_t ne[LC_MAX_DIMS], numel = 1;
    for (uint32_t d = 0; d < ndim; d++) {
        const uint64_t at = lc_rd_at(r);
        if ((rc = lc_rd_u64(r, &ne[d], "dimension")) != LC_OK)
            goto done;
        /* ggml keeps ne as int64_t: anything larger is negative to it. */
        if (ne[d] > (uint64_t)INT64_MAX) {
            rc = lc_fail(err, LC_E_OVERFLOW, at, "dimension %" PRIu64 " passes INT64_MAX",
                         ne[d]);
            goto done;
        }
        if (lc_mul_u64(numel, ne[d], &numel) || numel > (uint64_t)INT64_MAX) {
            rc = lc_fail(err, LC_E_OVERFLOW, ne_at, "element count of the %" PRIu32
                         "-dimensional shape overflows int64", ndim);
            goto done;
        }
    }
    if (!numel_ok(ne, ndim)) {
        rc = lc_fail(err, LC_E_OVERFLOW, ne_at, "element count of the %" PRIu32 "-dimensional "
                     "shape reaches INT64_MAX, which ggml refuses", ndim);
        goto done;
    }
    const uint64_t type_at = lc_rd_at(r);
    uint32_t type_id;
    if ((rc = lc_rd_u32(r, &type_id, "ggml type")) != LC_OK)
        goto done;
    const lc_dtype dt = lc_dtype_from_gguf(type_id);
    if (dt == LC_DT_INVALID) {
        rc = lc_fail(err, LC_E_UNSUPPORTED, type_at, "unknown ggml type %" PRIu32, type_id);
        goto done;
    }
    const uint32_t bs = lc_dtype_get(dt)->block_size;
    if (ndim > 0 && ne[0] % bs != 0) {
        rc = lc_fail(err, LC_E_MALFORMED, ne_at,
                     "row of %" PRIu64 " elements is not a multiple of %s's block of %" PRIu32,
                     ne[0], lc_dtype_name(dt), bs);
        goto done;
    }
    const uint64_t at = lc_rd_at(r);
    uint64_t off, nbytes;
    if ((rc = lc_rd_u64(r, &off, "tensor offset")) != LC_OK)
        goto done;
    if (off % align != 0 &&
        (rc = broke(p, R_OFFSET_ALIGNED, at, name, "offset %" PRIu64 " is not a multiple of "
                    "the alignment %" PRIu32, off, align)) != LC_OK)
        goto done;
    if (off != *expected &&
        (rc = broke(p, R_OFFSET_SUM, at, name, "offset %" PRIu64 " is not %" PRIu64 ", the "
                    "end of the previous tensor (overlap or gap)", off, *expected)) != LC_OK)
        goto done;
    uint64_t shape[LC_MAX_DIMS];
    for (uint32_t d = 0; d < ndim; d++)
        shape[d] = ne[ndim - 1 - d];
    if (lc_shape_nbytes(dt, ndim, shape, &nbytes, NULL) != LC_OK) {
        rc = lc_fail(err, LC_E_OVERFLOW, ne_at, "byte size of the %s tensor overflows 64 bits",
                     lc_dtype_name(dt));
        goto done;
    }
    /* ggml sums from the offsets it was given: so does the lenient reader. */
    uint64_t padded;
    if (lc_add_u64(nbytes, align - 1, &padded) ||
        lc_add_u64(off, padded & ~(uint64_t)(align - 1), expected)) {
        rc = lc_fail(err, LC_E_OVERFLOW, ne_at, "data section size overflows 64 bits");
        goto done;
    }
    *off_at = dup ? LC_NO_OFFSET : at;
    lc_tensor *t;
    if (!dup && (rc = lc_model_add_tensor(p->m, name, dt, ndim, shape, &t, err)) != LC_OK)
        goto done; /* only out of memory is left */
    if (!dup)
        t->file_offset = off;
done:
    if (rc != LC_OK)
        lc_err_context(err, NULL, name);
    lc_free(name);
    return rc;
}

static bool all_zero(const uint8_t *b, uint64_t n) {
    for (uint64_t i = 0; i < n; i++)
        if (b[i])
            return false;
    return true;
}

/* NOTE rules about the whole model, for a lenient open. */
static lc_code check_model_notes(parser *p) {
    const lc_value *arch = lc_model_find_meta(p->m, "general.architecture");
    if (!arch || arch->type != LC_VT_STRING)
        LC_TRY(broke(p, R_ARCH, LC_NO_OFFSET, "general.architecture", "general.architecture is "
                     "%s: llama.cpp cannot load this as a model", arch ? "not a string"
                                                                       : "missing"));
    const lc_value *qv = lc_model_find_meta(p->m, "general.quantization_version");
    if (qv && qv->type == LC_VT_U32)
        return LC_OK;
    for (size_t i = 0; i < lc_model_tensor_count(p->m); i++) {
        const lc_tensor *t = lc_model_tensor(p->m, i);
        if (lc_dtype_is_quant(t->dtype))
            return broke(p, R_QUANT_VERSION, LC_NO_OFFSET, "general.quantization_version",
                         "tensor %.64s is %s but general.quantization_version is %s",
                         t->name, lc_dtype_name(t->dtype), qv ? "not a u32" : "missing");
    }
    return LC_OK;
}

static lc_code parse(const uint8_t *buf, uint64_t size, bool lenient, lc_model *m,
                     lc_gguf_info *info, lc_error *err) {
    parser p = { lc_rd_init(buf, size, 0, err), m, lenient, err };
    uint64_t *off_at = NULL;
    lc_code rc;
    memset(info, 0, sizeof *info);
    info->alignment = LC_GGUF_DEFAULT_ALIGNMENT;
    if ((rc = parse_header(&p.r, info)) != LC_OK)
        return rc;
    for (uint64_t i = 0; i < info->n_kv; i++)
        if ((rc = parse_kv(&p, info)) != LC_OK)
            return rc;
    /* n_tensors * 24 <= size was checked, so this allocation is bounded by the file. */
    if (info->n_tensors &&
        !(off_at = lc_malloc_array((size_t)info->n_tensors, sizeof *off_at))) {
        rc = lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory for %" PRIu64 " tensor infos",
                     info->n_tensors);
        goto done;
    }
    uint64_t expected = 0;
    for (uint64_t i = 0; i < info->n_tensors; i++)
        if ((rc = parse_tensor_info(&p, info->alignment, &expected, &off_at[i])) != LC_OK)
            goto done;
    const uint64_t align = info->alignment;
    const uint64_t end = p.r.pos;
    info->data_offset = (end + align - 1) & ~(align - 1);  /* pos <= size: no overflow */
    if (info->n_tensors && info->data_offset > size) {
        rc = lc_fail(err, LC_E_TRUNCATED, end, "padding to the data section at %" PRIu64
                     " runs past the end of the %" PRIu64 "-byte file", info->data_offset,
                     size);
        goto done;
    }
    if (info->n_tensors && !all_zero(buf + end, info->data_offset - end) &&
        (rc = broke(&p, R_HEADER_PAD, end, NULL, "padding before the data section is not all "
                    "zero bytes")) != LC_OK)
        goto done;
    /* Infos and tensors in the same order, less the duplicates a lenient open left out. */
    for (uint64_t i = 0, k = 0; i < info->n_tensors; i++) {
        if (off_at[i] == LC_NO_OFFSET)
            continue;
        lc_tensor *t = lc_model_tensor(m, (size_t)k++);
        uint64_t start, stop;
        if (lc_add_u64(info->data_offset, t->file_offset, &start) ||
            lc_add_u64(start, t->nbytes, &stop) || stop > size) {
            rc = lc_fail(err, LC_E_TRUNCATED, off_at[i],
                         "%" PRIu64 " bytes of data at offset %" PRIu64 " run past the end "
                         "of the %" PRIu64 "-byte file", t->nbytes, t->file_offset, size);
            lc_err_context(err, NULL, t->name);
            goto done;
        }
        t->file_offset = start;
        t->data = buf + start;
        /* The pad after each tensor: read only by a lenient open (it touches every
         * tensor's last page). */
        const uint64_t pad = (align - stop % align) % align;
        if (lenient && i + 1 < info->n_tensors && stop + pad <= size &&
            !all_zero(buf + stop, pad) &&
            (rc = broke(&p, R_TENSOR_PAD, stop, t->name, "padding after the tensor is not all "
                        "zero bytes")) != LC_OK)
            goto done;
    }
    /* expected is the padded data size; every tensor ended inside the file, so the
     * sum cannot wrap. */
    if (lenient && info->n_tensors && info->data_offset + expected > size &&
        (rc = broke(&p, R_DATA_END, size, NULL, "the file ends %" PRIu64 " bytes before the "
                    "padding of its last tensor does", info->data_offset + expected - size))
        != LC_OK)
        goto done;
    if (lenient)
        rc = check_model_notes(&p);
done:
    lc_free(off_at);
    return rc;
}

lc_code lc_gguf_open_mem(const void *buf, uint64_t size, unsigned flags, lc_model **out,
                         lc_gguf_info *info, lc_error *err) {
    lc_gguf_info tmp;
    *out = NULL;
    lc_model *m = lc_model_new();
    if (!m)
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    lc_code rc = parse(buf, size, (flags & LC_GGUF_LENIENT) != 0, m, &tmp, err);
    if (rc != LC_OK) {
        lc_model_free(m);
        return rc;
    }
    if (info)
        *info = tmp;
    *out = m;
    return LC_OK;
}

lc_code lc_gguf_load_mem_ex(const void *buf, uint64_t size, lc_model **out,
                            lc_gguf_info *info, lc_error *err) {
    return lc_gguf_open_mem(buf, size, 0, out, info, err);
}

lc_code lc_gguf_load_mem(const void *buf, uint64_t size, lc_model **out, lc_error *err) {
    return lc_gguf_open_mem(buf, size, 0, out, NULL, err);
}

lc_code lc_gguf_open(const char *path, unsigned flags, lc_model **out, lc_gguf_info *info,
                     lc_error *err) {
    lc_gguf_info tmp;
    lc_map *map = NULL;
    lc_model *m = NULL;
    lc_code rc;
    *out = NULL;
    if (!(m = lc_model_new())) {
        rc = lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory reading the file");
        goto done;
    }
    if ((rc = lc_map_open(path, &map, err)) != LC_OK)
        goto done;
    const lc_map *mp = map;
    if ((rc = lc_model_own(m, map, lc_map_close, err)) != LC_OK) /* frees map on failure */
        goto done;
    if ((rc = parse(mp->data, mp->size, (flags & LC_GGUF_LENIENT) != 0, m, &tmp, err)) != LC_OK)
        goto done;
    /* Every key and array was copied out of the header: its pages need not stay in the
     * process's RSS (a large vocabulary is most of a small model's file). */
    lc_map_drop(mp, 0, tmp.n_tensors ? tmp.data_offset : mp->size);
    /* Views that also name their bytes in the file: writers then copy unchanged
     * tensors in the kernel and read the others with pread, not through the map. */
    for (size_t i = 0; i < lc_model_tensor_count(m); i++) {
        lc_tensor *t = lc_model_tensor(m, i);
        t->ops = &lc_map_view_ops;
        t->ctx = (void *)(uintptr_t)mp;
    }
    if (info)
        *info = tmp;
    *out = m;
    m = NULL;
done:
    lc_model_free(m);
    lc_err_context(err, path, NULL);
    return rc;
}

lc_code lc_gguf_load_ex(const char *path, lc_model **out, lc_gguf_info *info, lc_error *err) {
    return lc_gguf_open(path, 0, out, info, err);
}

lc_code lc_gguf_load(const char *path, lc_model **out, lc_error *err) {
    return lc_gguf_open(path, 0, out, NULL, err);
}

/* ---- writer ---- */

/* Where the header goes: the output file, or memory (lc_gguf_header: the bytes a file
 * starts with, to hold a file on disk to). */
typedef struct sink {
    lc_outfile *f;          /* or NULL: into buf */
    uint8_t    *buf;        /* lc_realloc'd */
    size_t      len, cap;
} sink;

static lc_code put(sink *s, const void *p, size_t n, lc_error *err) {
    if (s->f)
        return lc_outfile_write(s->f, p, n, err);
    if (n > s->cap - s->len) {
        size_t cap = s->cap ? s->cap : 4096;
        while (cap - s->len < n) {
            if (cap > SIZE_MAX / 2)
                return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "header too large");
            cap *= 2;
        }
        uint8_t *grown = lc_realloc(s->buf, cap);
        if (!grown)
            return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory for the header");
        s->buf = grown;
        s->cap = cap;
    }
    memcpy(s->buf + s->len, p, n);
    s->len += n;
    return LC_OK;
}

static uint64_t tell(const sink *s) { return s->f ? lc_outfile_tell(s->f) : s->len; }

static lc_code w_u32(sink *f, uint32_t v, lc_error *err) {
    uint8_t b[4];
    lc_store_le32(b, v);
    return put(f, b, sizeof b, err);
}

static lc_code w_u64(sink *f, uint64_t v, lc_error *err) {
    uint8_t b[8];
    lc_store_le64(b, v);
    return put(f, b, sizeof b, err);
}

static lc_code w_str(sink *f, const char *s, uint64_t len, lc_error *err) {
    LC_TRY(w_u64(f, len, err));
    return put(f, s, (size_t)len, err);
}

static lc_code w_value(sink *f, const lc_value *v, lc_error *err) {
    uint8_t b[8];
    switch (v->type) {
    case LC_VT_U8: case LC_VT_I8: b[0] = (uint8_t)v->u; break;
    case LC_VT_U16: case LC_VT_I16: lc_store_le16(b, (uint16_t)v->u); break;
    case LC_VT_U32: case LC_VT_I32: lc_store_le32(b, (uint32_t)v->u); break;
    case LC_VT_U64: case LC_VT_I64: lc_store_le64(b, v->u); break;
    case LC_VT_F32: lc_store_le32(b, lc_f32_to_bits((float)v->f)); break;
    case LC_VT_F64: {
        uint64_t u;
        memcpy(&u, &v->f, sizeof u);
        lc_store_le64(b, u);
        break;
    }
    case LC_VT_BOOL: b[0] = v->b ? 1 : 0; break;
    case LC_VT_STRING:
        return w_str(f, v->str.ptr, v->str.len, err);
    case LC_VT_ARRAY:
        if ((unsigned)v->arr.elem >= LC_VT_COUNT)
            return lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "array has invalid element type %d",
                           (int)v->arr.elem);
        LC_TRY(w_u32(f, (uint32_t)v->arr.elem, err));
        LC_TRY(w_u64(f, v->arr.count, err));
        if (v->arr.elem == LC_VT_STRING) {
            for (uint64_t k = 0; k < v->arr.count; k++) {
                size_t len;
                const char *s = lc_value_arr_str(v, k, &len);
                LC_TRY(w_str(f, s, len, err));
            }
        } else if (v->arr.elem == LC_VT_ARRAY) {
            for (uint64_t k = 0; k < v->arr.count; k++)
                LC_TRY(w_value(f, lc_value_arr_item(v, k), err));
        } else if (v->arr.count) {   /* packed as on the wire (value.h) */
            LC_TRY(put(f, lc_value_arr_data(v),
                       (size_t)v->arr.count * lc_vtype_size(v->arr.elem), err));
        }
        return LC_OK;
    default:
        return lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "invalid value type %d", (int)v->type);
    }
    return put(f, b, lc_vtype_size(v->type), err);
}

/* Zeros the alignment makes the writer add: up to align - 1 after the header and after
 * each tensor. ggml pads whatever general.alignment says, so a 100-byte file of no tensors
 * that asks for 2^31 would become 2 GiB of zeros. Alignments up to 64 KiB (what direct
 * I/O and page-sized mappings use) are written as ggml writes them; above that the
 * padding may not outweigh the tensor data it aligns. */
#define LC_GGUF_ALIGN_FREE (64u * 1024u)
static lc_code check_padding(const lc_model *m, uint32_t align, uint64_t data,
                             lc_error *err) {
    if (align <= LC_GGUF_ALIGN_FREE)
        return LC_OK;
    uint64_t pad = align - 1;                       /* after the header, at most */
    for (size_t i = 0; i < lc_model_tensor_count(m); i++)
        pad += (align - lc_model_tensor(m, i)->nbytes % align) % align;
    if (pad <= data)
        return LC_OK;
    lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "%s %" PRIu32 " would pad the file with up to %"
            PRIu64 " zero bytes for %" PRIu64 " bytes of tensor data; above %u the padding "
            "may not exceed the data", ALIGNMENT_KEY, align, pad, data, LC_GGUF_ALIGN_FREE);
    lc_err_context(err, NULL, ALIGNMENT_KEY);
    return LC_E_ARG;
}

/* Checks what the writer refuses before a byte is written; fills *align. */
static lc_code check_model(const lc_model *m, uint32_t *align, uint64_t *total, lc_error *err) {
    const lc_value *a = lc_model_find_meta(m, ALIGNMENT_KEY);
    *align = LC_GGUF_DEFAULT_ALIGNMENT;
    if (a) {
        if (a->type != LC_VT_U32 || !is_pow2(a->u) || a->u < 8) {
            lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "%s must be a u32 power of two, at least 8",
                    ALIGNMENT_KEY);
            lc_err_context(err, NULL, ALIGNMENT_KEY);
            return LC_E_ARG;
        }
        *align = (uint32_t)a->u;
    }
    for (size_t i = 0; i < lc_model_meta_count(m); i++) {
        const char *key = lc_model_meta(m, i)->key;
        char msg[96];
        if (key_fault(key, msg, sizeof msg) != R_COUNT) {
            lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "%s: no GGUF reader may accept it", msg);
            lc_err_context(err, NULL, key);
            return LC_E_ARG;
        }
    }
    *total = 0;
    for (size_t i = 0; i < lc_model_tensor_count(m); i++) {
        const lc_tensor *t = lc_model_tensor(m, i);
        lc_code rc = LC_OK;
        if (lc_dtype_get(t->dtype)->gguf_id < 0)
            rc = lc_fail(err, LC_E_UNSUPPORTED, LC_NO_OFFSET, "GGUF has no %s type",
                         lc_dtype_name(t->dtype));
        else if (t->ndim > LC_GGUF_MAX_DIMS)
            rc = lc_fail(err, LC_E_UNSUPPORTED, LC_NO_OFFSET,
                         "%" PRIu32 " dimensions, GGUF holds at most %d", t->ndim,
                         LC_GGUF_MAX_DIMS);
        else if (strlen(t->name) >= LC_GGUF_MAX_NAME)
            rc = lc_fail(err, LC_E_UNSUPPORTED, LC_NO_OFFSET,
                         "name of %zu bytes; ggml refuses names of %d bytes or more",
                         strlen(t->name), LC_GGUF_MAX_NAME);
        else if (lc_add_u64(*total, t->nbytes, total))
            rc = lc_fail(err, LC_E_OVERFLOW, LC_NO_OFFSET, "total size overflows 64 bits");
        if (rc != LC_OK) {
            lc_err_context(err, NULL, t->name);
            return rc;
        }
    }
    return check_padding(m, *align, *total, err);
}

static lc_code pad_to(sink *f, uint32_t align, lc_error *err) {
    const uint64_t rem = tell(f) % align;
    if (!rem)
        return LC_OK;
    if (f->f)
        return lc_outfile_pad(f->f, (size_t)(align - rem), err);
    static const uint8_t zeros[4096];
    for (uint64_t left = align - rem; left;) {     /* an alignment may pass 4096 */
        const size_t n = left < sizeof zeros ? (size_t)left : sizeof zeros;
        LC_TRY(put(f, zeros, n, err));
        left -= n;
    }
    return LC_OK;
}

static lc_code write_header(sink *f, const lc_model *m, uint32_t align, lc_error *err) {
    const size_t nt = lc_model_tensor_count(m), nkv = lc_model_meta_count(m);
    LC_TRY(put(f, "GGUF", 4, err));
    LC_TRY(w_u32(f, 3, err));
    LC_TRY(w_u64(f, nt, err));
    LC_TRY(w_u64(f, nkv, err));
    for (size_t i = 0; i < nkv; i++) {
        const lc_kv *kv = lc_model_meta(m, i);
        lc_code rc;
        if ((rc = w_str(f, kv->key, strlen(kv->key), err)) != LC_OK ||
            (rc = w_u32(f, (uint32_t)kv->val.type, err)) != LC_OK ||
            (rc = w_value(f, &kv->val, err)) != LC_OK) {
            lc_err_context(err, NULL, kv->key);
            return rc;
        }
    }
    uint64_t off = 0;
    for (size_t i = 0; i < nt; i++) {
        const lc_tensor *t = lc_model_tensor(m, i);
        LC_TRY(w_str(f, t->name, strlen(t->name), err));
        LC_TRY(w_u32(f, t->ndim, err));
        for (uint32_t d = t->ndim; d-- > 0;)
            LC_TRY(w_u64(f, t->shape[d], err));
        LC_TRY(w_u32(f, (uint32_t)lc_dtype_get(t->dtype)->gguf_id, err));
        LC_TRY(w_u64(f, off, err));
        uint64_t padded;
        if (lc_add_u64(t->nbytes, align - 1, &padded) ||
            lc_add_u64(off, padded & ~(uint64_t)(align - 1), &off))
            return lc_fail(err, LC_E_OVERFLOW, LC_NO_OFFSET, "data section overflows 64 bits");
    }
    return pad_to(f, align, err);
}

/* ---- the data section, as segments (libconvert/segments.h) ----
 *
 * Each tensor is one segment, then zeros up to the alignment: an unchanged range of
 * an input file is copied in the kernel, a zero-copy view written as it is, anything
 * else read through its source in chunks by worker threads (so casts, permutations
 * and quantization run on every core while this thread writes). */

/* Fills segs (2 per tensor at most) and returns their count and the file's size. */
static size_t plan_segments(const lc_model *m, uint32_t align, uint64_t header,
                            lc_segment *segs, uint64_t *size) {
    size_t n = 0;
    uint64_t at = header;           /* write_header checked the padded sums for overflow */
    for (size_t i = 0; i < lc_model_tensor_count(m); i++) {
        const lc_tensor *t = lc_model_tensor(m, i);
        lc_segment *s = &segs[n++];
        *s = (lc_segment){ .kind = LC_SEG_READ, .t = t, .len = t->nbytes };
        if (t->nbytes && lc_tensor_file_range(t, &s->fd, &s->off))
            s->kind = LC_SEG_COPY;
        else if (t->data) {
            s->kind = LC_SEG_VIEW;
            s->ptr = t->data;
        }
        at += t->nbytes;
        if (at % align)
            segs[n++] = (lc_segment){ .kind = LC_SEG_ZEROS, .t = t, .len = align - at % align };
        at += (align - at % align) % align;
    }
    *size = at;
    return n;
}

/* Writes m into the temporary of a new outfile for PATH; *fp gets it, whole but not
 * committed. On failure nothing is left (*fp NULL). */
static lc_code write_file(const lc_model *m, const char *path, const lc_gguf_write_opts *o,
                          lc_progress *p, lc_outfile **fp, lc_error *err) {
    const lc_segments_opts so = { .chunk_bytes = o ? o->chunk_bytes : 0,
                                  .threads = o ? o->threads : 0 };
    const size_t nt = lc_model_tensor_count(m);
    lc_outfile *f = NULL;
    lc_segment *segs = NULL;
    lc_segments_failure failed = { 0, false };
    uint32_t align;
    uint64_t total, size;
    lc_code rc;
    *fp = NULL;
    if ((rc = check_model(m, &align, &total, err)) != LC_OK)
        goto done;
    if (!(segs = lc_calloc(nt ? 2 * nt : 1, sizeof *segs))) {
        rc = lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory for %zu tensors", nt);
        goto done;
    }
    if ((rc = lc_outfile_open(path, &f, err)) != LC_OK ||
        (rc = write_header(&(sink){ .f = f }, m, align, err)) != LC_OK)
        goto done;
    const size_t n = plan_segments(m, align, lc_outfile_tell(f), segs, &size);
    lc_outfile_reserve(f, size);
    lc_progress_begin(p, "writing GGUF", total);
    rc = lc_segments_write(f, segs, n, &so, p, &failed, err);
    lc_progress_end(p);
    if (rc != LC_OK) {
        if (failed.segment < n)
            lc_err_context(err, NULL, segs[failed.segment].t->name);
        goto done;
    }
    *fp = f;
    f = NULL;
done:
    lc_outfile_abort(f);
    lc_free(segs);
    /* A source's failure already names its own file; the caller adds it. */
    if (!failed.source)
        lc_err_context(err, path, NULL);
    return rc;
}

lc_code lc_gguf_header(const lc_model *m, uint8_t **bytes, size_t *len, uint64_t *file_size,
                       lc_error *err) {
    uint32_t align;
    uint64_t total;
    sink s = { .f = NULL };
    *bytes = NULL;
    *len = 0;
    lc_code rc = check_model(m, &align, &total, err);
    if (rc == LC_OK)
        rc = write_header(&s, m, align, err);
    uint64_t at = s.len;    /* write_header checked the padded sums for overflow */
    for (size_t i = 0; rc == LC_OK && i < lc_model_tensor_count(m); i++)
        at += (lc_model_tensor(m, i)->nbytes + align - 1) & ~(uint64_t)(align - 1);
    if (rc != LC_OK) {
        lc_free(s.buf);
        return rc;
    }
    *bytes = s.buf;
    *len = s.len;
    if (file_size)
        *file_size = at;
    return LC_OK;
}

lc_code lc_gguf_write(const lc_model *m, const char *path, const lc_gguf_write_opts *o,
                      lc_progress *p, lc_error *err) {
    lc_outfile *f;
    LC_TRY(write_file(m, path, o, p, &f, err));
    return lc_outfile_commit(f, err);
}

lc_code lc_gguf_write_set(const lc_model *const *models, const char *const *paths, size_t n,
                          const lc_gguf_write_opts *o, lc_progress *p, lc_error *err) {
    lc_outfile **fs = lc_calloc(n ? n : 1, sizeof *fs);
    if (!fs)
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    lc_code rc = LC_OK;
    size_t done = 0;
    for (; rc == LC_OK && done < n; done++)
        rc = write_file(models[done], paths[done], o, p, &fs[done], err);
    if (rc == LC_OK)
        rc = lc_outfile_commit_set(fs, n, err);
    else
        for (size_t i = 0; i < done; i++)
            lc_outfile_abort(fs[i]);
    lc_free(fs);
    return rc;
}
