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
#include <string.h>

#include "libconvert/alloc.h"
#include "libconvert/bytes.h"
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

/* ---- reader ---- */

/* A borrowed string view; at is the offset of its length field. */
static lc_code read_str(lc_rd *r, const char **s, uint64_t *len, const char *what) {
    const uint64_t at = lc_rd_at(r);
    LC_TRY(lc_rd_u64(r, len, what));
    if (*len > lc_rd_left(r))
        return lc_fail(r->err, LC_E_TRUNCATED, at,
                       "%s of %" PRIu64 " bytes runs past the end (%" PRIu64 " bytes left)",
                       what, *len, lc_rd_left(r));
    *s = (const char *)r->base + r->pos;
    r->pos += *len;
    return LC_OK;
}

/* Reads a key or tensor name into a new C string; NUL bytes are refused. */
static lc_code read_name(lc_rd *r, char **out, const char *what) {
    const uint64_t at = lc_rd_at(r);
    const char *s;
    uint64_t len;
    *out = NULL;
    LC_TRY(read_str(r, &s, &len, what));
    if (memchr(s, '\0', (size_t)len))
        return lc_fail(r->err, LC_E_MALFORMED, at, "%s contains a NUL byte", what);
    if (!(*out = lc_strndup(s, (size_t)len)))
        return lc_fail(r->err, LC_E_NOMEM, at, "out of memory copying a %" PRIu64 "-byte %s",
                       len, what);
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

static lc_code read_value(lc_rd *r, lc_vtype t, int depth, lc_value *out);

static lc_code read_array(lc_rd *r, int depth, lc_value *out) {
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
    lc_value v;
    LC_TRY(lc_value_array(&v, elem, count, r->err));
    for (uint64_t k = 0; k < count; k++) {
        lc_code rc = read_value(r, elem, depth + 1, &v.arr.items[k]);
        if (rc != LC_OK) {
            lc_value_clear(&v);
            return rc;
        }
    }
    *out = v;
    return LC_OK;
}

static lc_code read_value(lc_rd *r, lc_vtype t, int depth, lc_value *out) {
    const uint64_t at = lc_rd_at(r);
    const uint8_t *p;
    switch (t) {
    case LC_VT_STRING: {
        const char *s;
        uint64_t len;
        LC_TRY(read_str(r, &s, &len, "string value"));
        return lc_value_string(out, s, (size_t)len, r->err);
    }
    case LC_VT_ARRAY:
        return read_array(r, depth, out);
    case LC_VT_BOOL:
        LC_TRY(lc_rd_bytes(r, 1, &p, "bool value"));
        if (p[0] > 1)
            return lc_fail(r->err, LC_E_MALFORMED, at, "bool value is %u, not 0 or 1", p[0]);
        *out = lc_value_bool(p[0] != 0);
        return LC_OK;
    default:
        break;
    }
    LC_TRY(lc_rd_bytes(r, lc_vtype_size(t), &p, "metadata value"));
    switch (t) {
    case LC_VT_U8:  *out = lc_value_uint(t, p[0]); break;
    case LC_VT_U16: *out = lc_value_uint(t, lc_load_le16(p)); break;
    case LC_VT_U32: *out = lc_value_uint(t, lc_load_le32(p)); break;
    case LC_VT_U64: *out = lc_value_uint(t, lc_load_le64(p)); break;
    case LC_VT_I8:  *out = lc_value_int(t, (int8_t)p[0]); break;
    case LC_VT_I16: *out = lc_value_int(t, (int16_t)lc_load_le16(p)); break;
    case LC_VT_I32: *out = lc_value_int(t, (int32_t)lc_load_le32(p)); break;
    case LC_VT_I64: *out = lc_value_int(t, (int64_t)lc_load_le64(p)); break;
    case LC_VT_F32: *out = lc_value_float(t, lc_bits_to_f32(lc_load_le32(p))); break;
    default: {
        uint64_t u = lc_load_le64(p);
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

/* One metadata entry; a failure names the key in err->where once it is known. */
static lc_code parse_kv(lc_rd *r, lc_model *m, lc_gguf_info *info) {
    const uint64_t key_at = lc_rd_at(r);
    char *key = NULL;
    lc_value val = lc_value_uint(LC_VT_U8, 0);
    lc_code rc = read_name(r, &key, "metadata key");
    if (rc != LC_OK)
        return rc;
    if (lc_model_find_meta(m, key)) {   /* hashed: many keys stay linear */
        rc = lc_fail(r->err, LC_E_MALFORMED, key_at, "duplicate metadata key");
        goto done;
    }
    const uint64_t type_at = lc_rd_at(r);
    lc_vtype t;
    if ((rc = read_vtype(r, &t, "value type")) != LC_OK)
        goto done;
    const uint64_t val_at = lc_rd_at(r);
    if ((rc = read_value(r, t, 0, &val)) != LC_OK)
        goto done;
    if (strcmp(key, ALIGNMENT_KEY) == 0) {
        if (t != LC_VT_U32) {
            rc = lc_fail(r->err, LC_E_MALFORMED, type_at, "alignment has type %s, must be u32",
                         lc_vtype_name(t));
            goto done;
        }
        if (!is_pow2(val.u)) {
            rc = lc_fail(r->err, LC_E_MALFORMED, val_at,
                         "alignment %" PRIu64 " is not a nonzero power of two", val.u);
            goto done;
        }
        info->alignment = (uint32_t)val.u;
    }
    rc = lc_model_add_meta(m, key, &val, r->err);
done:
    lc_value_clear(&val);
    if (rc != LC_OK)
        lc_err_context(r->err, NULL, key);
    lc_free(key);
    return rc;
}

/* One tensor info; *expected is the running sum of padded sizes, advanced here. */
static lc_code parse_tensor_info(lc_rd *r, lc_model *m, uint32_t align, uint64_t *expected,
                                 uint64_t *off_at) {
    const uint64_t name_at = lc_rd_at(r);
    char *name = NULL;
    lc_code rc = read_name(r, &name, "tensor name");
    if (rc != LC_OK)
        return rc;
    lc_error *err = r->err;
    if (lc_model_find_tensor(m, name)) {
        rc = lc_fail(err, LC_E_MALFORMED, name_at, "duplicate tensor name");
        goto done;
    }
    const uint64_t ndim_at = lc_rd_at(r);
    uint32_t ndim;
    if ((rc = lc_rd_u32(r, &ndim, "n_dims")) != LC_OK)
        goto done;
    if (ndim > LC_GGUF_MAX_DIMS) {
        rc = lc_fail(err, LC_E_MALFORMED, ndim_at, "%" PRIu32 " dimensions, at most %d",
                     ndim, LC_GGUF_MAX_DIMS);
        goto done;
    }
    const uint64_t ne_at = lc_rd_at(r);
    uint64_t ne[LC_GGUF_MAX_DIMS], numel = 1;
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
    *off_at = lc_rd_at(r);
    uint64_t off;
    if ((rc = lc_rd_u64(r, &off, "tensor offset")) != LC_OK)
        goto done;
    if (off % align != 0) {
        rc = lc_fail(err, LC_E_MALFORMED, *off_at,
                     "offset %" PRIu64 " is not a multiple of the alignment %" PRIu32, off,
                     align);
        goto done;
    }
    if (off != *expected) {
        rc = lc_fail(err, LC_E_MALFORMED, *off_at,
                     "offset %" PRIu64 " is not %" PRIu64 ", the end of the previous tensor "
                     "(overlap or gap)", off, *expected);
        goto done;
    }
    uint64_t shape[LC_GGUF_MAX_DIMS];
    for (uint32_t d = 0; d < ndim; d++)
        shape[d] = ne[ndim - 1 - d];
    uint64_t nbytes;
    if (lc_shape_nbytes(dt, ndim, shape, &nbytes, NULL) != LC_OK) {
        rc = lc_fail(err, LC_E_OVERFLOW, ne_at, "byte size of the %s tensor overflows 64 bits",
                     lc_dtype_name(dt));
        goto done;
    }
    lc_tensor *t;
    if ((rc = lc_model_add_tensor(m, name, dt, ndim, shape, &t, err)) != LC_OK)
        goto done; /* only out of memory is left */
    t->file_offset = off; /* relative until the data section is known */
    uint64_t padded;
    if (lc_add_u64(t->nbytes, align - 1, &padded) ||
        lc_add_u64(off, padded & ~(uint64_t)(align - 1), expected)) {
        rc = lc_fail(err, LC_E_OVERFLOW, ne_at, "data section size overflows 64 bits");
        goto done;
    }
done:
    if (rc != LC_OK)
        lc_err_context(err, NULL, name);
    lc_free(name);
    return rc;
}

static lc_code parse(const uint8_t *buf, uint64_t size, lc_model *m, lc_gguf_info *info,
                     lc_error *err) {
    lc_rd r = lc_rd_init(buf, size, 0, err);
    uint64_t *off_at = NULL;
    lc_code rc;
    memset(info, 0, sizeof *info);
    info->alignment = LC_GGUF_DEFAULT_ALIGNMENT;
    if ((rc = parse_header(&r, info)) != LC_OK)
        return rc;
    for (uint64_t i = 0; i < info->n_kv; i++)
        if ((rc = parse_kv(&r, m, info)) != LC_OK)
            return rc;
    /* n_tensors * 24 <= size was checked, so this allocation is bounded by the file. */
    if (info->n_tensors &&
        !(off_at = lc_malloc_array((size_t)info->n_tensors, sizeof *off_at))) {
        rc = lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
        goto done;
    }
    uint64_t expected = 0;
    for (uint64_t i = 0; i < info->n_tensors; i++)
        if ((rc = parse_tensor_info(&r, m, info->alignment, &expected, &off_at[i])) != LC_OK)
            goto done;
    const uint64_t align = info->alignment;
    info->data_offset = (r.pos + align - 1) & ~(align - 1);  /* pos <= size: no overflow */
    if (info->n_tensors && info->data_offset > size) {
        rc = lc_fail(err, LC_E_TRUNCATED, r.pos, "padding to the data section at %" PRIu64
                     " runs past the end of the %" PRIu64 "-byte file", info->data_offset,
                     size);
        goto done;
    }
    for (uint64_t i = 0; i < info->n_tensors; i++) {
        lc_tensor *t = lc_model_tensor(m, (size_t)i);
        uint64_t start, end;
        if (lc_add_u64(info->data_offset, t->file_offset, &start) ||
            lc_add_u64(start, t->nbytes, &end) || end > size) {
            rc = lc_fail(err, LC_E_TRUNCATED, off_at[i],
                         "%" PRIu64 " bytes of data at offset %" PRIu64 " run past the end "
                         "of the %" PRIu64 "-byte file", t->nbytes, t->file_offset, size);
            lc_err_context(err, NULL, t->name);
            goto done;
        }
        t->file_offset = start;
        t->data = buf + start;
    }
done:
    lc_free(off_at);
    return rc;
}

lc_code lc_gguf_load_mem_ex(const void *buf, uint64_t size, lc_model **out,
                            lc_gguf_info *info, lc_error *err) {
    lc_gguf_info tmp;
    *out = NULL;
    lc_model *m = lc_model_new();
    if (!m)
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    lc_code rc = parse(buf, size, m, &tmp, err);
    if (rc != LC_OK) {
        lc_model_free(m);
        return rc;
    }
    if (info)
        *info = tmp;
    *out = m;
    return LC_OK;
}

lc_code lc_gguf_load_mem(const void *buf, uint64_t size, lc_model **out, lc_error *err) {
    return lc_gguf_load_mem_ex(buf, size, out, NULL, err);
}

lc_code lc_gguf_load_ex(const char *path, lc_model **out, lc_gguf_info *info, lc_error *err) {
    lc_gguf_info tmp;
    lc_map *map = NULL;
    lc_model *m = NULL;
    lc_code rc;
    *out = NULL;
    if (!(m = lc_model_new())) {
        rc = lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
        goto done;
    }
    if ((rc = lc_map_open(path, &map, err)) != LC_OK)
        goto done;
    const lc_map *mp = map;
    if ((rc = lc_model_own(m, map, lc_map_close, err)) != LC_OK) /* frees map on failure */
        goto done;
    if ((rc = parse(mp->data, mp->size, m, &tmp, err)) != LC_OK)
        goto done;
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

lc_code lc_gguf_load(const char *path, lc_model **out, lc_error *err) {
    return lc_gguf_load_ex(path, out, NULL, err);
}

/* ---- writer ---- */

static lc_code w_u32(lc_outfile *f, uint32_t v, lc_error *err) {
    uint8_t b[4];
    lc_store_le32(b, v);
    return lc_outfile_write(f, b, sizeof b, err);
}

static lc_code w_u64(lc_outfile *f, uint64_t v, lc_error *err) {
    uint8_t b[8];
    lc_store_le64(b, v);
    return lc_outfile_write(f, b, sizeof b, err);
}

static lc_code w_str(lc_outfile *f, const char *s, uint64_t len, lc_error *err) {
    LC_TRY(w_u64(f, len, err));
    return lc_outfile_write(f, s, (size_t)len, err);
}

static lc_code w_value(lc_outfile *f, const lc_value *v, lc_error *err) {
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
        for (uint64_t k = 0; k < v->arr.count; k++) {
            if (v->arr.items[k].type != v->arr.elem)
                return lc_fail(err, LC_E_ARG, LC_NO_OFFSET,
                               "array of %s holds a %s at index %" PRIu64,
                               lc_vtype_name(v->arr.elem), lc_vtype_name(v->arr.items[k].type),
                               k);
            LC_TRY(w_value(f, &v->arr.items[k], err));
        }
        return LC_OK;
    default:
        return lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "invalid value type %d", (int)v->type);
    }
    return lc_outfile_write(f, b, lc_vtype_size(v->type), err);
}

/* Checks what the writer refuses before a byte is written; fills *align. */
static lc_code check_model(const lc_model *m, uint32_t *align, uint64_t *total, lc_error *err) {
    const lc_value *a = lc_model_find_meta(m, ALIGNMENT_KEY);
    *align = LC_GGUF_DEFAULT_ALIGNMENT;
    if (a) {
        if (a->type != LC_VT_U32 || !is_pow2(a->u)) {
            lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "%s must be a u32 power of two",
                    ALIGNMENT_KEY);
            lc_err_context(err, NULL, ALIGNMENT_KEY);
            return LC_E_ARG;
        }
        *align = (uint32_t)a->u;
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
    return LC_OK;
}

static lc_code pad_to(lc_outfile *f, uint32_t align, lc_error *err) {
    const uint64_t at = lc_outfile_tell(f), rem = at % align;
    return rem ? lc_outfile_pad(f, (size_t)(align - rem), err) : LC_OK;
}

static lc_code write_header(lc_outfile *f, const lc_model *m, uint32_t align, lc_error *err) {
    const size_t nt = lc_model_tensor_count(m), nkv = lc_model_meta_count(m);
    LC_TRY(lc_outfile_write(f, "GGUF", 4, err));
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

lc_code lc_gguf_write(const lc_model *m, const char *path, const lc_gguf_write_opts *o,
                      lc_progress *p, lc_error *err) {
    const lc_segments_opts so = { .chunk_bytes = o ? o->chunk_bytes : 0,
                                  .threads = o ? o->threads : 0 };
    const size_t nt = lc_model_tensor_count(m);
    lc_outfile *f = NULL;
    lc_segment *segs = NULL;
    lc_segments_failure failed = { 0, false };
    uint32_t align;
    uint64_t total, size;
    lc_code rc;
    if ((rc = check_model(m, &align, &total, err)) != LC_OK)
        goto done;
    if (!(segs = lc_calloc(nt ? 2 * nt : 1, sizeof *segs))) {
        rc = lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory for %zu tensors", nt);
        goto done;
    }
    if ((rc = lc_outfile_open(path, &f, err)) != LC_OK ||
        (rc = write_header(f, m, align, err)) != LC_OK)
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
    rc = lc_outfile_commit(f, err);
    f = NULL;
done:
    lc_outfile_abort(f);
    lc_free(segs);
    /* A source's failure already names its own file; the caller adds it. */
    if (!failed.source)
        lc_err_context(err, path, NULL);
    return rc;
}
