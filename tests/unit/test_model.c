/* Unit tests for the IR: errors, dtype table, values, model, tensor reads. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "libconvert/alloc.h"
#include "libconvert/dtype.h"
#include "libconvert/error.h"
#include "libconvert/model.h"
#include "libconvert/value.h"

Test(error, first_failure_wins) {
    lc_error err = {0};
    cr_assert_eq(lc_fail(&err, LC_E_TRUNCATED, 12, "need %d bytes", 8), LC_E_TRUNCATED);
    cr_assert_eq(lc_fail(&err, LC_E_MALFORMED, 99, "later"), LC_E_MALFORMED);
    cr_assert_eq(err.code, LC_E_TRUNCATED);
    cr_assert_eq(err.offset, 12);
    lc_err_context(&err, "a.safetensors", "w");
    lc_err_context(&err, "b.safetensors", "x");
    char line[512];
    lc_err_format(&err, line, sizeof line);
    cr_assert_str_eq(line, "a.safetensors: w @ 0xc: need 8 bytes");
}

Test(error, message_is_one_line) {
    lc_error err = {0};
    lc_fail(&err, LC_E_MALFORMED, LC_NO_OFFSET, "name 'a\nb'");
    char line[512];
    lc_err_format(&err, line, sizeof line);
    cr_assert_str_eq(line, "name 'a\\nb'");
}

Test(error, null_err_is_allowed) {
    cr_assert_eq(lc_fail(NULL, LC_E_IO, 0, "x"), LC_E_IO);
    cr_assert_str_eq(lc_code_name(LC_E_FORBIDDEN), "forbidden");
    cr_assert_str_eq(lc_code_name((lc_code)999), "unknown");
}

Test(dtype, table_facts) {
    cr_assert_eq(lc_dtype_from_st_name("BF16", 4), LC_DT_BF16);
    cr_assert_eq(lc_dtype_from_st_name("BF1", 3), LC_DT_INVALID);
    cr_assert_eq(lc_dtype_from_gguf(12), LC_DT_Q4_K);
    cr_assert_eq(lc_dtype_from_gguf(4), LC_DT_INVALID); /* removed Q4_2 */
    cr_assert_eq(lc_dtype_from_name("q8_0"), LC_DT_Q8_0);
    cr_assert_eq(lc_dtype_get(LC_DT_Q6_K)->type_size, 210);
    uint64_t b;
    cr_assert(lc_dtype_row_bytes(LC_DT_Q8_0, 64, &b));
    cr_assert_eq(b, 68);
    cr_assert_not(lc_dtype_row_bytes(LC_DT_Q8_0, 33, &b));
    /* every entry is named and has a size */
    for (int t = 1; t < LC_DT_COUNT; t++) {
        cr_assert(lc_dtype_get((lc_dtype)t)->type_size > 0, "%d", t);
        cr_assert_eq(lc_dtype_from_name(lc_dtype_name((lc_dtype)t)), (lc_dtype)t);
    }
}

Test(tensor, nbytes_checks) {
    lc_error err = {0};
    uint64_t n, big[2] = { UINT64_C(1) << 40, UINT64_C(1) << 40 };
    cr_assert_eq(lc_shape_nbytes(LC_DT_F32, 2, big, &n, &err), LC_E_OVERFLOW);
    memset(&err, 0, sizeof err);
    uint64_t q[2] = { 3, 48 };
    cr_assert_eq(lc_shape_nbytes(LC_DT_Q8_0, 2, q, &n, &err), LC_E_MALFORMED);
    q[1] = 64;
    cr_assert_eq(lc_shape_nbytes(LC_DT_Q8_0, 2, q, &n, NULL), LC_OK);
    cr_assert_eq(n, 3 * 68);
    cr_assert_eq(lc_shape_nbytes(LC_DT_F16, 0, NULL, &n, NULL), LC_OK);
    cr_assert_eq(n, 2);
}

Test(model, tensors_and_duplicates) {
    lc_model *m = lc_model_new();
    lc_error err = {0};
    lc_tensor *t;
    static const uint8_t bytes[6] = { 1, 2, 3, 4, 5, 6 };
    uint64_t shape[2] = { 3, 1 };
    char name[32];
    for (int i = 0; i < 1000; i++) {
        snprintf(name, sizeof name, "t%d", i);
        cr_assert_eq(lc_model_add_tensor(m, name, LC_DT_I16, 2, shape, &t, &err), LC_OK);
        t->data = bytes;
    }
    cr_assert_eq(lc_model_tensor_count(m), 1000);
    cr_assert_eq(lc_model_add_tensor(m, "t500", LC_DT_F32, 0, NULL, &t, &err), LC_E_MALFORMED);
    cr_assert_null(t);
    cr_assert_str_eq(err.where, "t500");
    t = lc_model_find_tensor(m, "t999");
    cr_assert_not_null(t);
    cr_assert_eq(t->nbytes, 6);
    uint8_t out[4] = {0};
    cr_assert_eq(lc_tensor_read(t, 2, out, 4, NULL), LC_OK);
    cr_assert_eq(memcmp(out, bytes + 2, 4), 0);
    cr_assert_eq(lc_tensor_read(t, 3, out, 4, NULL), LC_E_ARG);
    cr_assert_null(lc_model_find_tensor(m, "nope"));
    lc_model_free(m);
}

Test(model, metadata_order_and_replace) {
    lc_model *m = lc_model_new();
    lc_value v = lc_value_uint(LC_VT_U32, 7);
    cr_assert_eq(lc_model_set_meta(m, "b", &v, NULL), LC_OK);
    cr_assert_eq(lc_model_set_meta_str(m, "a", "hello", NULL), LC_OK);
    v = lc_value_uint(LC_VT_U32, 9);
    cr_assert_eq(lc_model_set_meta(m, "b", &v, NULL), LC_OK);
    v = lc_value_bool(true);
    lc_error err = {0};
    cr_assert_eq(lc_model_add_meta(m, "a", &v, &err), LC_E_MALFORMED);
    cr_assert_eq(lc_model_meta_count(m), 2);
    cr_assert_str_eq(lc_model_meta(m, 0)->key, "b");
    cr_assert_eq(lc_model_meta(m, 0)->val.u, 9);
    cr_assert_str_eq(lc_model_find_meta(m, "a")->str.ptr, "hello");
    lc_model_free(m);
}

Test(model, rename_keeps_place_and_index) {
    lc_model *m = lc_model_new();
    char key[16];
    for (int i = 0; i < 100; i++) {           /* past the first index growth */
        snprintf(key, sizeof key, "k%d", i);
        cr_assert_eq(lc_model_set_meta_str(m, key, key, NULL), LC_OK);
    }
    lc_error err = {0};
    cr_assert_eq(lc_model_rename_meta(m, 40, "k41", &err), LC_E_MALFORMED, "taken");
    cr_assert_str_eq(err.where, "k41");
    cr_assert_eq(lc_model_rename_meta(m, 40, "renamed", NULL), LC_OK);
    cr_assert_str_eq(lc_model_meta(m, 40)->key, "renamed");
    cr_assert_str_eq(lc_model_find_meta(m, "renamed")->str.ptr, "k40");
    cr_assert_null(lc_model_find_meta(m, "k40"));
    for (int i = 0; i < 100; i++) {
        snprintf(key, sizeof key, "k%d", i);
        cr_assert((i == 40) == (lc_model_find_meta(m, key) == NULL), "%s", key);
    }
    cr_assert_eq(lc_model_set_meta_str(m, "k40", "new", NULL), LC_OK);   /* free again */
    cr_assert_eq(lc_model_meta_count(m), 101);
    lc_model_free(m);
}

Test(value, nested_copy) {
    lc_value a, b, s, e;
    cr_assert_eq(lc_value_array(&a, LC_VT_ARRAY, 2, NULL), LC_OK);
    cr_assert_eq(lc_value_string_array(&s, 1, 3, NULL), LC_OK);
    cr_assert_eq(lc_value_arr_set_str(&s, 0, "xyz", 3, NULL), LC_OK);
    cr_assert_eq(lc_value_arr_set(&a, 0, s, NULL), LC_OK);
    cr_assert_eq(lc_value_array(&e, LC_VT_I32, 0, NULL), LC_OK);
    cr_assert_eq(lc_value_arr_set(&a, 1, e, NULL), LC_OK);
    cr_assert_eq(lc_value_copy(&b, &a, NULL), LC_OK);
    lc_value_clear(&a);
    cr_assert_str_eq(lc_value_arr_str(lc_value_arr_item(&b, 0), 0, NULL), "xyz");
    cr_assert_eq(lc_value_arr_item(&b, 1)->arr.count, 0);
    cr_assert_eq(lc_value_arr_item(&b, 1)->arr.elem, LC_VT_I32);
    lc_value_clear(&b);
}

Test(alloc, failure_hook) {
    lc_alloc_fail_after(2);
    void *a = lc_malloc(8);
    void *b = lc_malloc(8);
    lc_alloc_fail_after(0);
    cr_assert_not_null(a);
    cr_assert_null(b);
    lc_free(a);
    cr_assert_null(lc_calloc(SIZE_MAX / 2, 4));
}

Test(model, oom_while_adding_is_reported) {
    lc_model *m = lc_model_new();
    lc_error err = {0};
    lc_alloc_fail_after(1);
    lc_code rc = lc_model_add_tensor(m, "x", LC_DT_F32, 0, NULL, NULL, &err);
    lc_alloc_fail_after(0);
    cr_assert_eq(rc, LC_E_NOMEM);
    cr_assert_eq(lc_model_tensor_count(m), 0);
    lc_model_free(m);
}
