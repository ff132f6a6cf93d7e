/* Unit tests for libconvert/json_scan.c: tokens with their offsets, the grammar
 * serde_json holds a text to (code and offset of each refusal), decoding, and the
 * tree-cost bound. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "libconvert/json_scan.h"

/* Scans all of s (with base 100); returns the code and, on failure, err.offset. */
static lc_code scan_all(const char *s, uint64_t *at) {
    lc_jscan j;
    lc_jtok t;
    lc_error err = { 0 };
    lc_jscan_init(&j, s, strlen(s), 100);
    lc_code rc;
    do
        rc = lc_jscan_next(&j, &t, &err);
    while (rc == LC_OK && t.kind != LC_JT_END);
    *at = err.offset;
    return rc;
}

Test(json_scan, tokens_and_offsets) {
    const char *s = " {\"a\" : [1, -2.5e3, true], \"b\":{}, \"c\":null} x";
    lc_jscan j;
    lc_jtok t;
    lc_error err = { 0 };
    lc_jscan_init(&j, s, strlen(s), 100);
    static const struct { lc_jkind kind; size_t at, len; } want[] = {
        { LC_JT_OBJ, 1, 1 }, { LC_JT_KEY, 2, 3 }, { LC_JT_ARR, 8, 1 }, { LC_JT_NUM, 9, 1 },
        { LC_JT_NUM, 12, 6 }, { LC_JT_TRUE, 20, 4 }, { LC_JT_ARR_END, 24, 1 },
        { LC_JT_KEY, 27, 3 }, { LC_JT_OBJ, 31, 1 }, { LC_JT_OBJ_END, 32, 1 },
        { LC_JT_KEY, 35, 3 }, { LC_JT_NULL, 39, 4 }, { LC_JT_OBJ_END, 43, 1 },
        { LC_JT_END, 44, 0 },
    };
    for (size_t k = 0; k < sizeof want / sizeof *want; k++) {
        cr_assert_eq(lc_jscan_next(&j, &t, &err), LC_OK, "token %zu: %s", k, err.msg);
        cr_assert_eq(t.kind, want[k].kind, "token %zu", k);
        cr_assert_eq(t.at, 100 + want[k].at, "token %zu at %llu", k, (unsigned long long)t.at);
        cr_assert_eq(t.len, want[k].len, "token %zu", k);
    }
    cr_assert_eq(j.pos, 44, "what follows the value is the caller's");
}

/* What serde_json refuses, refused at the byte that breaks the grammar. */
Test(json_scan, strict_grammar) {
    static const struct { const char *s; lc_code code; uint64_t at; } cases[] = {
        { "[1,]", LC_E_MALFORMED, 3 },          /* trailing comma */
        { "{\"a\":1,}", LC_E_MALFORMED, 7 },
        { "[01]", LC_E_MALFORMED, 2 },          /* leading zero: the number is "0" */
        { "[1.]", LC_E_MALFORMED, 3 },
        { "[1e]", LC_E_MALFORMED, 3 },
        { "[-]", LC_E_MALFORMED, 2 },
        { "[.5]", LC_E_MALFORMED, 1 },
        { "[+1]", LC_E_MALFORMED, 1 },
        { "[tru]", LC_E_MALFORMED, 1 },
        { "[nulll]", LC_E_MALFORMED, 5 },
        { "{1:2}", LC_E_MALFORMED, 1 },         /* keys are strings */
        { "{\"a\" 1}", LC_E_MALFORMED, 5 },
        { "[1 2]", LC_E_MALFORMED, 3 },
        { "[\"a\\x\"]", LC_E_MALFORMED, 3 },    /* unknown escape */
        { "[\"\\u12g4\"]", LC_E_MALFORMED, 2 },
        { "[\"\\ud800\"]", LC_E_MALFORMED, 2 }, /* high surrogate alone */
        { "[\"\\udc00\"]", LC_E_MALFORMED, 2 }, /* low surrogate alone */
        { "[\"\\ud800\\u0041\"]", LC_E_MALFORMED, 2 },
        { "[\"a\x01\"]", LC_E_MALFORMED, 3 },   /* raw control byte */
        { "[\"abc", LC_E_MALFORMED, 1 },        /* unterminated: at its quote */
        { "[\"a\\u0000\"]", LC_E_UNSUPPORTED, 3 },
        { "[1", LC_E_MALFORMED, 2 },            /* ends inside: at the end */
        { "", LC_E_MALFORMED, 0 },
        { "\x0b[]", LC_E_MALFORMED, 0 },        /* not JSON whitespace */
        { "[1,\xc3\xa9]", LC_E_MALFORMED, 3 },
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        uint64_t at = 0;
        cr_assert_eq(scan_all(cases[k].s, &at), cases[k].code, "case %zu: %s", k, cases[k].s);
        cr_assert_eq(at, 100 + cases[k].at, "case %zu: at %llu", k, (unsigned long long)at);
    }
    static const char *const good[] = {
        "0", "-0", "1.5e-3", "1E+9", "\"\"", "[]", "{}", "[[],{}]", "\"\\ud83d\\ude00\"",
        "\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"", " \t\r\n[ 1 , 2 ] ",
    };
    for (size_t k = 0; k < sizeof good / sizeof *good; k++) {
        uint64_t at;
        cr_assert_eq(scan_all(good[k], &at), LC_OK, "good %zu: %s", k, good[k]);
    }
}

Test(json_scan, nesting_is_limited) {
    char s[2 * LC_JSCAN_MAX_DEPTH + 3];
    memset(s, '[', LC_JSCAN_MAX_DEPTH);
    memset(s + LC_JSCAN_MAX_DEPTH, ']', LC_JSCAN_MAX_DEPTH);
    s[2 * LC_JSCAN_MAX_DEPTH] = '\0';
    uint64_t at;
    cr_assert_eq(scan_all(s, &at), LC_OK, "%d levels are fine", LC_JSCAN_MAX_DEPTH);
    memset(s, '[', LC_JSCAN_MAX_DEPTH + 1);
    memset(s + LC_JSCAN_MAX_DEPTH + 1, ']', LC_JSCAN_MAX_DEPTH + 1);
    s[2 * LC_JSCAN_MAX_DEPTH + 2] = '\0';
    cr_assert_eq(scan_all(s, &at), LC_E_MALFORMED);
    cr_assert_eq(at, 100 + LC_JSCAN_MAX_DEPTH);
}

Test(json_scan, decode_equals_count_skip) {
    const char *s = "{\"k\\u00e9\\ud83d\\ude00\\n\":[1,[2,3],{\"x\":[]}],\"dtype\":\"\\u0064\"}";
    lc_jscan j;
    lc_jtok t, v;
    lc_error err = { 0 };
    lc_jscan_init(&j, s, strlen(s), 0);
    cr_assert_eq(lc_jscan_next(&j, &t, &err), LC_OK);
    cr_assert_eq(lc_jscan_next(&j, &t, &err), LC_OK);
    char out[64];
    cr_assert_eq(lc_jscan_decode(&j, &t, out), 8);
    cr_assert_str_eq(out, "k\xc3\xa9\xf0\x9f\x98\x80\n");
    cr_assert(lc_jscan_equals(&j, &t, "k\xc3\xa9\xf0\x9f\x98\x80\n"));
    cr_assert_not(lc_jscan_equals(&j, &t, "k"));
    cr_assert_eq(lc_jscan_next(&j, &v, &err), LC_OK);
    uint64_t n;
    cr_assert_eq(lc_jscan_count(&j, &v, &n, &err), LC_OK);
    cr_assert_eq(n, 3);
    cr_assert_eq(lc_jscan_skip(&j, &v, &err), LC_OK);
    cr_assert_eq(lc_jscan_next(&j, &t, &err), LC_OK);
    cr_assert(t.kind == LC_JT_KEY && lc_jscan_equals(&j, &t, "dtype"));
    cr_assert_eq(lc_jscan_next(&j, &t, &err), LC_OK);
    cr_assert(t.kind == LC_JT_STR && lc_jscan_equals(&j, &t, "d"), "escapes decode first");
}

/* The cost of a cJSON tree, counted: 80 bytes a value, at least 32 a string. */
Test(json_scan, tree_cost_and_its_bounds) {
    cr_assert_eq(lc_json_tree_cost("[0,1,2]", 7), 4 * 80);
    cr_assert_eq(lc_json_tree_cost("{\"a\":\"b\"}", 9), 80 + 32 + 80 + 32);
    cr_assert_eq(lc_json_tree_cost("\"unterminated", 13), 32 + 80);
    const char *esc = "[\"a\\\"b\\\\\",1]";   /* ["a\"b\\",1]: the quote ends the string */
    cr_assert_eq(lc_json_tree_cost(esc, strlen(esc)), 3 * 80 + 32);
    const size_t n = 4u << 20;   /* [0,0,...]: 40 times its bytes */
    char *s = malloc(n);
    cr_assert_not_null(s);
    s[0] = '[';
    for (size_t i = 1; i + 1 < n; i += 2)
        memcpy(s + i, "0,", 2);
    s[n - 1] = ']';
    lc_error err = { 0 };
    cr_assert_eq(lc_json_tree_check(s, n, &err), LC_E_OVERFLOW);
    cr_assert_eq(err.offset, 0);
    for (size_t i = 1; i + 1 < n; i++)   /* one long string: about its bytes */
        s[i] = 'a';
    s[1] = s[n - 2] = '"';
    cr_assert_eq(lc_json_tree_check(s, n, NULL), LC_OK);
    free(s);
}
