/* Unit tests for libconvert/inspect and libconvert/json: every value type prints,
 * long arrays are summarised in text and complete in JSON, names are escaped. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "libconvert/alloc.h"
#include "libconvert/inspect.h"
#include "libconvert/json.h"
#include "libconvert/model.h"

static lc_model *sample(void) {
    lc_model *m = lc_model_new();
    lc_error err = {0};
    lc_value v = lc_value_uint(LC_VT_U8, 200);
    cr_assert_eq(lc_model_set_meta(m, "u8", &v, &err), LC_OK);
    v = lc_value_int(LC_VT_I64, -5);
    cr_assert_eq(lc_model_set_meta(m, "i64", &v, &err), LC_OK);
    v = lc_value_float(LC_VT_F32, NAN);
    cr_assert_eq(lc_model_set_meta(m, "nan", &v, &err), LC_OK);
    v = lc_value_float(LC_VT_F64, 0.5);
    cr_assert_eq(lc_model_set_meta(m, "f64", &v, &err), LC_OK);
    v = lc_value_bool(true);
    cr_assert_eq(lc_model_set_meta(m, "b", &v, &err), LC_OK);
    cr_assert_eq(lc_model_set_meta_str(m, "s", "a\"b\n", &err), LC_OK);
    /* [[0, 1], [1, 2]] and a 20-item array */
    cr_assert_eq(lc_value_array(&v, LC_VT_ARRAY, 2, &err), LC_OK);
    for (int i = 0; i < 2; i++) {
        lc_value pair;
        cr_assert_eq(lc_value_array(&pair, LC_VT_U32, 2, &err), LC_OK);
        cr_assert_eq(lc_value_arr_set(&pair, 0, lc_value_uint(LC_VT_U32, (uint64_t)i), &err),
                     LC_OK);
        cr_assert_eq(lc_value_arr_set(&pair, 1, lc_value_uint(LC_VT_U32, (uint64_t)i + 1),
                                      &err), LC_OK);
        cr_assert_eq(lc_value_arr_set(&v, (uint64_t)i, pair, &err), LC_OK);
    }
    cr_assert_eq(lc_model_set_meta(m, "nested", &v, &err), LC_OK);
    cr_assert_eq(lc_value_array(&v, LC_VT_U32, 20, &err), LC_OK);
    for (int i = 0; i < 20; i++)
        cr_assert_eq(lc_value_arr_set(&v, (uint64_t)i, lc_value_uint(LC_VT_U32, (uint64_t)i),
                                      &err), LC_OK);
    cr_assert_eq(lc_model_set_meta(m, "long", &v, &err), LC_OK);
    uint64_t shape[] = { 2, 3 };
    lc_tensor *t;
    cr_assert_eq(lc_model_add_tensor(m, "w\x1b[2J", LC_DT_F16, 2, shape, &t, &err), LC_OK);
    t->file_offset = 64;
    return m;
}

static char *report(const lc_model *m, bool json) {
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    cr_assert_not_null(f);
    lc_inspect_info info = { "x.gguf", "test", 100, 8 };
    lc_error err = {0};
    cr_assert_eq(json ? lc_inspect_print_json(f, m, &info, &err)
                      : lc_inspect_print_text(f, m, &info, &err), LC_OK);
    fclose(f);
    return text;
}

Test(inspect, text_summarises_and_escapes) {
    lc_model *m = sample();
    char *t = report(m, false);
    cr_assert(strstr(t, "format:   test\n"), "%s", t);
    cr_assert(strstr(t, "header:   8 bytes\n"));
    cr_assert(strstr(t, "\"u8\" (u8) = 200\n"));
    cr_assert(strstr(t, "\"i64\" (i64) = -5\n"));
    cr_assert(strstr(t, "\"nan\" (f32) = null\n"));
    cr_assert(strstr(t, "\"b\" (bool) = true\n"));
    cr_assert(strstr(t, "\"s\" (string) = \"a\\\"b\\n\"\n"));
    cr_assert(strstr(t, "\"nested\" (array) = [[0, 1], [1, 2]]\n"));
    cr_assert(strstr(t, "= [0, 1, 2, 3, 4, 5, 6, 7, ... (20 u32 items)]\n"), "%s", t);
    cr_assert(strstr(t, "\"w\\u001b[2J\""), "escape byte must not reach the terminal");
    cr_assert_null(strchr(t, '\x1b'));
    free(t);
    lc_model_free(m);
}

Test(inspect, json_is_complete) {
    lc_model *m = sample();
    char *t = report(m, true);
    cr_assert(strstr(t, "\"long\": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, "
                        "17, 18, 19]"), "%s", t);
    cr_assert(strstr(t, "\"nested\": [[0, 1], [1, 2]]"));
    cr_assert(strstr(t, "\"f64\": 0.5"));
    cr_assert(strstr(t, "{\"name\": \"w\\u001b[2J\", \"dtype\": \"F16\", \"shape\": [2, 3], "
                        "\"nbytes\": 12, \"offset\": 64}"), "%s", t);
    cr_assert(strstr(t, "\"file_size\": 100, \"header_size\": 8"));
    free(t);
    lc_model_free(m);
}

Test(json, escapes_like_serde_json) {
    lc_json_buf b = {0};
    lc_error err = {0};
    const char s[] = "q\"b\\\b\f\n\r\t\x01\x1f\x7f/\xc3\xa9";
    cr_assert_eq(lc_json_put_string(&b, s, sizeof s - 1, &err), LC_OK);
    cr_assert_str_eq(b.data, "\"q\\\"b\\\\\\b\\f\\n\\r\\t\\u0001\\u001f\x7f/\xc3\xa9\"");
    b.len = 0;
    cr_assert_eq(lc_json_put_string(&b, "a\xff", 2, &err), LC_OK);
    cr_assert_str_eq(b.data, "\"a\\ufffd\"");
    lc_json_buf_free(&b);
}

Test(json, utf8_rules) {
    cr_assert_eq(lc_json_utf8_valid_prefix((const uint8_t *)"ab\xe6\xbc\xa2", 5), 5);
    cr_assert_eq(lc_json_utf8_valid_prefix((const uint8_t *)"ab\xe6\xbc", 4), 2);   /* cut */
    cr_assert_eq(lc_json_utf8_valid_prefix((const uint8_t *)"\xc0\x80", 2), 0);     /* overlong */
    cr_assert_eq(lc_json_utf8_valid_prefix((const uint8_t *)"\xed\xa0\x80", 3), 0); /* surrogate */
    cr_assert_eq(lc_json_utf8_valid_prefix((const uint8_t *)"\xf4\x90\x80\x80", 4), 0);
    cr_assert_eq(lc_json_utf8_valid_prefix((const uint8_t *)"\xf0\x9f\x98\x80", 4), 4);
}

Test(model, metadata_index_survives_growth) {
    lc_model *m = lc_model_new();
    lc_error err = {0};
    char key[32];
    for (int i = 0; i < 5000; i++) {
        snprintf(key, sizeof key, "k%d", i);
        cr_assert_eq(lc_model_set_meta_str(m, key, key, &err), LC_OK);
    }
    cr_assert_eq(lc_model_meta_count(m), 5000);
    cr_assert_str_eq(lc_model_find_meta(m, "k4321")->str.ptr, "k4321");
    cr_assert_str_eq(lc_model_meta(m, 17)->key, "k17");
    lc_value v;
    cr_assert_eq(lc_value_string(&v, "x", 1, &err), LC_OK);
    cr_assert_eq(lc_model_add_meta(m, "k99", &v, &err), LC_E_MALFORMED);
    cr_assert_null(lc_model_find_meta(m, "k5000"));
    lc_model_free(m);
}
