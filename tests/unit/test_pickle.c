/* Unit tests for the restricted pickle VM and scanner (formats/pickle*.c): one
 * literal-bytes test per code with its offset, the value model, limits, and the bad
 * corpus listed in fixtures/bad/pickle/EXPECT.tsv. */
#define _GNU_SOURCE /* memmem */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/pickle.h"
#include "libconvert/alloc.h"
#include "libconvert/map.h"

#define B(s) (const uint8_t *)(s), sizeof(s) - 1

static lc_code load(const uint8_t *b, uint64_t n, lc_pickle **p, lc_error *err) {
    memset(err, 0, sizeof *err);
    return lc_pickle_load(b, n, NULL, p, err);
}

static void expect_fail(const uint8_t *b, uint64_t n, lc_code code, uint64_t off) {
    lc_pickle *p = (lc_pickle *)1;
    lc_error err;
    cr_assert_eq(load(b, n, &p, &err), code, "got %s: %s", lc_code_name(err.code), err.msg);
    cr_assert_eq(err.offset, off, "offset 0x%llx: %s", (unsigned long long)err.offset, err.msg);
    cr_assert_null(p);
}

/* ---- one literal-bytes test per code ---- */

Test(pickle, truncated_argument) { expect_fail(B("X\x10\0\0\0ab."), LC_E_TRUNCATED, 5); }
Test(pickle, truncated_no_stop) { expect_fail(B("\x80\x02K\x01"), LC_E_TRUNCATED, 4); }
Test(pickle, truncated_line) { expect_fail(B("I12"), LC_E_TRUNCATED, 1); }
Test(pickle, truncated_empty_input) { expect_fail(NULL, 0, LC_E_TRUNCATED, 0); }
Test(pickle, malformed_unknown_opcode) { expect_fail(B("\x80\x02\xff."), LC_E_MALFORMED, 2); }
Test(pickle, malformed_unbalanced_mark) { expect_fail(B("((K\x01t."), LC_E_MALFORMED, 5); }
Test(pickle, malformed_memo_unset) { expect_fail(B("K\x01q\x00h\x05."), LC_E_MALFORMED, 4); }
Test(pickle, malformed_underflow) { expect_fail(B("K\x01" "a."), LC_E_MALFORMED, 2); }
Test(pickle, malformed_underflow_below_mark) { expect_fail(B("](a."), LC_E_MALFORMED, 2); }
Test(pickle, malformed_trailing) { expect_fail(B("N.N"), LC_E_MALFORMED, 2); }
Test(pickle, malformed_utf8) { expect_fail(B("K\x01\x8c\x02\xed\xa0."), LC_E_MALFORMED, 2); }
Test(pickle, malformed_negative_length) {
    expect_fail(B("T\xff\xff\xff\xff."), LC_E_MALFORMED, 0);
}
Test(pickle, malformed_int_text) { expect_fail(B("I0x10\n."), LC_E_MALFORMED, 0); }
Test(pickle, malformed_leading_zero) { expect_fail(B("I017\n."), LC_E_MALFORMED, 0); }
Test(pickle, malformed_string_unquoted) { expect_fail(B("Sabc\n."), LC_E_MALFORMED, 0); }
Test(pickle, malformed_reduce_args) {
    expect_fail(B("ccollections\nOrderedDict\nK\x01R."), LC_E_MALFORMED, 27);
}
Test(pickle, malformed_stack_global_kinds) { expect_fail(B("K\x01K\x02\x93."), LC_E_MALFORMED, 4); }
Test(pickle, malformed_build_on_list) { expect_fail(B("]}b."), LC_E_MALFORMED, 2); }
Test(pickle, malformed_unhashable) { expect_fail(B("\x8f(]\x85\x90."), LC_E_MALFORMED, 4); }
Test(pickle, overflow_marks) {
    uint8_t b[LC_PICKLE_MAX_MARKS + 1];
    memset(b, '(', sizeof b);
    expect_fail(b, sizeof b, LC_E_OVERFLOW, LC_PICKLE_MAX_MARKS);
}
Test(pickle, overflow_memo_index) { expect_fail(B("K\x01r\xff\xff\xff\xff."), LC_E_OVERFLOW, 2); }
/* A memo index past the pickle's length is no pickler's (entries are numbered from 0,
 * one opcode each) and would cost a memo array that large: 8 bytes asked for 32 MB. */
Test(pickle, overflow_memo_index_past_the_pickle) {
    expect_fail(B("K\x01r\xff\xff\x3f\x00."), LC_E_OVERFLOW, 2);
    expect_fail(B("K\x01q\x09."), LC_E_OVERFLOW, 2);          /* 9 in a 5-byte pickle */
    expect_fail(B("K\x01p100\n."), LC_E_OVERFLOW, 2);
    lc_pickle *p;
    lc_error err;
    cr_assert_eq(load(B("K\x01q\x04."), &p, &err), LC_OK, "%s", err.msg);   /* 4 < 5 */
    lc_pickle_free(p);
    cr_assert_eq(lc_pickle_scan(B("K\x01q\x09."), NULL, NULL, NULL, &err), LC_E_OVERFLOW);
}
Test(pickle, overflow_digits) {
    uint8_t b[LC_PICKLE_MAX_DIGITS + 4];
    memset(b, '9', sizeof b);
    b[0] = 'L';
    b[sizeof b - 2] = '\n';
    b[sizeof b - 1] = '.';
    expect_fail(b, sizeof b, LC_E_OVERFLOW, 0);
}
Test(pickle, unsupported_protocol) { expect_fail(B("\x80\x06N."), LC_E_UNSUPPORTED, 0); }
Test(pickle, unsupported_buffer) { expect_fail(B("\x80\x05N\x98."), LC_E_UNSUPPORTED, 3); }
Test(pickle, unsupported_lone_surrogate) { expect_fail(B("Va\\ud800\n."), LC_E_UNSUPPORTED, 0); }
Test(pickle, forbidden_global) { expect_fail(B("N0cos\nsystem\n."), LC_E_FORBIDDEN, 2); }
Test(pickle, forbidden_before_later_error) {
    expect_fail(B("cos\nsystem\n\xff"), LC_E_FORBIDDEN, 0);
}
Test(pickle, forbidden_ext) { expect_fail(B("\x82\x01."), LC_E_FORBIDDEN, 0); }
Test(pickle, forbidden_stack_global) {
    expect_fail(B("\x8c\x02os\x8c\x06system\x93."), LC_E_FORBIDDEN, 12);
}
Test(pickle, forbidden_names_module_and_attribute) {
    lc_pickle *p;
    lc_error err;
    cr_assert_eq(load(B("c__builtin__\neval\n."), &p, &err), LC_E_FORBIDDEN);
    cr_assert(strstr(err.msg, "__builtin__.eval"), "%s", err.msg);
}

Test(pickle, base_offset_is_added) {
    lc_pickle_opts o = { .base_offset = 0x1000 };
    lc_pickle *p;
    lc_error err = {0};
    cr_assert_eq(lc_pickle_load(B("K\x01" "a."), &o, &p, &err), LC_E_MALFORMED);
    cr_assert_eq(err.offset, 0x1002);
}

Test(pickle, nomem_at_every_allocation) {
    static const uint8_t b[] = "\x80\x02" "ccollections\nOrderedDict\n)R(X\x01\0\0\0a]"
                               "K\x01" "aK\x02\x8aG"
                               "\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f\x10"
                               "\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f\x20"
                               "\x21\x22\x23\x24\x25\x26\x27\x28\x29\x2a\x2b\x2c\x2d\x2e\x2f\x30"
                               "\x31\x32\x33\x34\x35\x36\x37\x38\x39\x3a\x3b\x3c\x3d\x3e\x3f\x40"
                               "\x41\x42\x43\x44\x45\x46\x47u.";
    bool ok = false;
    for (long n = 1; n < 200 && !ok; n++) {
        lc_pickle *p = (lc_pickle *)1;
        lc_error err = {0};
        lc_alloc_fail_after(n);
        lc_code rc = lc_pickle_load(b, sizeof b - 1, NULL, &p, &err);
        lc_alloc_fail_after(0);
        cr_assert(rc == LC_OK || rc == LC_E_NOMEM, "n=%ld: %s %s", n, lc_code_name(rc), err.msg);
        if (rc == LC_OK)
            ok = true;
        else
            cr_assert_null(p);
        lc_pickle_free(rc == LC_OK ? p : NULL);
        memset(&err, 0, sizeof err);
        lc_alloc_fail_after(n);
        rc = lc_pickle_scan(b, sizeof b - 1, NULL, NULL, NULL, &err);
        lc_alloc_fail_after(0);
        cr_assert(rc == LC_OK || rc == LC_E_NOMEM, "scan n=%ld: %s", n, lc_code_name(rc));
    }
    cr_assert(ok, "load never succeeded");
}

/* ---- values ---- */

Test(pickle, torch_tensor_walk) {
    static const uint8_t b[] =
        "\x80\x02" "ccollections\nOrderedDict\nq\x00)Rq\x01" "X\x06\0\0\0weight"
        "ctorch._utils\n_rebuild_tensor_v2\nq\x02((X\x07\0\0\0storage"
        "ctorch\nFloatStorage\nq\x03X\x01\0\0\0" "0X\x03\0\0\0cpuK\x04tq\x04Q"
        "K\x00K\x02K\x02\x86K\x02K\x01\x86\x89h\x00)Rtq\x05Rq\x06s.";
    lc_pickle *p;
    lc_error err;
    cr_assert_eq(load(b, sizeof b - 1, &p, &err), LC_OK, "%s", err.msg);
    const lc_pickle_val *sd = lc_pickle_root(p);
    cr_assert(lc_pickle_dict_ordered(sd));
    cr_assert_eq(lc_pickle_dict_len(sd), 1);
    const lc_pickle_val *t = lc_pickle_dict_get(sd, "weight");
    cr_assert(lc_pickle_is_call(t, "torch._utils", "_rebuild_tensor_v2"));
    cr_assert_null(lc_pickle_dict_get(sd, "bias"));
    size_t n, k;
    const lc_pickle_val *const *a = lc_pickle_items(lc_pickle_args(t), LC_PICKLE_TUPLE, &n);
    cr_assert_not_null(a);
    cr_assert_eq(n, 6);
    const lc_pickle_val *const *pid = lc_pickle_items(lc_pickle_persid(a[0]), LC_PICKLE_TUPLE, &k);
    cr_assert_eq(k, 5);
    cr_assert(lc_pickle_str_is(pid[0], "storage"));
    cr_assert(lc_pickle_is_global(pid[1], "torch", "FloatStorage"));
    cr_assert(lc_pickle_str_is(pid[2], "0"));
    int64_t v;
    cr_assert(lc_pickle_get_int(pid[4], &v) && v == 4);
    const lc_pickle_val *const *shape = lc_pickle_items(a[2], LC_PICKLE_TUPLE, &k);
    cr_assert(k == 2 && lc_pickle_get_int(shape[0], &v) && v == 2);
    bool rg = true;
    cr_assert(lc_pickle_get_bool(a[4], &rg) && !rg);
    cr_assert(lc_pickle_dict_ordered(a[5]) && lc_pickle_dict_len(a[5]) == 0);
    /* kind mismatches are NULL/false, never a crash */
    cr_assert_null(lc_pickle_items(a[2], LC_PICKLE_LIST, &k));
    cr_assert(!lc_pickle_get_int(a[4], &v));
    cr_assert_null(lc_pickle_str(a[1], NULL));
    cr_assert_null(lc_pickle_args(NULL));
    cr_assert_eq(lc_pickle_kind_of(NULL), LC_PICKLE_KIND_COUNT);
    const uint8_t *r = memmem(b, sizeof b - 1, "Rq\x06", 3);
    cr_assert_eq(lc_pickle_offset(t), (uint64_t)(r - b), "the REDUCE that made it");
    lc_pickle_free(p);
}

Test(pickle, dict_keys_follow_python_equality) {
    /* {1: 'a', True: 'b', 1.0: 'c', 'k': 'd', 'k': 'e'} -> {1: 'c', 'k': 'e'} */
    lc_pickle *p;
    lc_error err;
    cr_assert_eq(load(B("(K\x01X\x01\0\0\0a\x88X\x01\0\0\0bG?\xf0\0\0\0\0\0\0X\x01\0\0\0c"
                        "X\x01\0\0\0kX\x01\0\0\0dX\x01\0\0\0kX\x01\0\0\0ed."), &p, &err), LC_OK,
                 "%s", err.msg);
    const lc_pickle_val *d = lc_pickle_root(p);
    cr_assert_eq(lc_pickle_dict_len(d), 2);
    int64_t v;
    cr_assert(lc_pickle_get_int(lc_pickle_dict_key(d, 0), &v) && v == 1);
    cr_assert(lc_pickle_str_is(lc_pickle_dict_value(d, 0), "c"));
    cr_assert(lc_pickle_str_is(lc_pickle_dict_get(d, "k"), "e"));
    lc_pickle_free(p);
}

Test(pickle, ints_every_form) {
    /* LONG1 with a redundant sign byte is an INT; 9 significant bytes a BIGINT; INT text
     * "01" is True; protocol-0 LONG beyond 64 bits; BININT is signed. */
    lc_pickle *p;
    lc_error err;
    cr_assert_eq(load(B("(\x8a\x09\xff\xff\xff\xff\xff\xff\xff\xff\xff\x8a\x09\0\0\0\0\0\0\0\0\x01"
                        "I01\nL-18446744073709551616L\nJ\xfe\xff\xff\xffM\xff\xff\x8a\0l."),
                      &p, &err), LC_OK, "%s", err.msg);
    size_t n, k;
    const lc_pickle_val *const *it = lc_pickle_items(lc_pickle_root(p), LC_PICKLE_LIST, &n);
    cr_assert_eq(n, 7);
    int64_t v;
    bool b;
    cr_assert(lc_pickle_get_int(it[0], &v) && v == -1);
    const uint8_t *big = lc_pickle_bigint(it[1], &k);
    cr_assert(big && k == 9 && big[8] == 1);
    cr_assert(lc_pickle_get_bool(it[2], &b) && b);
    big = lc_pickle_bigint(it[3], &k);
    cr_assert(big && k == 9 && big[7] == 0 && big[8] == 0xff, "k=%zu", k);
    cr_assert(lc_pickle_get_int(it[4], &v) && v == -2);
    cr_assert(lc_pickle_get_int(it[5], &v) && v == 65535);
    cr_assert(lc_pickle_get_int(it[6], &v) && v == 0);
    lc_pickle_free(p);
}

Test(pickle, protocol0_text) {
    lc_pickle *p;
    lc_error err;
    cr_assert_eq(load(B("(S'a\\'b\\x41\\101\\n'\n" "Vx\\u20ac\\\\u0041\\U0001F600\n"
                        "F-1.5\nl."), &p, &err), LC_OK, "%s", err.msg);
    size_t n;
    const lc_pickle_val *const *it = lc_pickle_items(lc_pickle_root(p), LC_PICKLE_LIST, &n);
    cr_assert_eq(n, 3);
    cr_assert(lc_pickle_str_is(it[0], "a'bAA\n"));
    /* "\\u0041": an even run of backslashes is no escape */
    cr_assert(lc_pickle_str_is(it[1], "x\xe2\x82\xac\\\\u0041\xf0\x9f\x98\x80"), "%s",
              lc_pickle_str(it[1], NULL));
    double f;
    cr_assert(lc_pickle_get_float(it[2], &f) && f == -1.5);
    lc_pickle_free(p);
}

Test(pickle, trailing_allowed_reports_end) {
    lc_pickle_opts o = { .allow_trailing = true };
    lc_pickle *p;
    lc_error err = {0};
    cr_assert_eq(lc_pickle_load(B("K\x07.K\x08."), &o, &p, &err), LC_OK);
    cr_assert_eq(lc_pickle_end(p), 3);
    lc_pickle_free(p);
}

Test(pickle, max_values_option) {
    lc_pickle_opts o = { .max_values = 2 };
    lc_pickle *p;
    lc_error err = {0};
    cr_assert_eq(lc_pickle_load(B("(K\x01K\x02l."), &o, &p, &err), LC_E_OVERFLOW);
    cr_assert_eq(err.offset, 5);
}

/* A compressed pickle may build LC_PICKLE_VALUES_PER_BYTE values per stored byte (+
 * a base): 4 million one-byte opcodes deflate to a few KB (issue 11, item 11). */
Test(pickle, stored_size_budgets_values) {
    const uint64_t n = LC_PICKLE_VALUES_BASE + 2 * LC_PICKLE_VALUES_PER_BYTE + 8;
    const size_t len = 3 + 3 * (size_t)n + 1;
    uint8_t *b = malloc(len);
    cr_assert_not_null(b);
    memcpy(b, "\x80\x02]", 3);                     /* PROTO 2, EMPTY_LIST */
    for (uint64_t i = 0; i < n; i++)
        memcpy(b + 3 + 3 * i, "K\x01" "a", 3);      /* BININT1 1, APPEND: one value each */
    b[len - 1] = '.';
    lc_pickle *p = NULL;
    lc_error err = {0};
    lc_pickle_opts o = { .stored_size = 2 };        /* budget: base + 32 values */
    cr_assert_eq(lc_pickle_load(b, len, &o, &p, &err), LC_E_OVERFLOW, "%s", err.msg);
    /* value 1 is the list; the one past the budget is BININT1 number base + 32 */
    cr_assert_eq(err.offset, 3 + 3 * (LC_PICKLE_VALUES_BASE + 2 * LC_PICKLE_VALUES_PER_BYTE - 1));
    cr_assert_not_null(strstr(err.msg, "16 per byte"), "%s", err.msg);
    cr_assert_null(p);
    o.stored_size = 0;                              /* stored as it is: no such budget */
    memset(&err, 0, sizeof err);
    cr_assert_eq(lc_pickle_load(b, len, &o, &p, &err), LC_OK, "%s", err.msg);
    lc_pickle_free(p);
    o.stored_size = 3;                              /* three bytes buy 16 more values */
    cr_assert_eq(lc_pickle_load(b, len, &o, &p, &err), LC_OK, "%s", err.msg);
    lc_pickle_free(p);
    free(b);
}

Test(pickle, cycle_loads) {
    lc_pickle *p;
    lc_error err;
    cr_assert_eq(load(B("]q\x00h\x00" "a."), &p, &err), LC_OK, "%s", err.msg);
    size_t n;
    const lc_pickle_val *const *it = lc_pickle_items(lc_pickle_root(p), LC_PICKLE_LIST, &n);
    cr_assert(n == 1 && it[0] == lc_pickle_root(p));
    lc_pickle_free(p);
}

Test(pickle, shared_tuples_stay_linear) {
    /* t = (t', t') 400 times: 2^400 leaves if expanded, 401 values here. */
    static uint8_t b[4096];
    size_t n = 0;
    b[n++] = 'N';
    for (int i = 0; i < 400; i++) {
        b[n++] = '2';
        b[n++] = 0x86;
    }
    b[n++] = '.';
    lc_pickle *p;
    lc_error err;
    cr_assert_eq(load(b, n, &p, &err), LC_OK, "%s", err.msg);
    cr_assert_eq(lc_pickle_count(p), 401);
    lc_pickle_free(p);
}

Test(pickle, nesting_through_mutation_is_bounded) {
    /* 600 empty lists memoised, then list i appended into list i-1: each APPEND sees
     * an empty item, so only the final check can see the depth. */
    static uint8_t b[1 << 14];
    size_t n = 0;
    b[n++] = 0x80, b[n++] = 2;
    for (int i = 0; i < 600; i++)
        b[n++] = ']', b[n++] = 'r', memcpy(b + n, &i, 4), n += 4, b[n++] = '0';
    for (int i = 1; i < 600; i++) {
        int j = i - 1;
        b[n++] = 'j', memcpy(b + n, &j, 4), n += 4;
        b[n++] = 'j', memcpy(b + n, &i, 4), n += 4;
        b[n++] = 'a', b[n++] = '0';
    }
    int z = 0;
    b[n++] = 'j', memcpy(b + n, &z, 4), n += 4;
    b[n++] = '.';
    lc_pickle *p;
    lc_error err;
    cr_assert_eq(load(b, n, &p, &err), LC_E_OVERFLOW, "%s", err.msg);
}

Test(pickle, allowlist) {
    cr_assert(lc_pickle_allowed("torch._utils", "_rebuild_tensor_v2"));
    cr_assert(lc_pickle_allowed("__builtin__", "set"));
    cr_assert(lc_pickle_allowed("collections", "OrderedDict"));
    cr_assert(!lc_pickle_allowed("collections", "OrderedDict.fromkeys"));
    cr_assert(!lc_pickle_allowed("builtins", "getattr"));
    cr_assert(!lc_pickle_allowed("torch", "load"));
    cr_assert(!lc_pickle_allowed(NULL, "x"));
}

/* ---- scanning ---- */

typedef struct refs { int n, forbidden; char names[8][64]; } refs;
static void on_ref(void *ctx, const lc_pickle_ref *r) {
    refs *s = ctx;
    if (s->n < 8)
        snprintf(s->names[s->n], sizeof s->names[0], "%s.%s@%llx", r->module, r->name,
                 (unsigned long long)r->offset);
    s->n++;
    s->forbidden += !r->allowed;
}

Test(pickle_scan, lists_every_global_not_only_the_first) {
    refs s = {0};
    lc_error err = {0};
    cr_assert_eq(lc_pickle_scan(B("cos\nsystem\n0cposix\nsystem\n0ctorch\nSize\n."), NULL,
                                on_ref, &s, &err), LC_E_FORBIDDEN);
    cr_assert_eq(err.offset, 0);
    cr_assert_eq(s.n, 3);
    cr_assert_eq(s.forbidden, 2);
    cr_assert_str_eq(s.names[1], "posix.system@c");
    cr_assert_str_eq(s.names[2], "torch.Size@1b");
}

Test(pickle_scan, stack_global_through_memo_and_dup) {
    refs s = {0};
    lc_error err = {0};
    cr_assert_eq(lc_pickle_scan(B("\x8c\x02os\x94\x8c\x06system2\x93" "0h\x00" "0."), NULL,
                                on_ref, &s, &err), LC_E_FORBIDDEN);
    /* the DUP'd name makes "system.system" here; the memo'd "os" is only checked */
    cr_assert_str_eq(s.names[0], "system.system@e");
}

Test(pickle_scan, unresolvable_stack_global_is_forbidden) {
    refs s = {0};
    lc_error err = {0};
    cr_assert_eq(lc_pickle_scan(B("K\x01\x8c\x01x\x93."), NULL, on_ref, &s, &err),
                 LC_E_FORBIDDEN);
    cr_assert_eq(err.offset, 5);
    cr_assert_str_eq(s.names[0], "?.STACK_GLOBAL@5");
}

Test(pickle_scan, structural_error_after_clean_globals) {
    refs s = {0};
    lc_error err = {0};
    cr_assert_eq(lc_pickle_scan(B("ctorch\nSize\n\xff"), NULL, on_ref, &s, &err),
                 LC_E_MALFORMED);
    cr_assert_eq(err.offset, 12);
    cr_assert_eq(s.n, 1);
}

Test(pickle_scan, every_pickle_in_sequence) {
    refs s = {0};
    lc_error err = {0};
    cr_assert_eq(lc_pickle_scan(B("N.cos\nsystem\n."), NULL, on_ref, &s, &err), LC_E_FORBIDDEN);
    cr_assert_eq(err.offset, 2);
}

/* ---- the bad corpus: code and offset of every file ---- */

Test(pickle, bad_corpus_codes_and_offsets) {
    const char *dir = getenv("LC_FIXTURES") ? getenv("LC_FIXTURES") : "fixtures";
    char path[512], line[512];
    snprintf(path, sizeof path, "%s/bad/pickle/EXPECT.tsv", dir);
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "%s", path);
    int files = 0;
    cr_assert_not_null(fgets(line, sizeof line, f)); /* header */
    while (fgets(line, sizeof line, f)) {
        char name[256], code[32], glob[128];
        unsigned long long off;
        int provable;
        cr_assert_eq(sscanf(line, "%255s\t%31s\t%llu\t%127s\t%d", name, code, &off, glob,
                            &provable), 5);
        snprintf(path, sizeof path, "%s/bad/pickle/%s", dir, name);
        lc_map *m;
        lc_error err = {0};
        cr_assert_eq(lc_map_open(path, &m, &err), LC_OK, "%s", path);
        lc_pickle *p = (lc_pickle *)1;
        lc_code rc = lc_pickle_load(m->data, m->size, NULL, &p, &err);
        cr_assert_str_eq(lc_code_name(rc), code, "%s: %s", name, err.msg);
        cr_assert_eq(err.offset, off, "%s: 0x%llx %s", name, (unsigned long long)err.offset,
                     err.msg);
        cr_assert_null(p);
        if (rc == LC_E_FORBIDDEN) {
            memset(&err, 0, sizeof err);
            cr_assert_eq(lc_pickle_scan(m->data, m->size, NULL, NULL, NULL, &err),
                         LC_E_FORBIDDEN, "%s", name);
            cr_assert_eq(err.offset, off, "scan %s", name);
        }
        lc_map_close(m);
        files++;
    }
    fclose(f);
    cr_assert_gt(files, 40);
}
