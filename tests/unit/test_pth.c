/* Unit tests for formats/pth: checkpoints assembled byte by byte here, one test per
 * code the reader returns, each asserting the code and the file offset. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "formats/pth.h"
#include "libconvert/alloc.h"
#include "libconvert/bytes.h"

/* ---- a tiny pickle and zip assembler ---- */

typedef struct buf {
    uint8_t d[8192];
    size_t  n;
} buf;

static void put(buf *b, const void *p, size_t n) {
    cr_assert_leq(b->n + n, sizeof b->d);
    memcpy(b->d + b->n, p, n);
    b->n += n;
}
static void raw(buf *b, const char *s) { put(b, s, strlen(s)); }
static void u8(buf *b, uint8_t v) { put(b, &v, 1); }
static void le32(buf *b, uint32_t v) {
    uint8_t x[4];
    lc_store_le32(x, v);
    put(b, x, 4);
}
static void le16(buf *b, uint16_t v) {
    uint8_t x[2];
    lc_store_le16(x, v);
    put(b, x, 2);
}
static void le64(buf *b, uint64_t v) {
    uint8_t x[8];
    lc_store_le64(x, v);
    put(b, x, 8);
}
static void pstr(buf *b, const char *s) {   /* BINUNICODE */
    u8(b, 'X');
    le32(b, (uint32_t)strlen(s));
    raw(b, s);
}
static void pint(buf *b, int32_t v) {       /* BININT */
    u8(b, 'J');
    le32(b, (uint32_t)v);
}

/* Offsets (within the pickle) of the parts a test points at. */
typedef struct tpick {
    size_t cls;     /* GLOBAL of the storage class */
    size_t numel;   /* the storage size int */
    size_t persid;  /* BINPERSID */
    size_t reduce;  /* REDUCE of the rebuild call */
} tpick;

/* {"w": _rebuild_tensor_v2(storage(cls, "0", numel), offset, (size,), (1,), False, {})} */
static tpick tensor_pickle(buf *b, const char *cls, int64_t numel, int32_t offset,
                           int32_t size, bool legacy) {
    tpick at;
    size_t base = b->n;
    raw(b, "\x80\x02}(");
    pstr(b, "w");
    raw(b, "ctorch._utils\n_rebuild_tensor_v2\n((");
    pstr(b, "storage");
    at.cls = b->n - base;
    raw(b, "ctorch\n");
    raw(b, cls);
    raw(b, "\n");
    pstr(b, "0");
    pstr(b, "cpu");
    at.numel = b->n - base;
    raw(b, "\x8a\x08");   /* LONG1, 8 bytes */
    le64(b, (uint64_t)numel);
    if (legacy)
        raw(b, "N");
    raw(b, "t");
    at.persid = b->n - base;
    raw(b, "Q");
    pint(b, offset);
    pint(b, size);
    raw(b, "\x85");
    pint(b, 1);
    raw(b, "\x85\x89}t");
    at.reduce = b->n - base;
    raw(b, "Ru.");
    return at;
}

/* Legacy header: magic, protocol, sys info. */
static void legacy_head(buf *b, bool little, int proto) {
    static const uint8_t magic[] = { 0x80, 0x02, 0x8a, 0x0a, 0x6c, 0xfc, 0x9c, 0x46, 0xf9,
                                     0x20, 0x6a, 0xa8, 0x50, 0x19, '.' };
    put(b, magic, sizeof magic);
    raw(b, "\x80\x02M");
    le16(b, (uint16_t)proto);
    raw(b, ".\x80\x02}");
    pstr(b, "little_endian");
    raw(b, little ? "\x88s." : "\x89s.");
}

static void legacy_keys(buf *b) {
    raw(b, "\x80\x02](");
    pstr(b, "0");
    raw(b, "e.");
}

typedef struct entry {
    const char *name;
    const uint8_t *data;
    size_t n;
} entry;

typedef struct zinfo {
    size_t data_off[8];
    size_t local_off[8];
} zinfo;

/* A stored zip of the entries, like Python's zipfile writes it. */
static zinfo zip(buf *b, const entry *e, size_t n) {
    zinfo zi;
    size_t *local = zi.local_off;
    for (size_t i = 0; i < n; i++) {
        uint32_t crc = (uint32_t)crc32(0, e[i].data, (uInt)e[i].n);
        local[i] = b->n;
        le32(b, 0x04034b50); le16(b, 20); le16(b, 0); le16(b, 0); le16(b, 0); le16(b, 0x21);
        le32(b, crc); le32(b, (uint32_t)e[i].n); le32(b, (uint32_t)e[i].n);
        le16(b, (uint16_t)strlen(e[i].name)); le16(b, 0);
        raw(b, e[i].name);
        zi.data_off[i] = b->n;
        put(b, e[i].data, e[i].n);
    }
    size_t cd = b->n;
    for (size_t i = 0; i < n; i++) {
        uint32_t crc = (uint32_t)crc32(0, e[i].data, (uInt)e[i].n);
        le32(b, 0x02014b50); le16(b, 20); le16(b, 20); le16(b, 0); le16(b, 0); le16(b, 0);
        le16(b, 0x21); le32(b, crc); le32(b, (uint32_t)e[i].n); le32(b, (uint32_t)e[i].n);
        le16(b, (uint16_t)strlen(e[i].name)); le16(b, 0); le16(b, 0); le16(b, 0); le16(b, 0);
        le32(b, 0); le32(b, (uint32_t)local[i]);
        raw(b, e[i].name);
    }
    size_t cd_len = b->n - cd;
    le32(b, 0x06054b50); le16(b, 0); le16(b, 0); le16(b, (uint16_t)n); le16(b, (uint16_t)n);
    le32(b, (uint32_t)cd_len); le32(b, (uint32_t)cd); le16(b, 0);
    return zi;
}

static const float four[4] = { 1.0f, -2.0f, 3.5f, 4.0f };

static lc_code load(const buf *b, const lc_pth_opts *o, lc_model **m, lc_error *err) {
    memset(err, 0, sizeof *err);
    return lc_pth_load_mem(b->d, b->n, o, m, err);
}

#define EXPECT(b, opts, want_code, want_off)                                    \
    do {                                                                            \
        lc_model *m_ = (lc_model *)1;                                               \
        lc_error e_;                                                                \
        cr_assert_eq(load(b, opts, &m_, &e_), want_code, "code %s: %s",             \
                     lc_code_name(e_.code), e_.msg);                                \
        cr_assert_eq(e_.offset, (uint64_t)(want_off), "offset %llu, want %llu: %s", \
                     (unsigned long long)e_.offset, (unsigned long long)(want_off),  \
                     e_.msg);                                                       \
        cr_assert_null(m_);                                                         \
    } while (0)

/* A legacy file: header, tensor pickle, keys, then storage "0". Returns where the
 * object pickle starts and fills its part offsets. */
static size_t legacy_file(buf *b, tpick *at, const char *cls, int64_t numel, int32_t offset,
                          int32_t size, uint64_t stored_numel, const void *data, size_t n) {
    legacy_head(b, true, 1001);
    size_t obj = b->n;
    *at = tensor_pickle(b, cls, numel, offset, size, true);
    legacy_keys(b);
    le64(b, stored_numel);
    put(b, data, n);
    return obj;
}

/* ---- good files ---- */

Test(pth, legacy_reads_values) {
    buf b = { .n = 0 };
    tpick at;
    legacy_file(&b, &at, "FloatStorage", 4, 1, 3, 4, four, sizeof four);
    lc_model *m;
    lc_error err;
    cr_assert_eq(load(&b, NULL, &m, &err), LC_OK, "%s", err.msg);
    cr_assert_eq(lc_model_tensor_count(m), 1);
    const lc_tensor *t = lc_model_tensor(m, 0);
    cr_assert_str_eq(t->name, "w");
    cr_assert_eq(t->dtype, LC_DT_F32);
    cr_assert_eq(t->ndim, 1);
    cr_assert_eq(t->shape[0], 3);
    float got[3];
    cr_assert_eq(lc_tensor_read(t, 0, got, sizeof got, &err), LC_OK);
    cr_assert(got[0] == -2.0f && got[1] == 3.5f && got[2] == 4.0f);
    cr_assert_eq(t->file_offset, b.n - sizeof four + 4);  /* element 1 of the storage */
    lc_model_free(m);
}

Test(pth, zip_reads_values_and_big_endian) {
    buf p = { .n = 0 }, b = { .n = 0 };
    tensor_pickle(&p, "FloatStorage", 4, 0, 4, false);
    uint8_t be[16];
    for (int i = 0; i < 4; i++) {   /* the same floats, big-endian */
        uint32_t u = lc_f32_to_bits(four[i]);
        for (int k = 0; k < 4; k++)
            be[i * 4 + k] = (uint8_t)(u >> (24 - 8 * k));
    }
    entry e[] = { { "archive/data.pkl", p.d, p.n },
                  { "archive/byteorder", (const uint8_t *)"big", 3 },
                  { "archive/data/0", be, sizeof be } };
    zip(&b, e, 3);
    lc_model *m;
    lc_error err;
    cr_assert_eq(load(&b, NULL, &m, &err), LC_OK, "%s", err.msg);
    float got[4];
    cr_assert_eq(lc_tensor_read(lc_model_tensor(m, 0), 0, got, sizeof got, &err), LC_OK);
    cr_assert_eq(memcmp(got, four, sizeof got), 0);
    lc_model_free(m);
}

/* ---- one test per code ---- */

Test(pth, not_a_checkpoint_is_malformed_at_0) {
    buf b = { .n = 0 };
    raw(&b, "hello world");
    EXPECT(&b, NULL, LC_E_MALFORMED, 0);
}

Test(pth, legacy_bad_magic_is_malformed_at_0) {
    buf b = { .n = 0 };
    raw(&b, "\x80\x02K\x05.");
    EXPECT(&b, NULL, LC_E_MALFORMED, 0);
}

Test(pth, legacy_protocol_is_unsupported_at_its_int) {
    buf b = { .n = 0 };
    legacy_head(&b, true, 1000);
    EXPECT(&b, NULL, LC_E_UNSUPPORTED, 15 + 2);   /* magic pickle is 15 bytes; PROTO 2 */
}

Test(pth, legacy_big_endian_is_unsupported_at_sysinfo) {
    buf b = { .n = 0 };
    legacy_head(&b, false, 1001);
    EXPECT(&b, NULL, LC_E_UNSUPPORTED, 15 + 6 + 2); /* the EMPTY_DICT of the third pickle */
}

Test(pth, legacy_short_storage_is_truncated_at_its_bytes) {
    buf b = { .n = 0 };
    tpick at;
    legacy_file(&b, &at, "FloatStorage", 4, 0, 4, 4, four, 8);
    EXPECT(&b, NULL, LC_E_TRUNCATED, b.n - 8);
}

Test(pth, legacy_count_disagreeing_is_malformed_at_count) {
    buf b = { .n = 0 };
    tpick at;
    legacy_file(&b, &at, "FloatStorage", 4, 0, 4, 3, four, sizeof four);
    EXPECT(&b, NULL, LC_E_MALFORMED, b.n - sizeof four - 8);
}

Test(pth, legacy_trailing_bytes_are_malformed) {
    buf b = { .n = 0 };
    tpick at;
    legacy_file(&b, &at, "FloatStorage", 4, 0, 4, 4, four, sizeof four);
    size_t end = b.n;
    raw(&b, "xx");
    EXPECT(&b, NULL, LC_E_MALFORMED, end);
}

Test(pth, view_past_storage_is_malformed_at_reduce) {
    buf b = { .n = 0 };
    tpick at;
    size_t obj = legacy_file(&b, &at, "FloatStorage", 4, 2, 3, 4, four, sizeof four);
    EXPECT(&b, NULL, LC_E_MALFORMED, obj + at.reduce);
}

Test(pth, huge_storage_overflows_at_numel) {
    buf b = { .n = 0 };
    tpick at;
    size_t obj = legacy_file(&b, &at, "FloatStorage", INT64_C(1) << 62, 0, 4, 4, four,
                             sizeof four);
    EXPECT(&b, NULL, LC_E_OVERFLOW, obj + at.numel);
}

Test(pth, complex_storage_is_unsupported_at_class) {
    buf b = { .n = 0 };
    tpick at;
    size_t obj = legacy_file(&b, &at, "ComplexFloatStorage", 2, 0, 2, 2, four, sizeof four);
    EXPECT(&b, NULL, LC_E_UNSUPPORTED, obj + at.cls);
}

Test(pth, forbidden_global_names_itself_at_its_opcode) {
    buf b = { .n = 0 };
    legacy_head(&b, true, 1001);
    size_t obj = b.n;
    raw(&b, "\x80\x02");
    size_t g = b.n;
    raw(&b, "cos\nsystem\n(");
    pstr(&b, "touch LC_PWNED_unit");
    raw(&b, "tR.");
    lc_model *m;
    lc_error err;
    cr_assert_eq(load(&b, NULL, &m, &err), LC_E_FORBIDDEN);
    cr_assert_eq(err.offset, g);
    cr_assert_not_null(strstr(err.msg, "os.system"), "%s", err.msg);
    cr_assert_gt(g, obj);
}

Test(pth, missing_key_is_notfound_at_the_dict) {
    buf b = { .n = 0 };
    tpick at;
    size_t obj = legacy_file(&b, &at, "FloatStorage", 4, 0, 4, 4, four, sizeof four);
    lc_pth_opts o = { .key = "model" };
    EXPECT(&b, &o, LC_E_NOTFOUND, obj + 2);
}

Test(pth, zip_without_data_pkl_is_notfound) {
    buf b = { .n = 0 };
    entry e[] = { { "archive/version", (const uint8_t *)"3\n", 2 } };
    zip(&b, e, 1);
    EXPECT(&b, NULL, LC_E_NOTFOUND, LC_NO_OFFSET);
}

Test(pth, zip_missing_storage_is_notfound_at_persid) {
    buf p = { .n = 0 }, b = { .n = 0 };
    tpick at = tensor_pickle(&p, "FloatStorage", 4, 0, 4, false);
    entry e[] = { { "archive/data.pkl", p.d, p.n } };
    zinfo zi = zip(&b, e, 1);
    EXPECT(&b, NULL, LC_E_NOTFOUND, zi.data_off[0] + at.persid);
}

Test(pth, zip_storage_size_mismatch_is_malformed_at_its_header) {
    buf p = { .n = 0 }, b = { .n = 0 };
    tensor_pickle(&p, "FloatStorage", 4, 0, 4, false);
    entry e[] = { { "archive/data.pkl", p.d, p.n },
                  { "archive/data/0", (const uint8_t *)four, 12 } };
    zinfo zi = zip(&b, e, 2);
    EXPECT(&b, NULL, LC_E_MALFORMED, zi.local_off[1]);
}

Test(pth, zip_bad_byteorder_is_malformed_at_its_data) {
    buf p = { .n = 0 }, b = { .n = 0 };
    tensor_pickle(&p, "FloatStorage", 4, 0, 4, false);
    entry e[] = { { "archive/data.pkl", p.d, p.n },
                  { "archive/byteorder", (const uint8_t *)"middle", 6 },
                  { "archive/data/0", (const uint8_t *)four, 16 } };
    zinfo zi = zip(&b, e, 3);
    EXPECT(&b, NULL, LC_E_MALFORMED, zi.data_off[1]);
}

Test(pth, zip_two_checkpoints_is_malformed_at_second) {
    buf p = { .n = 0 }, b = { .n = 0 };
    tensor_pickle(&p, "FloatStorage", 4, 0, 4, false);
    entry e[] = { { "a/data.pkl", p.d, p.n }, { "a/data/0", (const uint8_t *)four, 16 },
                  { "b/data.pkl", p.d, p.n } };
    zinfo zi = zip(&b, e, 3);
    EXPECT(&b, NULL, LC_E_MALFORMED, zi.local_off[2]);
}

Test(pth, zip_errors_pass_through_with_the_entry) {
    buf p = { .n = 0 }, b = { .n = 0 };
    tensor_pickle(&p, "FloatStorage", 4, 0, 4, false);
    entry e[] = { { "archive/data.pkl", p.d, p.n } };
    zip(&b, e, 1);
    b.n -= 3;  /* cut into the end record */
    lc_model *m;
    lc_error err;
    lc_code rc = load(&b, NULL, &m, &err);
    cr_assert(rc == LC_E_TRUNCATED || rc == LC_E_MALFORMED, "%s", lc_code_name(rc));
    cr_assert_null(m);
}

/* Every allocation failing in turn must give LC_E_NOMEM and leak nothing (ASan). */
Test(pth, out_of_memory_everywhere) {
    buf b = { .n = 0 };
    tpick at;
    legacy_file(&b, &at, "FloatStorage", 4, 1, 3, 4, four, sizeof four);
    for (long nth = 1;; nth++) {
        lc_model *m;
        lc_error err;
        lc_alloc_fail_after(nth);
        lc_code rc = load(&b, NULL, &m, &err);
        lc_alloc_fail_after(0);
        if (rc == LC_OK) {
            lc_model_free(m);
            cr_assert_gt(nth, 3);
            break;
        }
        cr_assert_eq(rc, LC_E_NOMEM, "allocation %ld: %s", nth, err.msg);
        cr_assert_null(m);
    }
}

/* ---- issue 11: budgets, expanded views, no tensors, names, errors after loading ---- */

static void plong(buf *b, int64_t v) {      /* LONG1 with 8 bytes, as torch writes sizes */
    raw(b, "\x8a\x08");
    le64(b, (uint64_t)v);
}

/* _rebuild_tensor_v2(FloatStorage "0" of 4 floats, offset, size, stride, False, {}); the
 * REDUCE's offset (within b) goes to *reduce when not NULL. */
static void tcall(buf *b, int32_t offset, int ndim, const int64_t *size, const int64_t *stride,
                  size_t *reduce) {
    raw(b, "ctorch._utils\n_rebuild_tensor_v2\n((");
    pstr(b, "storage");
    raw(b, "ctorch\nFloatStorage\n");
    pstr(b, "0");
    pstr(b, "cpu");
    pint(b, 4);
    raw(b, "tQ");
    pint(b, offset);
    raw(b, "(");
    for (int d = 0; d < ndim; d++)
        plong(b, size[d]);
    raw(b, "t(");
    for (int d = 0; d < ndim; d++)
        plong(b, stride[d]);
    raw(b, "t\x89}t");
    if (reduce)
        *reduce = b->n;
    raw(b, "R");
}

static const int64_t one4[1] = { 4 }, unit[1] = { 1 };

/* The pickle p as archive/data.pkl beside the 16-byte storage archive/data/0; returns
 * the file offset of the pickle's byte 0. */
static size_t ckpt(buf *b, const buf *p) {
    entry e[] = { { "archive/data.pkl", p->d, p->n },
                  { "archive/data/0", (const uint8_t *)four, sizeof four } };
    return zip(b, e, 2).data_off[0];
}

/* Item 10: a view with stride 0 may not turn 16 bytes into 64 GiB unless asked. */
Test(pth, expanded_view_is_overflow_at_its_call) {
    buf p = { .n = 0 }, b = { .n = 0 };
    const int64_t huge[1] = { INT64_C(1) << 34 }, zero[1] = { 0 };
    size_t at;
    raw(&p, "\x80\x02}");
    pstr(&p, "w");
    tcall(&p, 0, 1, huge, zero, &at);
    raw(&p, "s.");
    size_t base = ckpt(&b, &p);
    EXPECT(&b, NULL, LC_E_OVERFLOW, base + at);
    lc_pth_opts o = { .allow_expand = true };
    lc_model *m;
    lc_error err;
    cr_assert_eq(load(&b, &o, &m, &err), LC_OK, "%s", err.msg);
    cr_assert_eq(lc_model_tensor(m, 0)->nbytes, UINT64_C(1) << 36);
    lc_model_free(m);
}

/* Within 16 x the storage + 4096 bytes in all, an expanded view is kept; past it, the
 * tensor that crosses the line is named, whichever view of the storage it is. */
Test(pth, expanded_views_of_one_storage_share_the_budget) {
    const int64_t n1024[1] = { 1024 }, n1100[1] = { 1100 }, zero[1] = { 0 };
    buf p = { .n = 0 }, b = { .n = 0 };
    raw(&p, "\x80\x02}(");
    pstr(&p, "a");
    tcall(&p, 0, 1, n1024, zero, NULL);        /* 4096 bytes: inside */
    raw(&p, "u.");
    ckpt(&b, &p);
    lc_model *m;
    lc_error err;
    cr_assert_eq(load(&b, NULL, &m, &err), LC_OK, "%s", err.msg);
    lc_model_free(m);
    buf p2 = { .n = 0 }, b2 = { .n = 0 };
    size_t at;
    raw(&p2, "\x80\x02}(");
    pstr(&p2, "a");
    tcall(&p2, 0, 1, one4, unit, NULL);        /* the whole storage: 16 bytes */
    pstr(&p2, "b");
    tcall(&p2, 0, 1, n1100, zero, &at);        /* 4400 more: 4416 > 16 x 16 + 4096 */
    raw(&p2, "u.");
    size_t base = ckpt(&b2, &p2);
    EXPECT(&b2, NULL, LC_E_OVERFLOW, base + at);
}

/* Item 17: nothing to convert is an error, not an empty file. */
Test(pth, no_tensor_is_notfound_at_the_object) {
    buf p = { .n = 0 }, b = { .n = 0 };
    raw(&p, "\x80\x02K\x05.");
    size_t base = ckpt(&b, &p);
    EXPECT(&b, NULL, LC_E_NOTFOUND, base + 2);
    buf p2 = { .n = 0 }, b2 = { .n = 0 };
    raw(&p2, "\x80\x02}(");
    pstr(&p2, "w");
    tcall(&p2, 0, 1, one4, unit, NULL);
    pstr(&p2, "m");
    size_t empty = p2.n;
    raw(&p2, "}u.");
    base = ckpt(&b2, &p2);
    lc_pth_opts o = { .key = "m" };
    EXPECT(&b2, &o, LC_E_NOTFOUND, base + empty);
}

/* Item 17: a tensor beside the only dict of tensors is kept, with its full path. */
Test(pth, tensors_beside_a_dict_keep_full_names) {
    buf p = { .n = 0 }, b = { .n = 0 };
    raw(&p, "\x80\x02}(");
    pstr(&p, "a.b");
    tcall(&p, 0, 1, one4, unit, NULL);
    pstr(&p, "a");
    raw(&p, "}");
    pstr(&p, "c");
    tcall(&p, 0, 1, one4, unit, NULL);
    raw(&p, "su.");
    ckpt(&b, &p);
    lc_model *m;
    lc_error err;
    cr_assert_eq(load(&b, NULL, &m, &err), LC_OK, "%s", err.msg);
    cr_assert_eq(lc_model_tensor_count(m), 2);
    cr_assert_str_eq(lc_model_tensor(m, 0)->name, "a.b");
    cr_assert_str_eq(lc_model_tensor(m, 1)->name, "a.c");
    lc_model_free(m);
}

/* Items 15 and 17: two paths that flatten to one name are refused at the second call,
 * and the message says where the first was made. */
Test(pth, duplicate_names_are_malformed_at_the_second_call) {
    buf p = { .n = 0 }, b = { .n = 0 };
    size_t first, second;
    raw(&p, "\x80\x02}(");
    pstr(&p, "a.b");
    tcall(&p, 0, 1, one4, unit, &first);
    pstr(&p, "a");
    raw(&p, "}");
    pstr(&p, "b");
    tcall(&p, 0, 1, one4, unit, &second);
    raw(&p, "su.");
    size_t base = ckpt(&b, &p);
    EXPECT(&b, NULL, LC_E_MALFORMED, base + second);
    lc_model *m;
    lc_error err;
    load(&b, NULL, &m, &err);
    char want[32];
    snprintf(want, sizeof want, "0x%zx", base + first);
    cr_assert_not_null(strstr(err.msg, want), "%s", err.msg);
    cr_assert_str_eq(err.where, "archive/data.pkl");
}

typedef struct notes {
    int     n;
    lc_error last;
} notes;

static void take_note(void *ctx, const lc_error *note) {
    notes *ns = ctx;
    ns->n++;
    ns->last = *note;
}

/* Item 17: a training checkpoint converts its "model"; what stays behind is said. */
Test(pth, known_key_leaves_the_rest_out_with_a_note) {
    buf p = { .n = 0 }, b = { .n = 0 };
    raw(&p, "\x80\x02}(");
    pstr(&p, "model");
    size_t model = p.n;
    raw(&p, "}");
    pstr(&p, "w");
    tcall(&p, 0, 1, one4, unit, NULL);
    raw(&p, "s");
    pstr(&p, "optimizer");
    raw(&p, "}");
    pstr(&p, "m");
    tcall(&p, 0, 1, one4, unit, NULL);
    raw(&p, "su.");
    size_t base = ckpt(&b, &p);
    notes ns = { 0 };
    lc_pth_opts o = { .note = take_note, .note_ctx = &ns };
    lc_model *m;
    lc_error err;
    cr_assert_eq(load(&b, &o, &m, &err), LC_OK, "%s", err.msg);
    cr_assert_eq(lc_model_tensor_count(m), 1);
    cr_assert_str_eq(lc_model_tensor(m, 0)->name, "w");
    cr_assert_eq(ns.n, 1);
    cr_assert_eq(ns.last.offset, base + model);
    cr_assert_str_eq(ns.last.where, "archive/data.pkl");
    cr_assert_not_null(strstr(ns.last.msg, "1 tensor beside it (under \"optimizer\")"), "%s",
                       ns.last.msg);
    lc_model_free(m);
    lc_pth_opts all = { .key = ".", .note = take_note, .note_ctx = &ns };
    cr_assert_eq(load(&b, &all, &m, &err), LC_OK, "%s", err.msg);
    cr_assert_eq(lc_model_tensor_count(m), 2);
    cr_assert_eq(ns.n, 1);   /* nothing left out: nothing said */
    lc_model_free(m);
}

/* Item 11: a tensor held twice by each of 30 nested tuples is 2^30 names from a few
 * hundred bytes; the walk stops within the budget of those bytes, naming it. */
Test(pth, memo_shared_graph_stops_at_its_budget) {
    buf p = { .n = 0 }, b = { .n = 0 };
    raw(&p, "\x80\x02");
    tcall(&p, 0, 1, one4, unit, NULL);
    raw(&p, "q");                               /* BINPUT 0, POP */
    u8(&p, 0);
    raw(&p, "0");
    for (int i = 1; i <= 30; i++) {
        raw(&p, "h"); u8(&p, (uint8_t)(i - 1)); /* BINGET i-1 twice, TUPLE2 */
        raw(&p, "h"); u8(&p, (uint8_t)(i - 1));
        raw(&p, "\x86q"); u8(&p, (uint8_t)i);
        raw(&p, "0");
    }
    raw(&p, "h\x1e.");
    ckpt(&b, &p);
    lc_model *m;
    lc_error err;
    cr_assert_eq(load(&b, NULL, &m, &err), LC_E_OVERFLOW, "%s", err.msg);
    cr_assert_not_null(strstr(err.msg, "budget"), "%s", err.msg);
    cr_assert_not_null(strstr(err.msg, "per stored byte"), "%s", err.msg);
}

/* A checkpoint written to a temporary file; returns its path (static buffer). */
static const char *to_file(const buf *b) {
    static char path[64];
    snprintf(path, sizeof path, "/tmp/lc-test-pth-XXXXXX");
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    cr_assert_eq(write(fd, b->d, b->n), (ssize_t)b->n);
    close(fd);
    return path;
}

/* Item 15: running out of memory anywhere in a load names the file. */
Test(pth, out_of_memory_names_the_file) {
    buf b = { .n = 0 };
    tpick at;
    legacy_file(&b, &at, "FloatStorage", 4, 1, 3, 4, four, sizeof four);
    const char *path = to_file(&b);
    for (long nth = 1;; nth++) {
        lc_model *m;
        lc_error err = { 0 };
        lc_alloc_fail_after(nth);
        lc_code rc = lc_pth_load(path, NULL, &m, &err);
        lc_alloc_fail_after(0);
        if (rc == LC_OK) {
            lc_model_free(m);
            break;
        }
        cr_assert_eq(rc, LC_E_NOMEM, "allocation %ld: %s", nth, err.msg);
        cr_assert_str_eq(err.path, path, "allocation %ld: %s", nth, err.msg);
    }
    unlink(path);
}

/* Item 15: listing the shards of a folder names the index when memory runs out. */
Test(pth, out_of_memory_listing_shards_names_the_index) {
    char dir[] = "/tmp/lc-test-shards-XXXXXX", index[64];
    cr_assert_not_null(mkdtemp(dir));
    snprintf(index, sizeof index, "%s/pytorch_model.bin.index.json", dir);
    FILE *f = fopen(index, "w");
    cr_assert_not_null(f);
    fputs("{\"weight_map\": {\"a\": \"one.bin\", \"b\": \"two.bin\"}}", f);
    fclose(f);
    for (long nth = 1;; nth++) {
        char **files = NULL;
        size_t n = 0;
        lc_error err = { 0 };
        lc_alloc_fail_after(nth);
        lc_code rc = lc_pth_index_shards(dir, &files, &n, &err);
        lc_alloc_fail_after(0);
        if (rc == LC_OK) {
            cr_assert_eq(n, 2);
            for (size_t i = 0; i < n; i++)
                lc_free(files[i]);
            lc_free(files);
            break;
        }
        cr_assert_eq(rc, LC_E_NOMEM, "allocation %ld: %s", nth, err.msg);
        cr_assert(strncmp(err.path, dir, strlen(dir)) == 0, "allocation %ld: path \"%s\"", nth,
                  err.path);
    }
    unlink(index);
    rmdir(dir);
}

/* Item 16: errors met while a writer reads a tensor (no memory for a strided view, the
 * file cut short) name the checkpoint they come from, before any output is named. */
Test(pth, read_errors_name_the_checkpoint) {
    buf p = { .n = 0 }, b = { .n = 0 };
    const int64_t s22[2] = { 2, 2 }, st12[2] = { 1, 2 };
    raw(&p, "\x80\x02}");
    pstr(&p, "w");
    tcall(&p, 0, 2, s22, st12, NULL);           /* a transposed view: gathered, cached */
    raw(&p, "s.");
    ckpt(&b, &p);
    const char *path = to_file(&b);
    lc_model *m;
    lc_error err = { 0 };
    cr_assert_eq(lc_pth_load(path, NULL, &m, &err), LC_OK, "%s", err.msg);
    const lc_tensor *t = lc_model_tensor(m, 0);
    float got[4];
    lc_alloc_fail_after(1);
    lc_code rc = lc_tensor_read(t, 0, got, sizeof got, &err);
    lc_alloc_fail_after(0);
    cr_assert_eq(rc, LC_E_NOMEM, "%s", err.msg);
    cr_assert_str_eq(err.path, path);
    cr_assert_eq(truncate(path, (off_t)(b.n / 2)), 0);   /* the storage is gone */
    memset(&err, 0, sizeof err);
    cr_assert_neq(lc_tensor_read(t, 0, got, sizeof got, &err), LC_OK);
    cr_assert_str_eq(err.path, path, "%s", err.msg);
    lc_model_free(m);
    unlink(path);
}
