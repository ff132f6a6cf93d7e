/* formats/safetensors_read.c: the safetensors reader (mapped, zero-copy).
 *
 *   file offset 0        +---------------------------------------------+
 *                        | u64 LE N (header bytes), N <= 100,000,000    |
 *   8                    +---------------------------------------------+
 *                        | N bytes UTF-8 JSON object, space-padded:     |
 *                        |  {"__metadata__":{"k":"v",...},              |
 *                        |   "name":{"dtype":"F32","shape":[2,3],       |
 *                        |           "data_offsets":[0,24]}, ...}       |
 *   8 + N                +---------------------------------------------+
 *                        | buffer: tensor bytes at [8+N+begin, 8+N+end) |
 *                        | packed from 0, no holes, no overlaps         |
 *   8 + N + last end     +---------------------------------------------+ == file size
 *
 * Reading follows the reference's order of checks (tensor.rs read_metadata): the
 * length and its limit, the header inside the file, UTF-8, JSON with every entry
 * well typed, then in order of data_offsets: contiguity, shape product, size, and
 * finally that the file ends at the last tensor.
 *
 * The header is read with a pull scanner (libconvert/json_scan.h), never as a tree:
 * a first pass checks the JSON grammar of the whole header, so a syntax error is
 * reported before any entry's (as a parser that builds a tree would), and a second
 * keeps only what the IR needs: each tensor's name, dtype, dimensions and offsets,
 * and the __metadata__ strings. Names are decoded into one arena of N bytes (a
 * decoded string is never longer than its JSON), entries take 56 bytes each, and
 * nothing is kept per JSON token, so the header's memory is bounded by its bytes
 * whatever it holds (a cJSON tree cost 30-40 times the text). Integers are read
 * from their own text (exact to 2^64, floats and negatives refused), and every
 * error names the byte where the offending value starts.
 *
 * The rules a file is held to, each with its source ("README" is the format section of
 * huggingface/safetensors' README, whose MUSTs we enforce even where the library is
 * lenient; "tensor.rs" the reference reader's checks; "ours" our own):
 *   the file holds the 8-byte length (tensor.rs HeaderTooSmall)         truncated
 *   N <= 100,000,000 (tensor.rs MAX_HEADER_SIZE)                        overflow
 *   8 + N <= file size (tensor.rs InvalidHeaderLength)                  truncated
 *   the header is UTF-8 (README, tensor.rs InvalidHeader)               malformed
 *   the header begins with '{' (README MUST; serde_json skips leading
 *     whitespace, so the library accepts "  {...}")                     malformed
 *   the header is one JSON object (README, serde_json), no raw control
 *     byte in a string (serde_json), nesting at most 64 deep (ours;
 *     serde_json stops at 128, and no valid header nests past 3)        malformed
 *   after the object only 0x20 padding (README: "MAY be trailing padded
 *     with whitespace (0x20)"; serde_json also takes \t \n \r)         malformed
 *   entries {dtype, shape, data_offsets}, nothing else, integers exact
 *     (tensor.rs TensorInfo; ours: unknown fields refused)             malformed
 *   dtypes the IR holds, at most LC_MAX_DIMS dims, no \u0000 (ours)     unsupported
 *   __metadata__ maps strings to strings (README)                      malformed
 *   no duplicate key, in the header or in __metadata__ (README)        malformed
 *   data from 0, each tensor where the previous ended (README "entirely
 *     indexed, cannot contain holes"; tensor.rs validate InvalidOffset) malformed
 *   numel * size without overflow (tensor.rs ValidationOverflow)       overflow
 *   end - begin == that size (tensor.rs TensorInvalidInfo)             malformed
 *   the file ends at the last tensor (tensor.rs MetadataIncompleteBuffer)
 *                                                                      malformed */
#include "formats/safetensors.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libconvert/alloc.h"
#include "libconvert/bytes.h"
#include "libconvert/json.h"
#include "libconvert/json_scan.h"
#include "libconvert/map.h"

#define TEXT_AT 8u /* file offset of the header text */

/* ---- header entries ---- */

typedef struct entry {
    const char *name;        /* in hdr.names */
    uint64_t    begin, end;
    uint64_t    dim0;        /* index of its first dimension in hdr.dims */
    uint32_t    key_at, shape_at, offs_at; /* file offsets (< 8 + 10^8) for messages */
    lc_dtype    dtype;
    uint32_t    ndim;
} entry;

typedef struct hdr {
    lc_jscan  js;
    char     *names;         /* N bytes: every decoded name fits, each with its NUL */
    size_t    names_len;
    entry    *es;
    size_t    count, cap;
    uint64_t *dims;
    size_t    ndims, cap_dims;
} hdr;

static lc_code next(hdr *h, lc_jtok *t, lc_error *err) { return lc_jscan_next(&h->js, t, err); }

/* Decodes string token t into the names arena (kept when `keep`, else overwritten by
 * the next one). */
static const char *decode(hdr *h, const lc_jtok *t, bool keep) {
    char *s = h->names + h->names_len;
    const size_t len = lc_jscan_decode(&h->js, t, s);
    if (keep)
        h->names_len += len + 1;
    return s;
}

static bool is_digit(uint8_t c) { return c >= '0' && c <= '9'; }

/* Reads a JSON non-negative integer from its text. */
static lc_code read_uint(const hdr *h, const lc_jtok *t, const char *what, uint64_t *v,
                         lc_error *err) {
    if (t->kind != LC_JT_NUM)
        return lc_fail(err, LC_E_MALFORMED, t->at, "%s is not a number", what);
    const uint8_t *s = h->js.s + (t->at - TEXT_AT);
    if (s[0] == '-')
        return lc_fail(err, LC_E_MALFORMED, t->at, "%s is negative", what);
    uint64_t x = 0, i = 0;
    for (; i < t->len && is_digit(s[i]); i++)
        if (lc_mul_u64(x, 10, &x) || lc_add_u64(x, (uint64_t)(s[i] - '0'), &x))
            return lc_fail(err, LC_E_OVERFLOW, t->at, "%s does not fit in 64 bits", what);
    if (i < t->len)   /* a fraction or an exponent */
        return lc_fail(err, LC_E_MALFORMED, t->at, "%s is not an integer", what);
    *v = x;
    return LC_OK;
}

static lc_code push_dim(hdr *h, uint64_t d, lc_error *err) {
    if (h->ndims == h->cap_dims) {
        const size_t cap = h->cap_dims ? h->cap_dims * 2 : 64;
        uint64_t *p = lc_realloc_array(h->dims, cap, sizeof *p);
        if (!p)
            return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory for the header");
        h->dims = p;
        h->cap_dims = cap;
    }
    h->dims[h->ndims++] = d;
    return LC_OK;
}

static lc_code read_shape(hdr *h, entry *e, const lc_jtok *v, lc_error *err) {
    e->shape_at = (uint32_t)v->at;
    e->dim0 = h->ndims;
    if (v->kind != LC_JT_ARR)
        return lc_fail_in(err, LC_E_MALFORMED, v->at, e->name, "shape is not an array");
    for (;;) {
        lc_jtok d;
        LC_TRY(next(h, &d, err));
        if (d.kind == LC_JT_ARR_END)
            return LC_OK;
        if (e->ndim == LC_MAX_DIMS) {
            lc_fail(err, LC_E_UNSUPPORTED, v->at, "shape has more than %d dimensions",
                    LC_MAX_DIMS);
            lc_err_context(err, NULL, e->name);
            return LC_E_UNSUPPORTED;
        }
        uint64_t x;
        lc_code rc = read_uint(h, &d, "a dimension", &x, err);
        if (rc == LC_OK)
            rc = push_dim(h, x, err);
        if (rc != LC_OK) {                       /* recorded; say which tensor */
            lc_err_context(err, NULL, e->name);
            return rc;
        }
        e->ndim++;
    }
}

static lc_code read_offsets(hdr *h, entry *e, const lc_jtok *v, lc_error *err) {
    uint64_t items = 0;
    e->offs_at = (uint32_t)v->at;
    if (v->kind == LC_JT_ARR)
        LC_TRY(lc_jscan_count(&h->js, v, &items, err));
    if (items != 2)
        return lc_fail_in(err, LC_E_MALFORMED, v->at, e->name,
                          "data_offsets is not an array of two integers");
    lc_jtok b, x;
    lc_code rc = next(h, &b, err);
    if (rc == LC_OK)
        rc = read_uint(h, &b, "begin offset", &e->begin, err);
    if (rc == LC_OK)
        rc = next(h, &b, err);
    if (rc == LC_OK)
        rc = read_uint(h, &b, "end offset", &e->end, err);
    if (rc == LC_OK)
        rc = next(h, &x, err);   /* the closing ']' */
    if (rc != LC_OK)                             /* recorded; say which tensor */
        lc_err_context(err, NULL, e->name);
    return rc;
}

/* One tensor entry, the value after key k. */
static lc_code read_entry(hdr *h, const lc_jtok *k, lc_error *err) {
    if (h->count == h->cap) {
        const size_t cap = h->cap ? h->cap * 2 : 64;
        entry *p = lc_realloc_array(h->es, cap, sizeof *p);
        if (!p)
            return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory for the header");
        h->es = p;
        h->cap = cap;
    }
    entry *e = &h->es[h->count];
    memset(e, 0, sizeof *e);
    e->key_at = (uint32_t)k->at;
    e->name = decode(h, k, true);
    lc_jtok v;
    LC_TRY(next(h, &v, err));
    if (v.kind != LC_JT_OBJ)
        return lc_fail_in(err, LC_E_MALFORMED, v.at, e->name, "tensor entry is not an object");
    bool have_dtype = false, have_shape = false, have_offs = false;
    for (;;) {
        lc_jtok f, fv;
        LC_TRY(next(h, &f, err));
        if (f.kind == LC_JT_OBJ_END)
            break;
        LC_TRY(next(h, &fv, err));
        if (lc_jscan_equals(&h->js, &f, "dtype") && !have_dtype) {
            have_dtype = true;
            if (fv.kind != LC_JT_STR)
                return lc_fail_in(err, LC_E_MALFORMED, fv.at, e->name, "dtype is not a string");
            const char *s = decode(h, &fv, false);
            e->dtype = lc_dtype_from_st_name(s, strlen(s));
            if (e->dtype == LC_DT_INVALID) {
                lc_fail(err, LC_E_UNSUPPORTED, fv.at, "unknown dtype '%.32s'", s);
                lc_err_context(err, NULL, e->name);
                return LC_E_UNSUPPORTED;
            }
        } else if (lc_jscan_equals(&h->js, &f, "shape") && !have_shape) {
            have_shape = true;
            LC_TRY(read_shape(h, e, &fv, err));
        } else if (lc_jscan_equals(&h->js, &f, "data_offsets") && !have_offs) {
            have_offs = true;
            LC_TRY(read_offsets(h, e, &fv, err));
        } else {
            lc_fail(err, LC_E_MALFORMED, f.at, "duplicate or unknown field '%.40s'",
                    decode(h, &f, false));
            lc_err_context(err, NULL, e->name);
            return LC_E_MALFORMED;
        }
    }
    if (!have_dtype || !have_shape || !have_offs) {
        lc_fail(err, LC_E_MALFORMED, v.at, "tensor entry lacks %s",
                !have_dtype ? "dtype" : !have_shape ? "shape" : "data_offsets");
        lc_err_context(err, NULL, e->name);
        return LC_E_MALFORMED;
    }
    h->count++;
    return LC_OK;
}

/* __metadata__: strings to strings, each a metadata value of m in file order. */
static lc_code read_meta(hdr *h, lc_model *m, lc_error *err) {
    lc_jtok v;
    LC_TRY(next(h, &v, err));
    if (v.kind != LC_JT_OBJ)
        return lc_fail_in(err, LC_E_MALFORMED, v.at, "__metadata__", "__metadata__ is not an object");
    for (;;) {
        lc_jtok k, kv;
        LC_TRY(next(h, &k, err));
        if (k.kind == LC_JT_OBJ_END)
            return LC_OK;
        LC_TRY(next(h, &kv, err));
        /* The key in the arena's free space (the model copies it); the value straight
         * into the buffer the model keeps, so a long one is held once. */
        const char *key = decode(h, &k, false);
        if (kv.kind != LC_JT_STR)
            return lc_fail_in(err, LC_E_MALFORMED, kv.at, key, "metadata value is not a string");
        if (lc_model_find_meta(m, key))
            return lc_fail_in(err, LC_E_MALFORMED, k.at, key, "duplicate metadata key");
        lc_value s = lc_value_uint(LC_VT_U8, 0);
        if (!(s.str.ptr = lc_malloc((size_t)kv.len)))
            return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory for a %" PRIu64
                           "-byte metadata value", kv.len);
        s.type = LC_VT_STRING;
        s.str.len = lc_jscan_decode(&h->js, &kv, s.str.ptr);
        LC_TRY(lc_model_add_meta(m, key, &s, err));   /* takes s */
    }
}

/* qsort helpers over pointers to entries; ties fall back to header order so the
 * result does not depend on qsort. */
static int by_name(const void *a, const void *b) {
    const entry *x = *(const entry *const *)a, *y = *(const entry *const *)b;
    int c = strcmp(x->name, y->name);
    return c ? c : (x->key_at > y->key_at) - (x->key_at < y->key_at);
}
static int by_offsets(const void *a, const void *b) {
    const entry *x = *(const entry *const *)a, *y = *(const entry *const *)b;
    if (x->begin != y->begin)
        return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end)
        return x->end < y->end ? -1 : 1;
    return (x->key_at > y->key_at) - (x->key_at < y->key_at);
}

/* An entry's dimensions (a header of scalars has no dims array at all). */
static const uint64_t *shape_of(const hdr *h, const entry *e) {
    static const uint64_t none[1];
    return h->dims ? h->dims + e->dim0 : none;
}

/* The sorted pass of the reference's validate(), then the exact end of file. */
static lc_code check_layout(const hdr *h, const entry *const *order, uint64_t n, uint64_t size,
                            lc_error *err) {
    uint64_t start = 0;
    for (size_t k = 0; k < h->count; k++) {
        const entry *e = order[k];
        const uint64_t *shape = shape_of(h, e);
        if (e->begin != start || e->end < e->begin) {
            lc_fail(err, LC_E_MALFORMED, e->offs_at,
                    "data [%" PRIu64 ", %" PRIu64 ") does not start where the previous tensor "
                    "ends (%" PRIu64 "): %s", e->begin, e->end, start,
                    e->end < e->begin ? "end before begin" : e->begin > start ? "a hole" :
                    "an overlap");
            lc_err_context(err, NULL, e->name);
            return LC_E_MALFORMED;
        }
        start = e->end;
        const lc_dtype_info *info = lc_dtype_get(e->dtype);
        uint64_t numel = 1, nbytes;
        for (uint32_t d = 0; d < e->ndim; d++)
            if (lc_mul_u64(numel, shape[d], &numel))
                return lc_fail_in(err, LC_E_OVERFLOW, e->shape_at, e->name,
                                  "shape product overflows 64 bits");
        if (lc_mul_u64(numel, info->type_size, &nbytes))
            return lc_fail_in(err, LC_E_OVERFLOW, e->shape_at, e->name,
                              "byte size overflows 64 bits");
        lc_error scratch = {0}; /* the IR's own size rule must agree; see lc_shape_nbytes */
        uint64_t ir_bytes;
        if (lc_shape_nbytes(e->dtype, e->ndim, shape, &ir_bytes, &scratch) != LC_OK)
            return lc_fail_in(err, scratch.code, e->shape_at, e->name, "%s", scratch.msg);
        if (e->end - e->begin != nbytes) {
            lc_fail(err, LC_E_MALFORMED, e->offs_at,
                    "data holds %" PRIu64 " bytes but %s %s needs %" PRIu64,
                    e->end - e->begin, info->name, e->ndim ? "of this shape" : "scalar", nbytes);
            lc_err_context(err, NULL, e->name);
            return LC_E_MALFORMED;
        }
    }
    uint64_t data_at = TEXT_AT + n, want;
    if (lc_add_u64(data_at, start, &want) || want > size) {
        for (size_t k = 0; k < h->count; k++) { /* the first tensor that does not fit */
            const entry *e = order[k];
            if (e->end > size - data_at) {
                lc_fail(err, LC_E_TRUNCATED, data_at + e->begin,
                        "data [%" PRIu64 ", %" PRIu64 ") runs past the end of the %" PRIu64
                        "-byte file", e->begin, e->end, size);
                lc_err_context(err, NULL, e->name);
                return LC_E_TRUNCATED;
            }
        }
        return lc_fail(err, LC_E_TRUNCATED, data_at, "tensor data runs past the end of the file");
    }
    if (want < size)
        return lc_fail(err, LC_E_MALFORMED, want,
                       "%" PRIu64 " bytes follow the last tensor's data", size - want);
    return LC_OK;
}

/* Steps 1-3 of the order above: the length, the header in the file, UTF-8, '{',
 * then the whole JSON grammar (a first pass that keeps nothing), with nothing but
 * spaces after the object. */
static lc_code check_text(const uint8_t *buf, uint64_t size, uint64_t *n_out, lc_error *err) {
    if (size < 8)
        return lc_fail(err, LC_E_TRUNCATED, 0, "file of %" PRIu64 " bytes has no 8-byte header "
                       "length", size);
    const uint64_t n = lc_load_le64(buf);
    if (n > LC_SAFETENSORS_MAX_HEADER)
        return lc_fail(err, LC_E_OVERFLOW, 0, "header length %" PRIu64 " is above the limit of "
                       "%u", n, LC_SAFETENSORS_MAX_HEADER);
    if (n > size - 8)
        return lc_fail(err, LC_E_TRUNCATED, 0, "header of %" PRIu64 " bytes runs past the end of "
                       "the %" PRIu64 "-byte file", n, size);
    const uint8_t *text = buf + TEXT_AT;
    size_t good = lc_json_utf8_valid_prefix(text, (size_t)n);
    if (good != n)
        return lc_fail(err, LC_E_MALFORMED, TEXT_AT + good, "header is not valid UTF-8");
    if (n == 0 || text[0] != '{')
        return lc_fail(err, LC_E_MALFORMED, TEXT_AT, "header does not begin with '{' (the "
                       "format says it MUST)");
    lc_jscan js;
    lc_jtok t;
    lc_jscan_init(&js, text, n, TEXT_AT);
    do
        LC_TRY(lc_jscan_next(&js, &t, err));
    while (t.kind != LC_JT_END);
    for (uint64_t i = js.pos; i < n; i++) {
        const uint8_t c = text[i];
        if (c == '\t' || c == '\n' || c == '\r')
            return lc_fail(err, LC_E_MALFORMED, TEXT_AT + i, "the header is padded with byte "
                           "0x%02x; the format pads with spaces (0x20) only", c);
        if (c != ' ')
            return lc_fail(err, LC_E_MALFORMED, TEXT_AT + i, "text follows the header's JSON "
                           "value");
    }
    *n_out = n;
    return LC_OK;
}

/* The second pass: entries into h, __metadata__ into m. */
static lc_code read_header(hdr *h, lc_model *m, lc_error *err) {
    lc_jtok t;
    bool seen_meta = false;
    LC_TRY(next(h, &t, err));   /* the '{' check_text saw */
    for (;;) {
        LC_TRY(next(h, &t, err));
        if (t.kind == LC_JT_OBJ_END)
            return LC_OK;
        if (lc_jscan_equals(&h->js, &t, "__metadata__")) {
            if (seen_meta)
                return lc_fail_in(err, LC_E_MALFORMED, t.at, "__metadata__", "duplicate key");
            seen_meta = true;
            LC_TRY(read_meta(h, m, err));
        } else {
            LC_TRY(read_entry(h, &t, err));
        }
    }
}

/* Parses buf[0..size). With `map`, tensors are marked as views of that map. */
static lc_code parse(const uint8_t *buf, uint64_t size, const lc_map *map, lc_model **out,
                     uint64_t *header_len, lc_error *err) {
    lc_code rc = LC_OK;
    hdr h;
    const entry **order = NULL;
    lc_model *m = NULL;
    uint64_t n = 0;
    memset(&h, 0, sizeof h);
    *out = NULL;

    if ((rc = check_text(buf, size, &n, err)) != LC_OK)
        goto done;
    lc_jscan_init(&h.js, buf + TEXT_AT, n, TEXT_AT);
    if (!(m = lc_model_new()) || !(h.names = lc_malloc((size_t)n))) {
        rc = lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory for a %" PRIu64 "-byte "
                     "header", n);
        goto done;
    }
    if ((rc = read_header(&h, m, err)) != LC_OK)
        goto done;
    if (!(order = lc_calloc(h.count ? h.count : 1, sizeof *order))) {
        rc = lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory for %zu entries", h.count);
        goto done;
    }
    for (size_t k = 0; k < h.count; k++)
        order[k] = &h.es[k];
    /* Duplicate names: the reference's map would keep one. */
    qsort((void *)order, h.count, sizeof *order, by_name);
    for (size_t k = 1; k < h.count; k++)
        if (strcmp(order[k - 1]->name, order[k]->name) == 0) {
            rc = lc_fail_in(err, LC_E_MALFORMED, order[k]->key_at, order[k]->name,
                            "duplicate tensor name");
            goto done;
        }
    qsort((void *)order, h.count, sizeof *order, by_offsets);
    if ((rc = check_layout(&h, order, n, size, err)) != LC_OK)
        goto done;
    for (size_t k = 0; k < h.count; k++) {
        const entry *e = &h.es[k];
        lc_tensor *t;
        if ((rc = lc_model_add_tensor(m, e->name, e->dtype, e->ndim, shape_of(&h, e), &t,
                                      err)) != LC_OK)
            goto done;
        t->file_offset = TEXT_AT + n + e->begin;
        t->data = buf + t->file_offset;
        if (map) {
            t->ops = &lc_map_view_ops;
            t->ctx = (void *)(uintptr_t)map;
        }
    }
    if (header_len)
        *header_len = n;
    *out = m;
    m = NULL;
done:
    lc_model_free(m);
    lc_free((void *)order);
    lc_free(h.es);
    lc_free(h.dims);
    lc_free(h.names);
    return rc;
}

lc_code lc_safetensors_load_mem(const uint8_t *buf, uint64_t size, lc_model **out,
                                lc_error *err) {
    return parse(buf, size, NULL, out, NULL, err);
}

lc_code lc_safetensors_load_hdr(const char *path, lc_model **out, uint64_t *header_len,
                                lc_error *err) {
    lc_map *map = NULL;
    lc_model *m = NULL;
    *out = NULL;
    lc_code rc = lc_map_open(path, &map, err);
    if (rc == LC_OK)
        rc = parse(map->data, map->size, map, &m, header_len, err);
    if (rc != LC_OK) {
        lc_map_close(map);
    } else if ((rc = lc_model_own(m, map, lc_map_close, err)) != LC_OK) {
        lc_model_free(m);
    } else {
        *out = m;
    }
    lc_err_context(err, path, NULL);
    return rc;
}

lc_code lc_safetensors_load(const char *path, lc_model **out, lc_error *err) {
    return lc_safetensors_load_hdr(path, out, NULL, err);
}
