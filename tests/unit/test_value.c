/* Unit tests for libconvert/value.c: packed arrays and their accessors. */
#include <criterion/criterion.h>
#include <string.h>

#include "libconvert/alloc.h"
#include "libconvert/value.h"

/* Scalars sit at their wire width, little-endian: the bytes a GGUF writer copies. */
Test(value_arr, scalars_are_packed_as_on_the_wire) {
    lc_value a;
    lc_error err = { 0 };
    cr_assert_eq(lc_value_array(&a, LC_VT_I16, 3, &err), LC_OK);
    cr_assert_eq(lc_value_arr_set(&a, 0, lc_value_int(LC_VT_I16, -2), &err), LC_OK);
    cr_assert_eq(lc_value_arr_set(&a, 2, lc_value_int(LC_VT_I16, 0x1234), &err), LC_OK);
    const uint8_t want[6] = { 0xfe, 0xff, 0, 0, 0x34, 0x12 };
    cr_assert_eq(memcmp(lc_value_arr_data(&a), want, 6), 0);
    cr_assert_eq(lc_value_arr_int(&a, 0), -2);
    cr_assert_eq(lc_value_arr_uint(&a, 0), (uint64_t)-2, "signed items sign-extend");
    cr_assert_eq(lc_value_arr_int(&a, 1), 0);
    cr_assert_eq(lc_value_arr_int(&a, 2), 0x1234);
    cr_assert_eq(lc_value_arr_int(&a, 3), 0, "out of range reads 0");
    lc_value v = lc_value_arr_get(&a, 0);
    cr_assert(v.type == LC_VT_I16 && v.i == -2);
    lc_value_clear(&a);
}

Test(value_arr, every_scalar_type_round_trips) {
    lc_error err = { 0 };
    const lc_value items[] = {
        lc_value_uint(LC_VT_U8, 255), lc_value_int(LC_VT_I8, -128),
        lc_value_uint(LC_VT_U16, 65535), lc_value_int(LC_VT_I16, -32768),
        lc_value_uint(LC_VT_U32, UINT32_MAX), lc_value_int(LC_VT_I32, INT32_MIN),
        lc_value_uint(LC_VT_U64, UINT64_MAX), lc_value_int(LC_VT_I64, INT64_MIN),
        lc_value_float(LC_VT_F32, 0.1f), lc_value_float(LC_VT_F64, 0.1), lc_value_bool(true),
    };
    for (size_t k = 0; k < sizeof items / sizeof *items; k++) {
        lc_value a;
        const lc_vtype t = items[k].type;
        cr_assert_eq(lc_value_array(&a, t, 5, &err), LC_OK);
        cr_assert_eq(lc_value_arr_set(&a, 4, items[k], &err), LC_OK);
        const lc_value got = lc_value_arr_get(&a, 4), zero = lc_value_arr_get(&a, 3);
        cr_assert_eq(got.type, t);
        cr_assert_eq(memcmp(&got, &items[k], sizeof got), 0, "%s", lc_vtype_name(t));
        cr_assert_eq(zero.u, 0);
        lc_value_clear(&a);
    }
}

/* Up to 8 bytes of items sit in the value itself: copies and moves carry them. */
Test(value_arr, small_arrays_inline_and_copies) {
    lc_error err = { 0 };
    lc_value a, b;
    cr_assert_eq(lc_value_array(&a, LC_VT_U32, 2, &err), LC_OK);
    cr_assert_eq(lc_value_arr_set(&a, 1, lc_value_uint(LC_VT_U32, 7), &err), LC_OK);
    cr_assert_eq(lc_value_copy(&b, &a, &err), LC_OK);
    lc_value moved = a;
    cr_assert_eq(lc_value_arr_uint(&moved, 1), 7);
    cr_assert_eq(lc_value_arr_uint(&b, 1), 7);
    lc_value_clear(&moved);
    lc_value_clear(&b);
    cr_assert_eq(lc_value_array(&a, LC_VT_U8, 100, &err), LC_OK);   /* a buffer */
    cr_assert_eq(lc_value_arr_set(&a, 99, lc_value_uint(LC_VT_U8, 9), &err), LC_OK);
    cr_assert_eq(lc_value_copy(&b, &a, &err), LC_OK);
    lc_value_clear(&a);
    cr_assert_eq(lc_value_arr_uint(&b, 99), 9);
    lc_value_clear(&b);
}

Test(value_arr, bools_are_stored_as_0_or_1) {
    lc_error err = { 0 };
    lc_value a;
    cr_assert_eq(lc_value_array(&a, LC_VT_BOOL, 2, &err), LC_OK);
    cr_assert_eq(lc_value_arr_set(&a, 0, lc_value_bool(true), &err), LC_OK);
    cr_assert_eq(((const uint8_t *)lc_value_arr_data(&a))[0], 1);
    cr_assert(lc_value_arr_get(&a, 0).b && !lc_value_arr_get(&a, 1).b);
    lc_value_clear(&a);
}

/* One buffer of texts, filled in index order within the bytes reserved. */
Test(value_arr, strings_fill_in_order_within_their_bytes) {
    lc_error err = { 0 };
    lc_value a;
    cr_assert_eq(lc_value_string_array(&a, 3, 5, &err), LC_OK);
    size_t len = 99;
    cr_assert_str_eq(lc_value_arr_str(&a, 0, &len), "");   /* unset reads as "" */
    cr_assert_eq(len, 0);
    lc_error e1 = { 0 };
    cr_assert_eq(lc_value_arr_set_str(&a, 1, "x", 1, &e1), LC_E_ARG, "out of order");
    cr_assert_eq(lc_value_arr_set_str(&a, 0, "abc", 3, &err), LC_OK);
    lc_error e2 = { 0 };
    cr_assert_eq(lc_value_arr_set_str(&a, 0, "d", 1, &e2), LC_E_ARG, "set twice");
    lc_error e3 = { 0 };
    cr_assert_eq(lc_value_arr_set_str(&a, 1, "def", 3, &e3), LC_E_ARG, "past the bytes");
    char empty[1] = "";
    cr_assert_eq(lc_value_arr_set(&a, 1, (lc_value){ .type = LC_VT_STRING, .str = { empty, 0 } },
                                  &err), LC_OK);
    cr_assert_eq(lc_value_arr_set_str(&a, 2, "de", 2, &err), LC_OK);
    cr_assert_str_eq(lc_value_arr_str(&a, 0, &len), "abc");
    cr_assert_eq(len, 3);
    cr_assert_str_eq(lc_value_arr_str(&a, 1, &len), "");
    cr_assert_str_eq(lc_value_arr_str(&a, 2, &len), "de");
    cr_assert_eq(len, 2);
    const lc_value v = lc_value_arr_get(&a, 2);
    cr_assert(v.type == LC_VT_STRING && v.str.len == 2 && strcmp(v.str.ptr, "de") == 0);
    lc_value b;
    cr_assert_eq(lc_value_copy(&b, &a, &err), LC_OK);
    lc_value_clear(&a);
    cr_assert_str_eq(lc_value_arr_str(&b, 0, NULL), "abc");
    cr_assert_str_eq(lc_value_arr_str(&b, 2, NULL), "de");
    cr_assert_null(lc_value_arr_data(&b), "strings have no scalar data");
    lc_value_clear(&b);
    /* lc_value_array makes count empty strings, which is a whole array already. */
    cr_assert_eq(lc_value_array(&a, LC_VT_STRING, 4, &err), LC_OK);
    cr_assert_str_eq(lc_value_arr_str(&a, 3, NULL), "");
    lc_value_clear(&a);
}

/* Nested arrays: an item is moved in (taken even when the call fails). */
Test(value_arr, nested_items_are_moved_in) {
    lc_error err = { 0 };
    lc_value a, in;
    cr_assert_eq(lc_value_array(&a, LC_VT_ARRAY, 2, &err), LC_OK);
    cr_assert_eq(lc_value_arr_item(&a, 1)->arr.count, 0, "items start as empty arrays");
    cr_assert_eq(lc_value_array(&in, LC_VT_U64, 3, &err), LC_OK);
    cr_assert_eq(lc_value_arr_set(&in, 2, lc_value_uint(LC_VT_U64, 1ull << 40), &err), LC_OK);
    cr_assert_eq(lc_value_arr_set(&a, 0, in, &err), LC_OK);
    cr_assert_eq(lc_value_arr_uint(lc_value_arr_item(&a, 0), 2), 1ull << 40);
    cr_assert_eq(lc_value_array(&in, LC_VT_U8, 300, &err), LC_OK);
    lc_error e1 = { 0 };
    cr_assert_eq(lc_value_arr_set(&a, 5, in, &e1), LC_E_ARG);   /* freed: ASan would say */
    lc_error e2 = { 0 };
    cr_assert_eq(lc_value_arr_set(&a, 0, lc_value_uint(LC_VT_U8, 1), &e2), LC_E_ARG,
                 "a scalar is not an array item");
    cr_assert_null(lc_value_arr_item(&in, 0), "not an array of arrays");
    lc_value_clear(&a);
}

Test(value_arr, wrong_kinds_read_as_zero) {
    lc_value s;
    cr_assert_eq(lc_value_string(&s, "hi", 2, NULL), LC_OK);
    cr_assert_eq(lc_value_arr_uint(&s, 0), 0);
    cr_assert_eq(lc_value_arr_float(&s, 0), 0.0);
    cr_assert_str_eq(lc_value_arr_str(&s, 0, NULL), "");
    cr_assert_null(lc_value_arr_item(&s, 0));
    cr_assert_null(lc_value_arr_data(&s));
    lc_value_clear(&s);
    lc_value a;
    cr_assert_eq(lc_value_array(&a, LC_VT_STRING, 1, NULL), LC_OK);
    cr_assert_eq(lc_value_arr_uint(&a, 0), 0, "a string item is no integer");
    lc_value_clear(&a);
    cr_assert_eq(lc_value_array(&a, (lc_vtype)LC_VT_COUNT, 1, NULL), LC_E_ARG);
}

Test(value_arr, sizes_that_cannot_be_allocated) {
    lc_value a;
    lc_error err = { 0 };
    cr_assert_eq(lc_value_array(&a, LC_VT_U64, UINT64_MAX / 4, &err), LC_E_OVERFLOW);
    lc_error e2 = { 0 };
    cr_assert_eq(lc_value_string_array(&a, UINT64_MAX / 4, 0, &e2), LC_E_OVERFLOW);
    lc_error e3 = { 0 };
    lc_alloc_fail_after(1);
    lc_code rc = lc_value_array(&a, LC_VT_U8, 64, &e3);
    lc_alloc_fail_after(0);
    cr_assert_eq(rc, LC_E_NOMEM);
}
