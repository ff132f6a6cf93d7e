/* Unit tests for formats/safetensors: one literal-bytes test per error the reader
 * returns (code and file offset), round trips through the writer, the index. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "formats/any.h"
#include "formats/safetensors.h"
#include "libconvert/alloc.h"
#include "libconvert/bytes.h"
#include "libconvert/model.h"

/* u64 length + the JSON text + data: the file the reader sees. */
static uint8_t g_file[4096];
static size_t make(const char *json, const void *data, size_t dlen) {
    size_t n = strlen(json);
    cr_assert(8 + n + dlen <= sizeof g_file);
    lc_store_le64(g_file, n);
    memcpy(g_file + 8, json, n);
    if (dlen)
        memcpy(g_file + 8 + n, data, dlen);
    return 8 + n + dlen;
}
/* File offset of the first occurrence of `needle` in the JSON of make(json). */
static uint64_t at(const char *json, const char *needle) {
    const char *p = strstr(json, needle);
    cr_assert_not_null(p, "%s not in %s", needle, json);
    return 8 + (uint64_t)(p - json);
}

static void expect_fail(const uint8_t *buf, size_t size, lc_code code, uint64_t off,
                        const char *where) {
    lc_model *m = (lc_model *)1;
    lc_error err = {0};
    lc_code rc = lc_safetensors_load_mem(buf, size, &m, &err);
    cr_assert_eq(rc, code, "code %s (%s), want %s", lc_code_name(rc), err.msg, lc_code_name(code));
    cr_assert_eq(err.code, code);
    cr_assert_eq(err.offset, off, "offset %llu, want %llu (%s)", (unsigned long long)err.offset,
                 (unsigned long long)off, err.msg);
    cr_assert_null(m);
    if (where)
        cr_assert_str_eq(err.where, where);
    cr_assert(err.msg[0] != '\0');
}
static void expect_json_fail(const char *json, const void *data, size_t dlen, lc_code code,
                             uint64_t off, const char *where) {
    expect_fail(g_file, make(json, data, dlen), code, off, where);
}

static const uint8_t zeros[64];

/* ---- the length field ---- */

Test(st_read, empty_file_truncated_at_0) { expect_fail(zeros, 0, LC_E_TRUNCATED, 0, NULL); }
Test(st_read, seven_bytes_truncated_at_0) { expect_fail(zeros, 7, LC_E_TRUNCATED, 0, NULL); }

Test(st_read, header_length_past_end) {
    static const uint8_t b[] = { 0x10, 0, 0, 0, 0, 0, 0, 0, '{', '}' };
    expect_fail(b, sizeof b, LC_E_TRUNCATED, 0, NULL);
}
Test(st_read, header_length_2p63_overflow) {
    static const uint8_t b[] = { 0, 0, 0, 0, 0, 0, 0, 0x80, '{', '}' };
    expect_fail(b, sizeof b, LC_E_OVERFLOW, 0, NULL);
}
Test(st_read, header_length_above_limit) {
    uint8_t b[10] = { 0, 0, 0, 0, 0, 0, 0, 0, '{', '}' };
    lc_store_le64(b, LC_SAFETENSORS_MAX_HEADER + 1ull);
    expect_fail(b, sizeof b, LC_E_OVERFLOW, 0, NULL);
}

/* ---- UTF-8 and JSON ---- */

Test(st_read, invalid_utf8_at_byte) {
    static const uint8_t b[] = { 6, 0, 0, 0, 0, 0, 0, 0, '{', '"', 0xff, '"', ':', '}' };
    expect_fail(b, sizeof b, LC_E_MALFORMED, 10, NULL);
}
Test(st_read, overlong_utf8) {
    static const uint8_t b[] = { 6, 0, 0, 0, 0, 0, 0, 0, '{', '"', 0xc0, 0x80, '"', '}' };
    expect_fail(b, sizeof b, LC_E_MALFORMED, 10, NULL);
}
Test(st_read, surrogate_utf8) {
    static const uint8_t b[] = { 7, 0, 0, 0, 0, 0, 0, 0, '{', '"', 0xed, 0xa0, 0x80, '"', '}' };
    expect_fail(b, sizeof b, LC_E_MALFORMED, 10, NULL);
}
Test(st_read, not_json) {
    expect_json_fail("hello   ", NULL, 0, LC_E_MALFORMED, 8, NULL);
}
Test(st_read, json_syntax_error_offset) {
    const char *j = "{\"a\" 1}";
    expect_json_fail(j, NULL, 0, LC_E_MALFORMED, at(j, "1}"), NULL);
}
Test(st_read, empty_header_is_not_json) { expect_json_fail("", NULL, 0, LC_E_MALFORMED, 8, NULL); }
Test(st_read, not_an_object) { expect_json_fail("[1, 2]  ", NULL, 0, LC_E_MALFORMED, 8, NULL); }
/* The README: "The header data MUST begin with a `{` character" and "MAY be trailing
 * padded with whitespace (0x20)"; serde_json, and so the reference, takes any JSON
 * whitespace in both places. */
Test(st_read, header_must_begin_with_brace) {
    expect_json_fail("  {}    ", NULL, 0, LC_E_MALFORMED, 8, NULL);
    expect_json_fail("\n{}     ", NULL, 0, LC_E_MALFORMED, 8, NULL);
    expect_json_fail("\t{}", NULL, 0, LC_E_MALFORMED, 8, NULL);
}
Test(st_read, padding_is_spaces_only) {
    expect_json_fail("{}  \t   ", NULL, 0, LC_E_MALFORMED, 12, NULL);
    expect_json_fail("{}\n\n", NULL, 0, LC_E_MALFORMED, 10, NULL);
    expect_json_fail("{}   \r  ", NULL, 0, LC_E_MALFORMED, 13, NULL);
}
Test(st_read, whitespace_inside_the_object_is_json) {
    lc_model *m = NULL;
    lc_error err = {0};
    const char *j = "{\n  \"a\" :\t{\"dtype\": \"U8\", \"shape\": [2], \"data_offsets\": [0, 2]}\n}   ";
    cr_assert_eq(lc_safetensors_load_mem(g_file, make(j, zeros, 2), &m, &err), LC_OK, "%s",
                 err.msg);
    cr_assert_eq(lc_model_tensor_count(m), 1);
    lc_model_free(m);
}
Test(st_read, text_after_json) {
    const char *j = "{} {}";
    expect_json_fail(j, NULL, 0, LC_E_MALFORMED, 11, NULL);
}
Test(st_read, raw_control_byte_in_string) {
    const char *j = "{\"a\x01\":{}}";
    expect_json_fail(j, NULL, 0, LC_E_MALFORMED, at(j, "\x01"), NULL);
}
Test(st_read, nul_escape_unsupported) {
    const char *j = "{\"a\\u0000b\":{}}";
    expect_json_fail(j, NULL, 0, LC_E_UNSUPPORTED, at(j, "\\u"), NULL);
}

/* ---- entries ---- */

Test(st_read, entry_not_object) {
    const char *j = "{\"w\":5}";
    expect_json_fail(j, NULL, 0, LC_E_MALFORMED, at(j, "5"), "w");
}
Test(st_read, dtype_not_string) {
    const char *j = "{\"w\":{\"dtype\":1,\"shape\":[],\"data_offsets\":[0,4]}}";
    expect_json_fail(j, zeros, 4, LC_E_MALFORMED, at(j, "1,"), "w");
}
Test(st_read, unknown_dtype_unsupported) {
    const char *j = "{\"w\":{\"dtype\":\"F4\",\"shape\":[2],\"data_offsets\":[0,1]}}";
    expect_json_fail(j, zeros, 1, LC_E_UNSUPPORTED, at(j, "\"F4\""), "w");
}
Test(st_read, shape_not_array) {
    const char *j = "{\"w\":{\"dtype\":\"U8\",\"shape\":2,\"data_offsets\":[0,2]}}";
    expect_json_fail(j, zeros, 2, LC_E_MALFORMED, at(j, "2,"), "w");
}
Test(st_read, negative_dim) {
    const char *j = "{\"w\":{\"dtype\":\"U8\",\"shape\":[-1],\"data_offsets\":[0,0]}}";
    expect_json_fail(j, NULL, 0, LC_E_MALFORMED, at(j, "-1"), "w");
}
Test(st_read, float_dim) {
    const char *j = "{\"w\":{\"dtype\":\"U8\",\"shape\":[2.0],\"data_offsets\":[0,2]}}";
    expect_json_fail(j, zeros, 2, LC_E_MALFORMED, at(j, "2.0"), "w");
}
Test(st_read, exponent_dim) {
    const char *j = "{\"w\":{\"dtype\":\"U8\",\"shape\":[2e0],\"data_offsets\":[0,2]}}";
    expect_json_fail(j, zeros, 2, LC_E_MALFORMED, at(j, "2e0"), "w");
}
Test(st_read, leading_zero_dim) {
    const char *j = "{\"w\":{\"dtype\":\"U8\",\"shape\":[02],\"data_offsets\":[0,2]}}";
    lc_model *m;
    lc_error err = {0};
    /* cJSON refuses "02" itself or we do; either way malformed, at or after the number. */
    cr_assert_eq(lc_safetensors_load_mem(g_file, make(j, zeros, 2), &m, &err), LC_E_MALFORMED);
    cr_assert_geq(err.offset, at(j, "02"));
}
Test(st_read, dim_above_u64) {
    const char *j = "{\"w\":{\"dtype\":\"U8\",\"shape\":[18446744073709551616],"
                    "\"data_offsets\":[0,0]}}";
    expect_json_fail(j, NULL, 0, LC_E_OVERFLOW, at(j, "1844"), "w");
}
Test(st_read, too_many_dims) {
    const char *j = "{\"w\":{\"dtype\":\"U8\",\"shape\":[1,1,1,1,1,1,1,1,1],"
                    "\"data_offsets\":[0,1]}}";
    expect_json_fail(j, zeros, 1, LC_E_UNSUPPORTED, at(j, "[1,"), "w");
}
Test(st_read, offsets_not_pair) {
    const char *j = "{\"w\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1,2]}}";
    expect_json_fail(j, zeros, 1, LC_E_MALFORMED, at(j, "[0,1,2]"), "w");
}
Test(st_read, offsets_string) {
    const char *j = "{\"w\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[\"0\",1]}}";
    expect_json_fail(j, zeros, 1, LC_E_MALFORMED, at(j, "\"0\""), "w");
}
Test(st_read, missing_field) {
    const char *j = "{\"w\":{\"dtype\":\"U8\",\"shape\":[1]}}";
    expect_json_fail(j, zeros, 1, LC_E_MALFORMED, at(j, "{\"dtype"), "w");
}
Test(st_read, duplicate_field) {
    const char *j = "{\"w\":{\"dtype\":\"U8\",\"dtype\":\"U8\",\"shape\":[1],"
                    "\"data_offsets\":[0,1]}}";
    expect_json_fail(j, zeros, 1, LC_E_MALFORMED, at(j, "\"dtype\":\"U8\",\"shape"), "w");
}
Test(st_read, unknown_field) {
    const char *j = "{\"w\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1],\"x\":1}}";
    expect_json_fail(j, zeros, 1, LC_E_MALFORMED, at(j, "\"x\""), "w");
}
Test(st_read, duplicate_tensor_name) {
    const char *j = "{\"w\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]},"
                    "\"w\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[1,2]}}";
    expect_json_fail(j, zeros, 2, LC_E_MALFORMED, at(j, "\"w\":{\"dtype\":\"U8\",\"shape\":[1],"
                                                     "\"data_offsets\":[1"), "w");
}

/* ---- metadata ---- */

Test(st_read, metadata_value_not_string) {
    const char *j = "{\"__metadata__\":{\"a\":\"x\",\"b\":1}}";
    expect_json_fail(j, NULL, 0, LC_E_MALFORMED, at(j, "1}"), "b");
}
Test(st_read, metadata_not_object) {
    const char *j = "{\"__metadata__\":[\"a\"]}";
    expect_json_fail(j, NULL, 0, LC_E_MALFORMED, at(j, "["), "__metadata__");
}
Test(st_read, metadata_duplicate_key) {
    const char *j = "{\"__metadata__\":{\"a\":\"x\",\"a\":\"y\"}}";
    expect_json_fail(j, NULL, 0, LC_E_MALFORMED, at(j, "\"a\":\"y\""), "a");
}
Test(st_read, metadata_twice) {
    const char *j = "{\"__metadata__\":{},\"__metadata__\":{}}";
    expect_json_fail(j, NULL, 0, LC_E_MALFORMED, at(j, "\"__metadata__\":{}}"), "__metadata__");
}

/* ---- layout ---- */

Test(st_read, gap_between_tensors) {
    const char *j = "{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]},"
                    "\"b\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[2,3]}}";
    expect_json_fail(j, zeros, 3, LC_E_MALFORMED, at(j, "[2,3]"), "b");
}
Test(st_read, overlapping_tensors) {
    const char *j = "{\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2]},"
                    "\"b\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[1,3]}}";
    expect_json_fail(j, zeros, 3, LC_E_MALFORMED, at(j, "[1,3]"), "b");
}
Test(st_read, not_starting_at_zero) {
    const char *j = "{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[1,2]}}";
    expect_json_fail(j, zeros, 2, LC_E_MALFORMED, at(j, "[1,2]"), "a");
}
Test(st_read, end_before_begin) {
    const char *j = "{\"a\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[0,0]},"
                    "\"b\":{\"dtype\":\"U8\",\"shape\":[0],"
                    "\"data_offsets\":[0,18446744073709551615]}}";
    /* sorted by (begin, end): a, b; b's size check fails: 2^64-1 bytes for 0 elements */
    expect_json_fail(j, NULL, 0, LC_E_MALFORMED, at(j, "[0,1844"), "b");
}
Test(st_read, size_mismatch) {
    const char *j = "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,4]}}";
    expect_json_fail(j, zeros, 4, LC_E_MALFORMED, at(j, "[0,4]"), "a");
}
Test(st_read, shape_product_overflow) {
    const char *j = "{\"a\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296,2],"
                    "\"data_offsets\":[0,0]}}";
    expect_json_fail(j, NULL, 0, LC_E_OVERFLOW, at(j, "[4294"), "a");
}
Test(st_read, data_past_end) {
    const char *j = "{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]}}";
    size_t n = strlen(j);
    expect_json_fail(j, zeros, 3, LC_E_TRUNCATED, 8 + n, "a");
}
Test(st_read, trailing_bytes) {
    const char *j = "{\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2]}}";
    size_t n = strlen(j);
    expect_json_fail(j, zeros, 5, LC_E_MALFORMED, 8 + n + 2, NULL);
}

/* ---- what valid files give ---- */

Test(st_read, valid_file_views_and_metadata) {
    const char *j = "{\"__metadata__\":{\"z\":\"1\",\"a\":\"2\"},"
                    "\"s\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[8,12]},"
                    "\"e\":{\"dtype\":\"I8\",\"shape\":[0,3],\"data_offsets\":[8,8]},"
                    "\"w\":{\"dtype\":\"U16\",\"shape\":[2,2],\"data_offsets\":[0,8]}}   ";
    static const uint8_t data[12] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12 };
    size_t size = make(j, data, sizeof data);
    lc_model *m;
    lc_error err = {0};
    cr_assert_eq(lc_safetensors_load_mem(g_file, size, &m, &err), LC_OK, "%s", err.msg);
    cr_assert_eq(lc_model_tensor_count(m), 3);
    const lc_tensor *s = lc_model_tensor(m, 0), *e = lc_model_tensor(m, 1),
                    *w = lc_model_tensor(m, 2);
    cr_assert_str_eq(s->name, "s"); /* header order is kept */
    cr_assert_eq(s->ndim, 0);
    cr_assert_eq(s->nbytes, 4);
    cr_assert_eq(s->file_offset, 8 + strlen(j) + 8);
    cr_assert_eq(s->data, g_file + s->file_offset); /* zero copy */
    cr_assert_eq(e->nbytes, 0);
    cr_assert_eq(w->dtype, LC_DT_U16);
    cr_assert_eq(w->shape[1], 2);
    uint8_t got[8];
    cr_assert_eq(lc_tensor_read(w, 0, got, 8, &err), LC_OK);
    cr_assert_arr_eq(got, data, 8);
    cr_assert_eq(lc_model_meta_count(m), 2);
    cr_assert_str_eq(lc_model_meta(m, 0)->key, "z"); /* file order */
    cr_assert_str_eq(lc_model_meta(m, 1)->val.str.ptr, "2");
    lc_model_free(m);
}

Test(st_read, empty_object_is_valid) {
    lc_model *m;
    lc_error err = {0};
    cr_assert_eq(lc_safetensors_load_mem(g_file, make("{}      ", NULL, 0), &m, &err), LC_OK);
    cr_assert_eq(lc_model_tensor_count(m), 0);
    lc_model_free(m);
}

Test(st_read, missing_file_notfound) {
    lc_model *m;
    lc_error err = {0};
    cr_assert_eq(lc_safetensors_load("/nonexistent/x.safetensors", &m, &err), LC_E_NOTFOUND);
    cr_assert_null(m);
    cr_assert_str_eq(err.path, "/nonexistent/x.safetensors");
}

Test(st_read, out_of_memory_everywhere) {
    const char *j = "{\"__metadata__\":{\"k\":\"v\"},"
                    "\"w\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2]}}";
    size_t size = make(j, zeros, 2);
    /* Every allocation of ours fails in turn; each must give NOMEM and leak nothing
     * (ASan checks the leaks). cJSON allocates with malloc and is not covered. */
    for (long nth = 1; nth < 40; nth++) {
        lc_model *m;
        lc_error err = {0};
        lc_alloc_fail_after(nth);
        lc_code rc = lc_safetensors_load_mem(g_file, size, &m, &err);
        lc_alloc_fail_after(0);
        if (rc == LC_OK) {
            lc_model_free(m);
            break;
        }
        cr_assert_eq(rc, LC_E_NOMEM, "allocation %ld: %s", nth, lc_code_name(rc));
        cr_assert_null(m);
    }
}

/* ---- writer ---- */

static char g_dir[64];
static void mkscratch(void) {
    strcpy(g_dir, "/tmp/lc-st-XXXXXX");
    cr_assert_not_null(mkdtemp(g_dir));
}

Test(st_write, layout_order_and_padding) {
    lc_model *m = lc_model_new();
    lc_error err = {0};
    lc_tensor *t;
    uint64_t s2[] = { 2 };
    static const uint8_t d[16] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };
    cr_assert_eq(lc_model_add_tensor(m, "b", LC_DT_U8, 1, s2, &t, &err), LC_OK);
    t->data = d;
    cr_assert_eq(lc_model_add_tensor(m, "a", LC_DT_F32, 1, s2, &t, &err), LC_OK);
    t->data = d + 2;
    cr_assert_eq(lc_model_add_tensor(m, "c", LC_DT_U8, 1, s2, &t, &err), LC_OK);
    t->data = d + 10;
    cr_assert_eq(lc_model_set_meta_str(m, "k\"", "v\n", &err), LC_OK);
    mkscratch();
    char path[128];
    snprintf(path, sizeof path, "%s/o.safetensors", g_dir);
    cr_assert_eq(lc_safetensors_write(m, path, NULL, NULL, &err), LC_OK, "%s", err.msg);
    const char *want = "{\"__metadata__\":{\"k\\\"\":\"v\\n\"},"
                       "\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                       "\"b\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[8,10]},"
                       "\"c\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[10,12]}}";
    size_t wl = strlen(want), padded = (wl + 7) / 8 * 8;
    uint8_t got[512];
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f);
    size_t n = fread(got, 1, sizeof got, f);
    fclose(f);
    cr_assert_eq(n, 8 + padded + 12);
    cr_assert_eq(lc_load_le64(got), padded);
    cr_assert_arr_eq(got + 8, want, wl);
    for (size_t i = wl; i < padded; i++)
        cr_assert_eq(got[8 + i], ' ');
    cr_assert_arr_eq(got + 8 + padded, d + 2, 8);
    cr_assert_arr_eq(got + 8 + padded + 8, d, 2);
    /* and it reads back */
    lc_model *back;
    cr_assert_eq(lc_safetensors_load(path, &back, &err), LC_OK, "%s", err.msg);
    cr_assert_eq(lc_model_tensor_count(back), 3);
    lc_model_free(back);
    lc_model_free(m);
    unlink(path);
    rmdir(g_dir);
}

Test(st_write, refuses_quant_dtype_and_non_string_meta) {
    lc_model *m = lc_model_new();
    lc_error err = {0};
    uint64_t s32[] = { 32 };
    lc_tensor *t;
    cr_assert_eq(lc_model_add_tensor(m, "q", LC_DT_Q8_0, 1, s32, &t, &err), LC_OK);
    mkscratch();
    char path[128];
    snprintf(path, sizeof path, "%s/o.safetensors", g_dir);
    cr_assert_eq(lc_safetensors_write(m, path, NULL, NULL, &err), LC_E_UNSUPPORTED);
    cr_assert_str_eq(err.where, "q");
    cr_assert_neq(access(path, F_OK), 0);
    lc_model_free(m);

    m = lc_model_new();
    lc_value v = lc_value_uint(LC_VT_U32, 7);
    cr_assert_eq(lc_model_set_meta(m, "n", &v, &err), LC_OK);
    lc_error e2 = {0};
    cr_assert_eq(lc_safetensors_write(m, path, NULL, NULL, &e2), LC_E_UNSUPPORTED);
    cr_assert_str_eq(e2.where, "n");
    lc_st_write_opts o = { true };
    lc_error e3 = {0};
    cr_assert_eq(lc_safetensors_write(m, path, &o, NULL, &e3), LC_OK, "%s", e3.msg);
    lc_model *back;
    cr_assert_eq(lc_safetensors_load(path, &back, &e3), LC_OK);
    cr_assert_str_eq(lc_model_find_meta(back, "n")->str.ptr, "7");
    lc_model_free(back);
    lc_model_free(m);
    unlink(path);
    rmdir(g_dir);
}

/* ---- sharded index ---- */

static void write_file(const char *path, const void *p, size_t n) {
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f);
    cr_assert_eq(fwrite(p, 1, n, f), n);
    fclose(f);
}

static lc_code index_case(const char *index_json, lc_error *err, size_t *ntensors) {
    char p[160];
    const char *j1 = "{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]},"
                     "\"x\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[1,2]}}";
    write_file((snprintf(p, sizeof p, "%s/s1.safetensors", g_dir), p), g_file, make(j1, zeros, 2));
    const char *j2 = "{\"b\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}";
    write_file((snprintf(p, sizeof p, "%s/s2.safetensors", g_dir), p), g_file, make(j2, zeros, 1));
    write_file((snprintf(p, sizeof p, "%s/model.safetensors.index.json", g_dir), p), index_json,
               strlen(index_json));
    lc_model *m;
    lc_code rc = lc_safetensors_load_index(g_dir, &m, err);
    if (rc == LC_OK) {
        *ntensors = lc_model_tensor_count(m);
        lc_model_free(m);
    }
    const char *names[] = { "s1.safetensors", "s2.safetensors", "model.safetensors.index.json" };
    for (int i = 0; i < 3; i++)
        unlink((snprintf(p, sizeof p, "%s/%s", g_dir, names[i]), p));
    return rc;
}

Test(st_index, good_missing_extra_and_escape) {
    mkscratch();
    lc_error err = {0};
    size_t n = 0;
    cr_assert_eq(index_case("{\"weight_map\":{\"a\":\"s1.safetensors\",\"b\":\"s2.safetensors\","
                            "\"x\":\"s1.safetensors\"}}", &err, &n), LC_OK, "%s", err.msg);
    cr_assert_eq(n, 3);
    lc_error e1 = {0};
    cr_assert_eq(index_case("{\"weight_map\":{\"a\":\"s1.safetensors\",\"b\":\"s2.safetensors\","
                            "\"x\":\"s1.safetensors\",\"c\":\"s2.safetensors\"}}", &e1, &n),
                 LC_E_MISMATCH);
    cr_assert_str_eq(e1.where, "c"); /* in the map, in no shard */
    lc_error e2 = {0};
    cr_assert_eq(index_case("{\"weight_map\":{\"a\":\"s1.safetensors\",\"b\":\"s2.safetensors\"}}",
                            &e2, &n), LC_E_MISMATCH);
    cr_assert_str_eq(e2.where, "x"); /* in a shard, not in the map */
    lc_error e3 = {0};
    cr_assert_eq(index_case("{\"weight_map\":{\"a\":\"s1.safetensors\",\"b\":\"s1.safetensors\","
                            "\"x\":\"s1.safetensors\"}}", &e3, &n), LC_E_MISMATCH);
    cr_assert_str_eq(e3.where, "b"); /* listed under the wrong shard */
    lc_error e4 = {0};
    cr_assert_eq(index_case("{\"weight_map\":{\"a\":\"../s1.safetensors\"}}", &e4, &n),
                 LC_E_MALFORMED);
    lc_error e5 = {0};
    cr_assert_eq(index_case("{\"weight_map\":{\"a\":\"s1.safetensors\",\"a\":\"s1.safetensors\"}}",
                            &e5, &n), LC_E_MALFORMED);
    rmdir(g_dir);
}

Test(st_any, detects_safetensors_and_gguf) {
    mkscratch();
    char p[160];
    snprintf(p, sizeof p, "%s/x.bin", g_dir);
    write_file(p, "GGUF\3\0\0\0", 8);
    lc_model *m;
    const char *fmt = NULL;
    lc_error err = {0};
    /* The GGUF reader now runs: this file ends where the tensor count should be. */
    cr_assert_eq(lc_model_open_any(p, &m, &fmt, &err), LC_E_TRUNCATED);
    cr_assert_eq(err.offset, 8);
    cr_assert_str_eq(fmt, "gguf");
    const char *j = "{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}";
    write_file(p, g_file, make(j, zeros, 1));
    lc_error e2 = {0};
    cr_assert_eq(lc_model_open_any(p, &m, &fmt, &e2), LC_OK, "%s", e2.msg);
    cr_assert_str_eq(fmt, "safetensors");
    lc_model_free(m);
    unlink(p);
    rmdir(g_dir);
}

/* A 300 KiB tensor takes the copy_file_range path; from tmpfs to /tmp the kernel
 * answers EXDEV and lc_outfile_copy_from falls back to pread. Same bytes either way. */
static void roundtrip_big(const char *in_dir) {
    static uint8_t data[300 << 10];
    for (size_t i = 0; i < sizeof data; i++)
        data[i] = (uint8_t)(i * 7 + 3);
    char j[128];
    snprintf(j, sizeof j, "{\"w\":{\"dtype\":\"U8\",\"shape\":[%zu],\"data_offsets\":[0,%zu]}}",
             sizeof data, sizeof data);
    size_t n = strlen(j);
    char in[160], out[160];
    snprintf(in, sizeof in, "%s/lc-st-in-%d.safetensors", in_dir, (int)getpid());
    mkscratch();
    snprintf(out, sizeof out, "%s/out.safetensors", g_dir);
    FILE *f = fopen(in, "wb");
    cr_assert_not_null(f);
    uint8_t len8[8];
    lc_store_le64(len8, n);
    fwrite(len8, 1, 8, f);
    fwrite(j, 1, n, f);
    fwrite(data, 1, sizeof data, f);
    fclose(f);
    lc_model *m;
    lc_error err = {0};
    cr_assert_eq(lc_safetensors_load(in, &m, &err), LC_OK, "%s", err.msg);
    cr_assert_eq(lc_safetensors_write(m, out, NULL, NULL, &err), LC_OK, "%s", err.msg);
    lc_model_free(m);
    lc_model *back;
    cr_assert_eq(lc_safetensors_load(out, &back, &err), LC_OK, "%s", err.msg);
    cr_assert_eq(lc_model_tensor(back, 0)->nbytes, sizeof data);
    cr_assert_arr_eq(lc_model_tensor(back, 0)->data, data, sizeof data);
    lc_model_free(back);
    unlink(in);
    unlink(out);
    rmdir(g_dir);
}

Test(st_write, big_tensor_kernel_copy) { roundtrip_big("/tmp"); }

Test(st_write, big_tensor_copy_across_file_systems) {
    if (access("/dev/shm", W_OK) != 0)
        cr_skip_test("no /dev/shm");
    roundtrip_big("/dev/shm");
}

Test(st_write, out_of_memory_leaves_no_file) {
    const char *j = "{\"__metadata__\":{\"k\":\"v\"},"
                    "\"w\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2]}}";
    size_t size = make(j, zeros, 2);
    lc_model *m;
    lc_error err = {0};
    cr_assert_eq(lc_safetensors_load_mem(g_file, size, &m, &err), LC_OK);
    mkscratch();
    char path[128];
    snprintf(path, sizeof path, "%s/o.safetensors", g_dir);
    for (long nth = 1; nth < 40; nth++) {
        lc_error e = {0};
        lc_alloc_fail_after(nth);
        lc_code rc = lc_safetensors_write(m, path, NULL, NULL, &e);
        lc_alloc_fail_after(0);
        if (rc == LC_OK)
            break;
        cr_assert_eq(rc, LC_E_NOMEM, "allocation %ld: %s", nth, lc_code_name(rc));
        cr_assert_eq(rmdir(g_dir), 0, "allocation %ld left a file or temporary", nth);
        cr_assert_eq(mkdir(g_dir, 0700), 0);
    }
    cr_assert_eq(access(path, F_OK), 0);
    lc_model_free(m);
    unlink(path);
    rmdir(g_dir);
}

/* ---- the writer's threads (libconvert/segments.h) ---- */

/* Bytes are a function of (seed, offset); the source fails at fail_at when that is
 * inside the read, and sometimes sleeps so that workers finish out of order. */
typedef struct pat { uint8_t seed; uint64_t fail_at; } pat;

static lc_code pat_read(void *ctx, const lc_tensor *t, uint64_t off, void *dst, size_t len,
                        lc_error *err) {
    const pat *p = ctx;
    (void)t;
    if (p->fail_at >= off && p->fail_at < off + len)
        return lc_fail(err, LC_E_IO, p->fail_at, "source %u fails", p->seed);
    if ((off + p->seed) % 3 == 0)
        usleep(30);
    for (size_t i = 0; i < len; i++)
        ((uint8_t *)dst)[i] = (uint8_t)((off + i) * 13 + p->seed);
    return LC_OK;
}
static const lc_source_ops pat_ops = { pat_read, NULL };

/* 30 lazy tensors of odd sizes, about 600 KB (several 256 KiB chunks for the big ones). */
static lc_model *pat_model(pat *pats) {
    lc_error err = { 0 };
    lc_model *m = lc_model_new();
    for (size_t i = 0; i < 30; i++) {
        char name[32];
        snprintf(name, sizeof name, "t%02zu", i);
        const uint64_t n = i % 7 == 0 ? 300000 + i : 1 + i * 97;
        lc_tensor *t;
        cr_assert_eq(lc_model_add_tensor(m, name, LC_DT_U8, 1, &n, &t, &err), LC_OK);
        t->ops = &pat_ops;
        t->ctx = &pats[i];
    }
    return m;
}

static size_t read_all(const char *path, uint8_t **out) {
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f);
    fseek(f, 0, SEEK_END);
    const long n = ftell(f);
    rewind(f);
    *out = malloc((size_t)n);
    cr_assert_eq(fread(*out, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    return (size_t)n;
}

Test(st_write, same_file_for_any_thread_count) {
    pat pats[30];
    for (size_t i = 0; i < 30; i++)
        pats[i] = (pat){ (uint8_t)i, UINT64_MAX };
    lc_model *m = pat_model(pats);
    char path[] = "/tmp/lc-st-threads-XXXXXX";
    const int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    close(fd);
    uint8_t *want = NULL;
    size_t want_n = 0;
    for (int threads = 1; threads <= 5; threads += 2) {
        lc_error err = { 0 };
        const lc_st_write_opts o = { .threads = threads };
        cr_assert_eq(lc_safetensors_write(m, path, &o, NULL, &err), LC_OK, "%s", err.msg);
        uint8_t *got;
        const size_t n = read_all(path, &got);
        if (!want) {
            want = got;
            want_n = n;
            continue;
        }
        cr_assert_eq(n, want_n, "threads %d", threads);
        cr_assert_eq(memcmp(got, want, n), 0, "threads %d", threads);
        free(got);
    }
    lc_model *back;
    lc_error err = { 0 };
    cr_assert_eq(lc_safetensors_load_mem(want, want_n, &back, &err), LC_OK, "%s", err.msg);
    for (size_t i = 0; i < 30; i++) {
        const lc_tensor *t = lc_model_tensor(back, i);
        const size_t k = (size_t)(t->name[1] - '0') * 10 + (size_t)(t->name[2] - '0');
        for (uint64_t b = 0; b < t->nbytes; b++)
            cr_assert_eq(t->data[b], (uint8_t)(b * 13 + k), "%s byte %llu", t->name,
                         (unsigned long long)b);
    }
    lc_model_free(back);
    free(want);
    unlink(path);
    lc_model_free(m);
}

Test(st_write, first_failing_tensor_in_file_order_wins) {
    pat pats[30];
    for (size_t i = 0; i < 30; i++)
        pats[i] = (pat){ (uint8_t)i, UINT64_MAX };
    pats[21].fail_at = 5;        /* written after t14 (names sort): t14 is reported */
    pats[14].fail_at = 290000;   /* t14 is a big one: its last chunk fails */
    lc_model *m = pat_model(pats);
    char path[] = "/tmp/lc-st-fail-XXXXXX";
    const int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    close(fd);
    unlink(path);
    for (int threads = 1; threads <= 4; threads++) {
        lc_error err = { 0 };
        const lc_st_write_opts o = { .threads = threads };
        cr_assert_eq(lc_safetensors_write(m, path, &o, NULL, &err), LC_E_IO);
        cr_assert_str_eq(err.where, "t14", "threads %d", threads);
        cr_assert_eq(err.offset, 290000);
        cr_assert_eq(access(path, F_OK), -1, "no file after a failure");
    }
    lc_model_free(m);
}
