/* formats/safetensors.c: safetensors reader (mapped, zero-copy) and streaming writer.
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
 * finally that the file ends at the last tensor. cJSON parses, but it keeps numbers
 * as doubles and does not say where an item was, so a small lexer first records
 * the byte offset of every JSON value and key in document order; walking the cJSON
 * tree in the same order pairs each item with its offset. Integers are then read
 * from their own text (exact to 2^64, floats and negatives refused), and every
 * error can name the byte where the offending value starts.
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
 *     byte in a string (serde_json)                                     malformed
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

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

#include "libconvert/alloc.h"
#include "libconvert/inspect.h"
#include "libconvert/bytes.h"
#include "libconvert/json.h"
#include "libconvert/map.h"
#include "libconvert/outfile.h"
#include "libconvert/segments.h"


/* ---- lexer: byte offsets of JSON values and keys, in document order ---- */

typedef struct hdr {
    const uint8_t *text;   /* the N header bytes, at file offset 8 */
    uint64_t       n;
    uint32_t      *tok;    /* offset in text of each token's first byte */
    size_t         ntok, cap, next;
} hdr;

#define TEXT_AT 8u /* file offset of text[0] */

static lc_code push_tok(hdr *h, uint64_t at, lc_error *err) {
    if (h->ntok == LC_SAFETENSORS_MAX_TOKENS)
        return lc_fail(err, LC_E_OVERFLOW, TEXT_AT + at, "header holds more than %u json tokens",
                       LC_SAFETENSORS_MAX_TOKENS);
    if (h->ntok == h->cap) {
        size_t cap = h->cap ? h->cap * 2 : 256;
        uint32_t *p = lc_realloc_array(h->tok, cap, sizeof *p);
        if (!p)
            return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory lexing the header");
        h->tok = p;
        h->cap = cap;
    }
    h->tok[h->ntok++] = (uint32_t)at; /* at < N <= 1e8 */
    return LC_OK;
}

static bool is_digit(uint8_t c) { return c >= '0' && c <= '9'; }

static lc_code lex(hdr *h, lc_error *err) {
    const uint8_t *s = h->text;
    uint64_t n = h->n, i = 0;
    while (i < n) {
        uint8_t c = s[i];
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '}' || c == ']' ||
            c == ',' || c == ':') {
            i++;
        } else if (c == '{' || c == '[') {
            LC_TRY(push_tok(h, i, err));
            i++;
        } else if (c == '"') {
            uint64_t start = i++;
            LC_TRY(push_tok(h, start, err));
            for (;;) {
                if (i >= n)
                    return lc_fail(err, LC_E_MALFORMED, TEXT_AT + start, "unterminated string");
                c = s[i];
                if (c == '"') {
                    i++;
                    break;
                }
                if (c < 0x20) /* JSON wants these escaped; serde_json refuses them raw */
                    return lc_fail(err, LC_E_MALFORMED, TEXT_AT + i,
                                   "raw control byte 0x%02x inside a string", c);
                if (c == '\\') {
                    if (n - i >= 6 && memcmp(s + i + 1, "u0000", 5) == 0)
                        /* cJSON would cut the C string there and change the name. */
                        return lc_fail(err, LC_E_UNSUPPORTED, TEXT_AT + i,
                                       "\\u0000 inside a string");
                    i += 2;
                    continue;
                }
                i++;
            }
        } else if (c == '-' || is_digit(c)) {
            LC_TRY(push_tok(h, i, err));
            while (i < n && (is_digit(s[i]) || s[i] == '-' || s[i] == '+' || s[i] == '.' ||
                             s[i] == 'e' || s[i] == 'E'))
                i++;
        } else if (c == 't' || c == 'f' || c == 'n') {
            LC_TRY(push_tok(h, i, err));
            while (i < n && s[i] >= 'a' && s[i] <= 'z')
                i++;
        } else {
            return lc_fail(err, LC_E_MALFORMED, TEXT_AT + i, "byte 0x%02x cannot start json", c);
        }
    }
    return LC_OK;
}

/* File offset of the next value or key; cJSON parsed the same text, so the walk
 * below never asks for more tokens than the lexer found. */
static uint64_t tok_next(hdr *h) {
    return h->next < h->ntok ? TEXT_AT + h->tok[h->next++] : TEXT_AT + h->n;
}

/* Reads a JSON non-negative integer from its text at file offset `at`. */
static lc_code read_uint(const hdr *h, const cJSON *it, uint64_t at, const char *what,
                         uint64_t *v, lc_error *err) {
    if (!cJSON_IsNumber(it))
        return lc_fail(err, LC_E_MALFORMED, at, "%s is not a number", what);
    const uint8_t *s = h->text;
    uint64_t i = at - TEXT_AT, n = h->n;
    if (s[i] == '-')
        return lc_fail(err, LC_E_MALFORMED, at, "%s is negative", what);
    if (s[i] == '0' && i + 1 < n && is_digit(s[i + 1]))
        return lc_fail(err, LC_E_MALFORMED, at, "%s has a leading zero", what);
    uint64_t x = 0;
    for (; i < n && is_digit(s[i]); i++)
        if (lc_mul_u64(x, 10, &x) || lc_add_u64(x, (uint64_t)(s[i] - '0'), &x))
            return lc_fail(err, LC_E_OVERFLOW, at, "%s does not fit in 64 bits", what);
    if (i < n && (s[i] == '.' || s[i] == 'e' || s[i] == 'E'))
        return lc_fail(err, LC_E_MALFORMED, at, "%s is not an integer", what);
    *v = x;
    return LC_OK;
}

/* ---- header entries ---- */

typedef struct entry {
    const char *name;        /* borrowed from the cJSON tree */
    lc_dtype    dtype;
    uint32_t    ndim;
    uint64_t    shape[LC_MAX_DIMS];
    uint64_t    begin, end;
    uint64_t    key_at, shape_at, offs_at; /* file offsets for messages */
} entry;

/* Names come from the file as they are: lc_err_format escapes what a terminal would
 * act on, for every error alike. */
static void ctx_name(lc_error *err, const char *name) { lc_err_context(err, NULL, name); }

static lc_code fail_at(lc_error *err, lc_code code, uint64_t at, const char *where,
                       const char *msg) {
    lc_fail(err, code, at, "%s", msg);
    ctx_name(err, where);
    return code;
}

static lc_code parse_entry(hdr *h, const cJSON *item, entry *e, lc_error *err) {
    const char *nm = item->string;
    uint64_t at = tok_next(h);
    if (!cJSON_IsObject(item))
        return fail_at(err, LC_E_MALFORMED, at, nm, "tensor entry is not an object");
    bool have_dtype = false, have_shape = false, have_offs = false;
    for (const cJSON *f = item->child; f; f = f->next) {
        uint64_t key_at = tok_next(h), val_at = tok_next(h);
        if (strcmp(f->string, "dtype") == 0 && !have_dtype) {
            have_dtype = true;
            if (!cJSON_IsString(f))
                return fail_at(err, LC_E_MALFORMED, val_at, nm, "dtype is not a string");
            e->dtype = lc_dtype_from_st_name(f->valuestring, strlen(f->valuestring));
            if (e->dtype == LC_DT_INVALID) {
                lc_fail(err, LC_E_UNSUPPORTED, val_at, "unknown dtype '%.32s'", f->valuestring);
                ctx_name(err, nm);
                return LC_E_UNSUPPORTED;
            }
        } else if (strcmp(f->string, "shape") == 0 && !have_shape) {
            have_shape = true;
            e->shape_at = val_at;
            if (!cJSON_IsArray(f))
                return fail_at(err, LC_E_MALFORMED, val_at, nm, "shape is not an array");
            for (const cJSON *d = f->child; d; d = d->next) {
                uint64_t d_at = tok_next(h);
                if (e->ndim == LC_MAX_DIMS) {
                    lc_fail(err, LC_E_UNSUPPORTED, val_at, "shape has more than %d dimensions",
                            LC_MAX_DIMS);
                    ctx_name(err, nm);
                    return LC_E_UNSUPPORTED;
                }
                lc_code rc = read_uint(h, d, d_at, "a dimension", &e->shape[e->ndim++], err);
                if (rc != LC_OK)
                    return fail_at(err, rc, d_at, nm, "");
            }
        } else if (strcmp(f->string, "data_offsets") == 0 && !have_offs) {
            have_offs = true;
            e->offs_at = val_at;
            if (!cJSON_IsArray(f) || cJSON_GetArraySize(f) != 2)
                return fail_at(err, LC_E_MALFORMED, val_at, nm,
                               "data_offsets is not an array of two integers");
            lc_code rc = read_uint(h, f->child, tok_next(h), "begin offset", &e->begin, err);
            if (rc == LC_OK)
                rc = read_uint(h, f->child->next, tok_next(h), "end offset", &e->end, err);
            if (rc != LC_OK)
                return fail_at(err, rc, 0, nm, "");
        } else {
            lc_fail(err, LC_E_MALFORMED, key_at, "duplicate or unknown field '%.40s'", f->string);
            ctx_name(err, nm);
            return LC_E_MALFORMED;
        }
    }
    if (!have_dtype || !have_shape || !have_offs) {
        lc_fail(err, LC_E_MALFORMED, at, "tensor entry lacks %s",
                !have_dtype ? "dtype" : !have_shape ? "shape" : "data_offsets");
        ctx_name(err, nm);
        return LC_E_MALFORMED;
    }
    return LC_OK;
}

static lc_code parse_meta(hdr *h, const cJSON *item, lc_model *m, lc_error *err) {
    uint64_t at = tok_next(h);
    if (!cJSON_IsObject(item))
        return fail_at(err, LC_E_MALFORMED, at, "__metadata__", "__metadata__ is not an object");
    for (const cJSON *kv = item->child; kv; kv = kv->next) {
        uint64_t key_at = tok_next(h), val_at = tok_next(h);
        if (!cJSON_IsString(kv))
            return fail_at(err, LC_E_MALFORMED, val_at, kv->string,
                           "metadata value is not a string");
        if (lc_model_find_meta(m, kv->string))
            return fail_at(err, LC_E_MALFORMED, key_at, kv->string, "duplicate metadata key");
        lc_value v;
        LC_TRY(lc_value_string(&v, kv->valuestring, strlen(kv->valuestring), err));
        LC_TRY(lc_model_add_meta(m, kv->string, &v, err));
    }
    return LC_OK;
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

/* The sorted pass of the reference's validate(), then the exact end of file. */
static lc_code check_layout(const entry *const *order, size_t count, uint64_t n,
                            uint64_t size, lc_error *err) {
    uint64_t start = 0;
    for (size_t k = 0; k < count; k++) {
        const entry *e = order[k];
        if (e->begin != start || e->end < e->begin) {
            lc_fail(err, LC_E_MALFORMED, e->offs_at,
                    "data [%" PRIu64 ", %" PRIu64 ") does not start where the previous tensor "
                    "ends (%" PRIu64 "): %s", e->begin, e->end, start,
                    e->end < e->begin ? "end before begin" : e->begin > start ? "a hole" :
                    "an overlap");
            ctx_name(err, e->name);
            return LC_E_MALFORMED;
        }
        start = e->end;
        const lc_dtype_info *info = lc_dtype_get(e->dtype);
        uint64_t numel = 1, nbytes;
        for (uint32_t d = 0; d < e->ndim; d++)
            if (lc_mul_u64(numel, e->shape[d], &numel))
                return fail_at(err, LC_E_OVERFLOW, e->shape_at, e->name,
                               "shape product overflows 64 bits");
        if (lc_mul_u64(numel, info->type_size, &nbytes))
            return fail_at(err, LC_E_OVERFLOW, e->shape_at, e->name,
                           "byte size overflows 64 bits");
        lc_error scratch = {0}; /* the IR's own size rule must agree; see lc_shape_nbytes */
        uint64_t ir_bytes;
        if (lc_shape_nbytes(e->dtype, e->ndim, e->shape, &ir_bytes, &scratch) != LC_OK)
            return fail_at(err, scratch.code, e->shape_at, e->name, scratch.msg);
        if (e->end - e->begin != nbytes) {
            lc_fail(err, LC_E_MALFORMED, e->offs_at,
                    "data holds %" PRIu64 " bytes but %s %s needs %" PRIu64,
                    e->end - e->begin, info->name, e->ndim ? "of this shape" : "scalar", nbytes);
            ctx_name(err, e->name);
            return LC_E_MALFORMED;
        }
    }
    uint64_t data_at = TEXT_AT + n, want;
    if (lc_add_u64(data_at, start, &want) || want > size) {
        for (size_t k = 0; k < count; k++) { /* the first tensor that does not fit */
            const entry *e = order[k];
            if (e->end > size - data_at) {
                lc_fail(err, LC_E_TRUNCATED, data_at + e->begin,
                        "data [%" PRIu64 ", %" PRIu64 ") runs past the end of the %" PRIu64
                        "-byte file", e->begin, e->end, size);
                ctx_name(err, e->name);
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

/* Steps 1-3 of the order above: the length, the header in the file, UTF-8, the
 * token offsets, then cJSON with nothing but whitespace after the object. */
static lc_code read_json(const uint8_t *buf, uint64_t size, hdr *h, cJSON **root,
                         lc_error *err) {
    if (size < 8)
        return lc_fail(err, LC_E_TRUNCATED, 0, "file of %" PRIu64 " bytes has no 8-byte header "
                       "length", size);
    uint64_t n = lc_load_le64(buf);
    if (n > LC_SAFETENSORS_MAX_HEADER)
        return lc_fail(err, LC_E_OVERFLOW, 0, "header length %" PRIu64 " is above the limit of "
                       "%u", n, LC_SAFETENSORS_MAX_HEADER);
    if (n > size - 8)
        return lc_fail(err, LC_E_TRUNCATED, 0, "header of %" PRIu64 " bytes runs past the end of "
                       "the %" PRIu64 "-byte file", n, size);
    h->text = buf + 8;
    h->n = n;
    size_t good = lc_json_utf8_valid_prefix(h->text, (size_t)n);
    if (good != n)
        return lc_fail(err, LC_E_MALFORMED, TEXT_AT + good, "header is not valid UTF-8");
    if (n == 0 || h->text[0] != '{')
        return lc_fail(err, LC_E_MALFORMED, TEXT_AT, "header does not begin with '{' (the "
                       "format says it MUST)");
    LC_TRY(lex(h, err));
    const char *end = NULL;
    *root = cJSON_ParseWithLengthOpts((const char *)h->text, (size_t)n, &end, 0);
    if (!*root) {
        uint64_t at = end ? (uint64_t)((const uint8_t *)end - h->text) : 0;
        return lc_fail(err, LC_E_MALFORMED, TEXT_AT + at, "header is not valid JSON");
    }
    for (uint64_t i = (uint64_t)((const uint8_t *)end - h->text); i < n; i++) {
        const uint8_t c = h->text[i];
        if (c == '\t' || c == '\n' || c == '\r')
            return lc_fail(err, LC_E_MALFORMED, TEXT_AT + i, "the header is padded with byte "
                           "0x%02x; the format pads with spaces (0x20) only", c);
        if (c != ' ')
            return lc_fail(err, LC_E_MALFORMED, TEXT_AT + i, "text follows the header's JSON "
                           "value");
    }
    uint64_t root_at = tok_next(h);
    if (!cJSON_IsObject(*root))
        return lc_fail(err, LC_E_MALFORMED, root_at, "header is not a JSON object");
    return LC_OK;
}

/* Parses buf[0..size). With `map`, tensors are marked as views of that map. */
static lc_code parse(const uint8_t *buf, uint64_t size, const lc_map *map, lc_model **out,
                     uint64_t *header_len, lc_error *err) {
    lc_code rc = LC_OK;
    hdr h = {0};
    cJSON *root = NULL;
    entry *es = NULL;
    const entry **order = NULL;
    size_t count = 0;
    lc_model *m = NULL;
    *out = NULL;

    if ((rc = read_json(buf, size, &h, &root, err)) != LC_OK)
        goto done;
    const uint64_t n = h.n;
    if (!(m = lc_model_new())) {
        rc = lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
        goto done;
    }
    size_t children = 0;
    for (const cJSON *it = root->child; it; it = it->next)
        children++;
    if (!(es = lc_calloc(children, sizeof *es)) || !(order = lc_calloc(children, sizeof *order))) {
        rc = lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory for %zu entries", children);
        goto done;
    }
    bool seen_meta = false;
    for (const cJSON *it = root->child; it; it = it->next) {
        uint64_t key_at = tok_next(&h);
        if (strcmp(it->string, "__metadata__") == 0) {
            if (seen_meta) {
                rc = fail_at(err, LC_E_MALFORMED, key_at, "__metadata__", "duplicate key");
                goto done;
            }
            seen_meta = true;
            if ((rc = parse_meta(&h, it, m, err)) != LC_OK)
                goto done;
            continue;
        }
        entry *e = &es[count];
        e->name = it->string;
        e->key_at = key_at;
        if ((rc = parse_entry(&h, it, e, err)) != LC_OK)
            goto done;
        order[count] = e;
        count++;
    }
    /* Duplicate names: cJSON keeps both as siblings, the reference's map keeps one. */
    qsort(order, count, sizeof *order, by_name);
    for (size_t k = 1; k < count; k++)
        if (strcmp(order[k - 1]->name, order[k]->name) == 0) {
            rc = fail_at(err, LC_E_MALFORMED, order[k]->key_at, order[k]->name,
                         "duplicate tensor name");
            goto done;
        }
    qsort(order, count, sizeof *order, by_offsets);
    if ((rc = check_layout(order, count, n, size, err)) != LC_OK)
        goto done;
    for (size_t k = 0; k < count; k++) {
        const entry *e = &es[k];
        lc_tensor *t;
        if ((rc = lc_model_add_tensor(m, e->name, e->dtype, e->ndim, e->shape, &t, err)) != LC_OK)
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
    lc_free(es);
    lc_free((void *)order);
    lc_free(h.tok);
    cJSON_Delete(root);
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

/* ---- sharded checkpoints: model.safetensors.index.json ---- */

typedef struct wm_entry {
    const char *name, *shard; /* borrowed from the index's cJSON tree */
    size_t      shard_no;
    bool        found;
} wm_entry;

static int wm_by_name(const void *a, const void *b) {
    return strcmp(((const wm_entry *)a)->name, ((const wm_entry *)b)->name);
}
static int wm_by_shard(const void *a, const void *b) {
    return strcmp(((const wm_entry *)a)->shard, ((const wm_entry *)b)->shard);
}

static void free_model(void *p) { lc_model_free(p); }

/* Shard names are plain relative paths: never absolute, never "..". */
static bool safe_shard_name(const char *s) {
    if (!*s || *s == '/')
        return false;
    for (const char *p = s; *p;) {
        const char *slash = strchr(p, '/');
        size_t len = slash ? (size_t)(slash - p) : strlen(p);
        if (len == 2 && p[0] == '.' && p[1] == '.')
            return false;
        p += len + (slash ? 1 : 0);
    }
    return true;
}

/* Moves the tensors of one loaded shard into `all`, checking them against the map. */
static lc_code merge_shard(lc_model *all, lc_model *shard, const char *shard_path, size_t shard_no,
                           wm_entry *wm, size_t nwm, lc_error *err) {
    for (size_t i = 0; i < lc_model_tensor_count(shard); i++) {
        const lc_tensor *t = lc_model_tensor(shard, i);
        wm_entry key = { t->name, NULL, 0, false };
        wm_entry *w = bsearch(&key, wm, nwm, sizeof *wm, wm_by_name);
        if (!w || w->shard_no != shard_no) {
            lc_fail(err, LC_E_MISMATCH, t->file_offset, "tensor is in this shard but the index "
                    "%s", w ? "places it in another shard" : "does not list it");
            lc_err_context(err, shard_path, NULL);
            ctx_name(err, t->name);
            return LC_E_MISMATCH;
        }
        w->found = true;
        lc_tensor *nt;
        LC_TRY(lc_model_add_tensor(all, t->name, t->dtype, t->ndim, t->shape, &nt, err));
        nt->data = t->data;
        nt->ops = t->ops; /* the view source: its ctx (the map) stays owned by `shard` */
        nt->ctx = t->ctx;
        nt->file_offset = t->file_offset;
    }
    for (size_t i = 0; i < lc_model_meta_count(shard); i++) {
        const lc_kv *kv = lc_model_meta(shard, i);
        if (lc_model_find_meta(all, kv->key))
            continue;
        lc_value v;
        LC_TRY(lc_value_copy(&v, &kv->val, err));
        LC_TRY(lc_model_add_meta(all, kv->key, &v, err));
    }
    return LC_OK;
}

lc_code lc_safetensors_load_index(const char *index_json_path_or_dir, lc_model **out,
                                  lc_error *err) {
    lc_code rc = LC_OK;
    char *index = NULL, *dir = NULL, *shard_path = NULL;
    lc_map *map = NULL;
    cJSON *root = NULL;
    wm_entry *wm = NULL;
    const char **shards = NULL;
    lc_model *all = NULL;
    *out = NULL;

    struct stat st;
    const char *p = index_json_path_or_dir;
    size_t plen = strlen(p);
    bool is_dir = stat(p, &st) == 0 && S_ISDIR(st.st_mode);
    if (!(index = lc_malloc(plen + 40)) || !(dir = lc_malloc(plen + 2))) {
        lc_free(index);      /* not filled in yet: the error names the argument */
        index = NULL;
        rc = lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
        goto done;
    }
    if (is_dir) {
        snprintf(index, plen + 40, "%s/model.safetensors.index.json", p);
        memcpy(dir, p, plen + 1);
    } else {
        memcpy(index, p, plen + 1);
        const char *slash = strrchr(p, '/');
        size_t dlen = slash ? (size_t)(slash - p) : 0;
        memcpy(dir, slash ? p : ".", slash ? dlen : 1);
        dir[slash ? dlen : 1] = '\0';
        if (slash && dlen == 0)
            memcpy(dir, "/", 2);
    }
    if ((rc = lc_map_open(index, &map, err)) != LC_OK)
        goto done;
    if (map->size > LC_SAFETENSORS_MAX_HEADER) {
        rc = lc_fail(err, LC_E_OVERFLOW, 0, "index of %" PRIu64 " bytes is above the limit of %u",
                     map->size, LC_SAFETENSORS_MAX_HEADER);
        goto done;
    }
    const char *end = NULL;
    if (map->size)
        root = cJSON_ParseWithLengthOpts((const char *)map->data, (size_t)map->size, &end, 0);
    const cJSON *wmap = cJSON_GetObjectItemCaseSensitive(root, "weight_map");
    if (!root || !cJSON_IsObject(wmap)) {
        /* Where the JSON breaks, or the object that lacks the map. */
        uint64_t at = root || !end ? 0 : (uint64_t)((const uint8_t *)end - map->data);
        rc = lc_fail(err, LC_E_MALFORMED, at, root ? "index has no \"weight_map\" object"
                                                   : "index is not valid JSON");
        if (root)
            lc_err_context(err, NULL, "weight_map");
        goto done;
    }
    size_t nwm = 0, nshards = 0;
    for (const cJSON *it = wmap->child; it; it = it->next)
        nwm++;
    if (!(wm = lc_calloc(nwm, sizeof *wm)) || !(shards = lc_calloc(nwm, sizeof *shards))) {
        rc = lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
        goto done;
    }
    size_t k = 0;
    for (const cJSON *it = wmap->child; it; it = it->next, k++) {
        if (!cJSON_IsString(it) || !safe_shard_name(it->valuestring)) {
            rc = fail_at(err, LC_E_MALFORMED, LC_NO_OFFSET, it->string,
                         "weight_map value is not a relative shard file name");
            goto done;
        }
        wm[k].name = it->string;
        wm[k].shard = it->valuestring;
    }
    /* Shards in file-name order (model-00001-of-N first), as transformers and
     * llama.cpp's converter read them; weight_map lists tensors by name, so its first
     * mention of a shard says nothing about the order. Sorting the entries by shard
     * numbers the distinct shards in that order in n log n: an index may name as many
     * shards as tensors, and a search per entry would be quadratic. */
    qsort(wm, nwm, sizeof *wm, wm_by_shard);
    for (k = 0; k < nwm; k++) {
        if (k == 0 || strcmp(wm[k - 1].shard, wm[k].shard) != 0)
            shards[nshards++] = wm[k].shard;
        wm[k].shard_no = nshards - 1;
    }
    qsort(wm, nwm, sizeof *wm, wm_by_name);
    for (k = 1; k < nwm; k++)
        if (strcmp(wm[k - 1].name, wm[k].name) == 0) {
            rc = fail_at(err, LC_E_MALFORMED, LC_NO_OFFSET, wm[k].name,
                         "weight_map lists the tensor twice");
            goto done;
        }
    if (!(all = lc_model_new())) {
        rc = lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
        goto done;
    }
    for (size_t s = 0; s < nshards; s++) {
        size_t need = strlen(dir) + strlen(shards[s]) + 2;
        lc_free(shard_path);
        if (!(shard_path = lc_malloc(need))) {
            rc = lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
            goto done;
        }
        snprintf(shard_path, need, "%s/%s", dir, shards[s]);
        lc_model *shard = NULL;
        if ((rc = lc_safetensors_load(shard_path, &shard, err)) != LC_OK)
            goto done;
        /* `all` owns the shard model (and so its map) from here, even on failure. */
        if ((rc = lc_model_own(all, shard, free_model, err)) != LC_OK ||
            (rc = merge_shard(all, shard, shard_path, s, wm, nwm, err)) != LC_OK)
            goto done;
    }
    for (k = 0; k < nwm; k++)
        if (!wm[k].found) {
            lc_fail(err, LC_E_MISMATCH, LC_NO_OFFSET, "the index places the tensor in %s, which "
                    "does not hold it", wm[k].shard);
            lc_err_context(err, index, NULL);
            ctx_name(err, wm[k].name);
            rc = LC_E_MISMATCH;
            goto done;
        }
    *out = all;
    all = NULL;
done:
    lc_err_context(err, index ? index : index_json_path_or_dir, NULL);
    lc_model_free(all);
    lc_free((void *)shards);
    lc_free(wm);
    cJSON_Delete(root);
    lc_map_close(map);
    lc_free(shard_path);
    lc_free(dir);
    lc_free(index);
    return rc;
}

/* ---- writer ---- */

/* Position of each dtype in the reference's Dtype enum (tensor.rs), which the
 * reference sorts by, largest first: BOOL F4 F6_E2M3 F6_E3M2 U8 I8 F8_E5M2 F8_E4M3
 * F8_E8M0 F8_E4M3FNUZ F8_E5M2FNUZ I16 U16 F16 BF16 I32 U32 F32 C64 F64 I64 U64.
 * 0 marks dtypes safetensors cannot hold. */
static const uint8_t g_rank[LC_DT_COUNT] = {
    [LC_DT_BOOL] = 1,     [LC_DT_U8] = 5,       [LC_DT_I8] = 6,   [LC_DT_F8_E5M2] = 7,
    [LC_DT_F8_E4M3] = 8,  [LC_DT_I16] = 12,     [LC_DT_U16] = 13, [LC_DT_F16] = 14,
    [LC_DT_BF16] = 15,    [LC_DT_I32] = 16,     [LC_DT_U32] = 17, [LC_DT_F32] = 18,
    [LC_DT_F64] = 20,     [LC_DT_I64] = 21,     [LC_DT_U64] = 22,
};

static int by_dtype_then_name(const void *a, const void *b) {
    const lc_tensor *x = *(const lc_tensor *const *)a, *y = *(const lc_tensor *const *)b;
    if (g_rank[x->dtype] != g_rank[y->dtype])
        return g_rank[x->dtype] > g_rank[y->dtype] ? -1 : 1;
    return strcmp(x->name, y->name);
}

static bool utf8_ok(const char *s, size_t len) {
    return lc_json_utf8_valid_prefix((const uint8_t *)s, len) == len;
}

static lc_code put_meta(lc_json_buf *h, const lc_model *m, const lc_st_write_opts *opts,
                        lc_error *err) {
    lc_code rc = LC_OK;
    lc_json_buf text = {0};
    size_t nmeta = lc_model_meta_count(m);
    if (nmeta == 0)
        return LC_OK;
    LC_TRY(lc_json_put(h, "\"__metadata__\":{", 16, err));
    for (size_t i = 0; i < nmeta && rc == LC_OK; i++) {
        const lc_kv *kv = lc_model_meta(m, i);
        const char *s;
        size_t len;
        if (kv->val.type == LC_VT_STRING) {
            s = kv->val.str.ptr;
            len = (size_t)kv->val.str.len;
        } else if (opts && opts->stringify_meta) {
            text.len = 0;
            if ((rc = lc_inspect_value_json(&text, &kv->val, err)) != LC_OK)
                break;
            s = text.data;
            len = text.len;
        } else {
            rc = fail_at(err, LC_E_UNSUPPORTED, LC_NO_OFFSET, kv->key,
                         "safetensors metadata holds strings only");
            break;
        }
        if (!utf8_ok(kv->key, strlen(kv->key)) || !utf8_ok(s, len)) {
            rc = fail_at(err, LC_E_UNSUPPORTED, LC_NO_OFFSET, kv->key,
                         "metadata is not valid UTF-8");
            break;
        }
        if ((i && (rc = lc_json_put(h, ",", 1, err)) != LC_OK) ||
            (rc = lc_json_put_string(h, kv->key, strlen(kv->key), err)) != LC_OK ||
            (rc = lc_json_put(h, ":", 1, err)) != LC_OK ||
            (rc = lc_json_put_string(h, s, len, err)) != LC_OK)
            break;
    }
    lc_json_buf_free(&text);
    if (rc == LC_OK)
        rc = lc_json_put(h, "}", 1, err);
    return rc;
}

/* Builds the padded header for tensors in `order`, exactly as serde_json writes it. */
static lc_code build_header(const lc_model *m, const lc_tensor *const *order, size_t n,
                            const lc_st_write_opts *opts, lc_json_buf *h, lc_error *err) {
    LC_TRY(lc_json_put(h, "{", 1, err));
    LC_TRY(put_meta(h, m, opts, err));
    uint64_t off = 0;
    for (size_t i = 0; i < n; i++) {
        const lc_tensor *t = order[i];
        const char *st_name = lc_dtype_get(t->dtype)->st_name;
        if (!st_name || !g_rank[t->dtype])
            return fail_at(err, LC_E_UNSUPPORTED, LC_NO_OFFSET, t->name,
                           "safetensors has no such dtype");
        if (!utf8_ok(t->name, strlen(t->name)))
            return fail_at(err, LC_E_UNSUPPORTED, LC_NO_OFFSET, t->name,
                           "tensor name is not valid UTF-8");
        uint64_t end;
        if (lc_add_u64(off, t->nbytes, &end))
            return fail_at(err, LC_E_OVERFLOW, LC_NO_OFFSET, t->name, "data passes 2^64 bytes");
        if (i || lc_model_meta_count(m))
            LC_TRY(lc_json_put(h, ",", 1, err));
        LC_TRY(lc_json_put_string(h, t->name, strlen(t->name), err));
        LC_TRY(lc_json_printf(h, err, ":{\"dtype\":\"%s\",\"shape\":[", st_name));
        for (uint32_t d = 0; d < t->ndim; d++)
            LC_TRY(lc_json_printf(h, err, d ? ",%" PRIu64 : "%" PRIu64, t->shape[d]));
        LC_TRY(lc_json_printf(h, err, "],\"data_offsets\":[%" PRIu64 ",%" PRIu64 "]}", off, end));
        off = end;
    }
    LC_TRY(lc_json_put(h, "}", 1, err));
    while (h->len % 8)
        LC_TRY(lc_json_put(h, " ", 1, err));
    if (h->len > LC_SAFETENSORS_MAX_HEADER)
        return lc_fail(err, LC_E_OVERFLOW, LC_NO_OFFSET, "header of %zu bytes is above the "
                       "limit of %u", h->len, LC_SAFETENSORS_MAX_HEADER);
    return LC_OK;
}

/* The open file a tensor is an unchanged range of (any reader's source may say so),
 * or -1. */
static int source_fd(const lc_tensor *t, uint64_t *off) {
    int fd;
    return lc_tensor_file_range(t, &fd, off) ? fd : -1;
}

/* Lays the tensors out as segments (libconvert/segments.h): tensors that sit back
 * to back in the same input file, as they do when a reference-written file is
 * rewritten, are one COPY run (copied in the kernel, or read with pread when small,
 * never through a map, whose touched pages would count in RSS); zero-copy views are
 * written as they are; the rest is read through their sources by worker threads.
 * first[k] is the index in order[] of segment k's first tensor, for error names. */
static size_t plan_segments(const lc_tensor **order, size_t n, lc_segment *segs,
                            size_t *first) {
    size_t k = 0;
    for (size_t i = 0, j; i < n; i = j, k++) {
        uint64_t start, next;
        const int fd = source_fd(order[i], &start);
        uint64_t len = order[i]->nbytes;
        for (j = i + 1; fd >= 0 && j < n && source_fd(order[j], &next) == fd &&
                        next == start + len; j++)
            len += order[j]->nbytes;
        first[k] = i;
        if (fd >= 0)
            segs[k] = (lc_segment){ .kind = LC_SEG_COPY, .t = order[i], .fd = fd, .off = start,
                                    .len = len };
        else if (order[i]->data)
            segs[k] = (lc_segment){ .kind = LC_SEG_VIEW, .t = order[i], .ptr = order[i]->data,
                                    .len = len };
        else
            segs[k] = (lc_segment){ .kind = LC_SEG_READ, .t = order[i], .len = len };
    }
    return k;
}

lc_code lc_safetensors_write(const lc_model *m, const char *path, const lc_st_write_opts *opts,
                             lc_progress *progress, lc_error *err) {
    lc_code rc = LC_OK;
    size_t n = lc_model_tensor_count(m);
    const lc_tensor **order = lc_calloc(n, sizeof *order);
    lc_segment *segs = lc_calloc(n ? n : 1, sizeof *segs);
    size_t *first = lc_calloc(n ? n : 1, sizeof *first);
    lc_json_buf h = {0};
    lc_outfile *f = NULL;
    lc_segments_failure failed = { 0, false };
    if (!order || !segs || !first) {
        rc = lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
        goto done;
    }
    uint64_t total = 0;
    for (size_t i = 0; i < n; i++) {
        order[i] = lc_model_tensor(m, i);
        total += order[i]->nbytes; /* for progress only; build_header checks overflow */
    }
    qsort((void *)order, n, sizeof *order, by_dtype_then_name);
    if ((rc = build_header(m, order, n, opts, &h, err)) != LC_OK)
        goto done;
    if ((rc = lc_outfile_open(path, &f, err)) != LC_OK)
        goto done;
    uint8_t len8[8];
    lc_store_le64(len8, (uint64_t)h.len);
    if ((rc = lc_outfile_write(f, len8, 8, err)) != LC_OK ||
        (rc = lc_outfile_write(f, h.data, h.len, err)) != LC_OK)
        goto done;
    lc_outfile_reserve(f, 8 + h.len + total);     /* build_header checked the sum */
    lc_progress_begin(progress, path, total);
    const size_t nseg = plan_segments(order, n, segs, first);
    const lc_segments_opts so = { .threads = opts ? opts->threads : 0 };
    if ((rc = lc_segments_write(f, segs, nseg, &so, progress, &failed, err)) != LC_OK) {
        if (failed.segment < nseg)
            ctx_name(err, order[first[failed.segment]]->name);
        goto done;
    }
    lc_progress_end(progress);
    rc = lc_outfile_commit(f, err);
    f = NULL;
done:
    lc_progress_end(progress);
    lc_outfile_abort(f);
    lc_free(segs);
    lc_free(first);
    lc_json_buf_free(&h);
    lc_free((void *)order);
    /* A source's failure (a bad CRC, a value the cast cannot hold) is about an input
     * file at an input offset: the caller, who knows that file, names it. */
    if (!failed.source)
        lc_err_context(err, path, NULL);
    return rc;
}
