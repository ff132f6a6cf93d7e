/* Split output (formats/gguf_split.h): the plan as gguf-split cuts, the parts' keys and
 * dimensions, --part and --skip-existing, the merge's keys, and the options' parsing.
 * Byte identity with llama.cpp's own gguf-split is tests/llama/test_gguf_split.py's. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "formats/gguf.h"
#include "formats/gguf_split.h"

/* A model of n I8 tensors t0..; tensor i holds sizes[i] bytes (shape [1, sizes[i]], so
 * ggml's dimensions drop the 1), each byte its index plus the tensor's number. */
static lc_code fill(void *ctx, const lc_tensor *t, uint64_t off, void *dst, size_t len,
                    lc_error *err) {
    (void)ctx, (void)err;
    for (size_t i = 0; i < len; i++)
        ((uint8_t *)dst)[i] = (uint8_t)(off + i + (uint8_t)t->name[1]);
    return LC_OK;
}
static const lc_source_ops fill_ops = { fill, NULL, NULL };

static lc_model *model(const uint64_t *sizes, size_t n) {
    lc_error err = { 0 };
    lc_model *m = lc_model_new();
    cr_assert_eq(lc_model_set_meta_str(m, "general.architecture", "llama", &err), LC_OK);
    lc_value v = lc_value_uint(LC_VT_U16, 7);       /* an old split key: dropped */
    cr_assert_eq(lc_model_set_meta(m, LC_GGUF_SPLIT_COUNT, &v, &err), LC_OK);
    cr_assert_eq(lc_model_set_meta_str(m, "general.name", "m", &err), LC_OK);
    for (size_t i = 0; i < n; i++) {
        char name[32];
        snprintf(name, sizeof name, "t%zu", i);
        lc_tensor *t;
        cr_assert_eq(lc_model_add_tensor(m, name, LC_DT_I8, 2, (uint64_t[]){ 1, sizes[i] },
                                         &t, &err), LC_OK);
        t->ops = &fill_ops;
    }
    return m;
}

static void plan(const uint64_t *sizes, size_t n, lc_gguf_split_opts o, const uint32_t *want,
                 uint32_t want_count) {
    lc_model *m = model(sizes, n);
    uint32_t part[16], count = 0;
    lc_error err = { 0 };
    cr_assert_eq(lc_gguf_split_plan(m, &o, part, &count, &err), LC_OK, "%s", err.msg);
    cr_assert_eq(count, want_count);
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(part[i], want[i], "tensor %zu: part %u, want %u", i, part[i], want[i]);
    lc_model_free(m);
}

Test(gguf_split, plan_by_count) {
    const uint64_t s[7] = { 1, 1, 1, 1, 1, 1, 1 };
    plan(s, 7, (lc_gguf_split_opts){ .max_tensors = 3 }, (uint32_t[]){ 0, 0, 0, 1, 1, 1, 2 }, 3);
    plan(s, 6, (lc_gguf_split_opts){ .max_tensors = 3 }, (uint32_t[]){ 0, 0, 0, 1, 1, 1 }, 2);
    plan(s, 7, (lc_gguf_split_opts){ .max_tensors = 3, .no_tensor_first = true },
         (uint32_t[]){ 1, 1, 1, 2, 2, 2, 3 }, 4);
    plan(s, 7, (lc_gguf_split_opts){ 0 }, (uint32_t[]){ 0, 0, 0, 0, 0, 0, 0 }, 1);  /* 128 */
    plan(s, 0, (lc_gguf_split_opts){ .no_tensor_first = true }, NULL, 2);
}

Test(gguf_split, plan_by_size_counts_bytes_padded_to_32) {
    /* 33 bytes count 64: two fit in 128, a third does not. */
    const uint64_t s[5] = { 33, 33, 33, 1, 96 };
    plan(s, 5, (lc_gguf_split_opts){ .max_bytes = 128 }, (uint32_t[]){ 0, 0, 1, 1, 2 }, 3);
    plan(s, 5, (lc_gguf_split_opts){ .max_bytes = 127 }, (uint32_t[]){ 0, 1, 2, 2, 3 }, 4);
    plan(s, 5, (lc_gguf_split_opts){ .max_bytes = 128, .no_tensor_first = true },
         (uint32_t[]){ 1, 1, 2, 2, 3 }, 4);
}

Test(gguf_split, plan_a_tensor_larger_than_a_part) {
    /* It gets a part of its own; as the very first tensor it would leave the part before
     * it empty, which gguf-split refuses ("one of splits have 0 tensors"). */
    const uint64_t s[3] = { 10, 200, 10 };
    plan(s, 3, (lc_gguf_split_opts){ .max_bytes = 100 }, (uint32_t[]){ 0, 1, 2 }, 3);
    lc_model *m = model(s + 1, 2);
    uint32_t part[3], count;
    lc_error err = { 0 };
    lc_gguf_split_opts o = { .max_bytes = 100 };
    cr_assert_eq(lc_gguf_split_plan(m, &o, part, &count, &err), LC_E_ARG);
    cr_assert_str_eq(err.where, "t0");
    o.no_tensor_first = true;
    err = (lc_error){ 0 };
    cr_assert_eq(lc_gguf_split_plan(m, &o, part, &count, &err), LC_E_ARG);
    lc_model_free(m);
}

/* Part k's keys, in order, as gguf-split writes them. */
Test(gguf_split, parts_keys_order_and_dimensions) {
    const uint64_t s[5] = { 40, 8, 8, 8, 8 };
    lc_model *m = model(s, 5);
    lc_gguf_split_set *set;
    lc_error err = { 0 };
    const lc_gguf_split_opts o = { .split = true, .max_tensors = 2 };
    cr_assert_eq(lc_gguf_split_set_new(m, "d/x", &o, &set, &err), LC_OK, "%s", err.msg);
    cr_assert_eq(set->count, 3);
    cr_assert_str_eq(set->paths[2], "d/x-00003-of-00003.gguf");
    static const char *const first[] = { "general.architecture", "general.name", "split.no",
                                         "split.tensors.count", "split.count" };
    cr_assert_eq(lc_model_meta_count(set->models[0]), 5);
    for (size_t i = 0; i < 5; i++)
        cr_assert_str_eq(lc_model_meta(set->models[0], i)->key, first[i]);
    for (uint32_t k = 0; k < 3; k++) {
        const lc_model *p = set->models[k];
        const size_t nk = lc_model_meta_count(p);
        cr_assert_eq(lc_model_meta(p, nk - 3)->val.u, k);                     /* split.no */
        cr_assert_eq(lc_model_meta(p, nk - 2)->val.i, 5);           /* split.tensors.count */
        cr_assert_eq(lc_model_meta(p, nk - 1)->val.u, 3);                  /* split.count */
        cr_assert_eq(lc_model_meta(p, nk - 1)->val.type, LC_VT_U16);
    }
    cr_assert_eq(lc_model_meta_count(set->models[1]), 3);
    const lc_tensor *t = lc_model_tensor(set->models[0], 0);
    cr_assert_eq(t->ndim, 1, "ggml's dimensions: [1, 40] is one");
    cr_assert_eq(t->shape[0], 40);
    uint8_t b[40];
    cr_assert_eq(lc_tensor_read(t, 0, b, 40, &err), LC_OK);
    cr_assert_eq(b[39], (uint8_t)(39 + '0'));
    lc_gguf_split_set_free(set);

    const lc_gguf_split_opts bad = { .split = true, .max_tensors = 2, .part = 1, .parts = 4 };
    cr_assert_eq(lc_gguf_split_set_new(m, "d/x", &bad, &set, &err), LC_E_ARG);
    cr_assert_null(set);
    cr_assert(strstr(err.msg, "gives 3 parts"), "%s", err.msg);
    lc_model_free(m);
}

Test(gguf_split, merged_keeps_the_keys_and_moves_split_count) {
    const uint64_t s[2] = { 3, 4 };
    lc_model *m = model(s, 2), *r;
    lc_error err = { 0 };
    cr_assert_eq(lc_gguf_split_merged(m, &r, &err), LC_OK, "%s", err.msg);
    cr_assert_eq(lc_model_meta_count(r), 3);
    cr_assert_str_eq(lc_model_meta(r, 1)->key, "general.name");
    cr_assert_str_eq(lc_model_meta(r, 2)->key, "split.count");
    cr_assert_eq(lc_model_meta(r, 2)->val.u, 0);
    cr_assert_eq(lc_model_tensor(r, 1)->ndim, 1);
    lc_model_free(r);
    lc_model_free(m);
    lc_model *plain = lc_model_new();
    cr_assert_eq(lc_gguf_split_merged(plain, &r, &err), LC_E_ARG);
    cr_assert_null(r);
    lc_model_free(plain);
}

static void parse_fails(lc_gguf_split_args a, bool alone) {
    lc_gguf_split_opts o;
    lc_error err = { 0 };
    cr_assert_eq(lc_gguf_split_parse(&a, alone, &o, &err), LC_E_ARG);
}

Test(gguf_split, parse_options) {
    lc_gguf_split_opts o;
    lc_error err = { 0 };
    lc_gguf_split_args a = { .max_size = "500M", .part = "2/7", .skip_existing = true };
    cr_assert_eq(lc_gguf_split_parse(&a, false, &o, &err), LC_OK, "%s", err.msg);
    cr_assert(o.split && o.max_bytes == 500000000 && o.part == 2 && o.parts == 7 &&
              o.skip_existing);
    a = (lc_gguf_split_args){ .max_size = "4G" };
    cr_assert_eq(lc_gguf_split_parse(&a, false, &o, &err), LC_OK);
    cr_assert_eq(o.max_bytes, 4000000000ull);
    a = (lc_gguf_split_args){ .part = "1/1" };
    cr_assert_eq(lc_gguf_split_parse(&a, true, &o, &err), LC_OK);
    cr_assert(!o.split && o.part == 1);
    parse_fails((lc_gguf_split_args){ .part = "1/2" }, false);      /* no plan to be part of */
    parse_fails((lc_gguf_split_args){ .max_tensors = "4", .part = "0/2" }, false);
    parse_fails((lc_gguf_split_args){ .max_tensors = "4", .part = "3/2" }, false);
    parse_fails((lc_gguf_split_args){ .max_tensors = "4", .part = "1/65536" }, false);
    parse_fails((lc_gguf_split_args){ .max_tensors = "4", .part = "1/" }, false);
    parse_fails((lc_gguf_split_args){ .max_tensors = "4", .part = "-1/2" }, false);
    parse_fails((lc_gguf_split_args){ .max_tensors = "0" }, false);
    parse_fails((lc_gguf_split_args){ .max_tensors = "x" }, false);
    parse_fails((lc_gguf_split_args){ .max_size = "1.5G" }, false);
    parse_fails((lc_gguf_split_args){ .max_size = "100" }, false);
    parse_fails((lc_gguf_split_args){ .max_size = "0M" }, false);
    parse_fails((lc_gguf_split_args){ .max_size = "M" }, false);
    parse_fails((lc_gguf_split_args){ .max_size = "99999999999999999999G" }, false);
    parse_fails((lc_gguf_split_args){ .max_size = "1G", .max_tensors = "4" }, false);
}

Test(gguf_split, prefix_of_out) {
    char b[64];
    lc_error err = { 0 };
    cr_assert_eq(lc_gguf_split_prefix_of("d/m.gguf", b, sizeof b, &err), LC_OK);
    cr_assert_str_eq(b, "d/m");
    cr_assert_eq(lc_gguf_split_prefix_of("x.gguf.bin", b, sizeof b, &err), LC_OK);
    cr_assert_str_eq(b, "x.gguf.bin");
    cr_assert_eq(lc_gguf_split_prefix_of(".gguf", b, sizeof b, &err), LC_OK);
    cr_assert_str_eq(b, ".gguf");
    cr_assert_eq(lc_gguf_split_prefix_of("d/.gguf.gguf", b, sizeof b, &err), LC_OK);
    cr_assert_eq(lc_gguf_split_prefix_of("d/", b, sizeof b, &err), LC_E_ARG);
}

/* ---- writing: --part and --skip-existing ---- */

static char dir[] = "/tmp/lc-split-XXXXXX";

static const char *path_in(const char *name) {
    static char p[320];
    static int made;
    if (!made++)
        cr_assert_not_null(mkdtemp(dir));
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return p;
}

static long size_of(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 ? (long)st.st_size : -1;
}

Test(gguf_split, part_alone_equals_that_part_of_the_set) {
    const uint64_t s[6] = { 100, 7, 300, 5, 64, 1 };
    lc_model *m = model(s, 6);
    lc_error err = { 0 };
    char whole[320], one[320];
    lc_gguf_split_opts o = { .split = true, .max_bytes = 0, .max_tensors = 2 };
    snprintf(whole, sizeof whole, "%s", path_in("whole.gguf"));
    cr_assert_eq(lc_gguf_split_write(m, whole, &o, NULL, NULL, NULL, &err), LC_OK, "%s", err.msg);
    o.part = 2, o.parts = 3;
    snprintf(one, sizeof one, "%s", path_in("one.gguf"));
    cr_assert_eq(lc_gguf_split_write(m, one, &o, NULL, NULL, NULL, &err), LC_OK, "%s", err.msg);
    cr_assert_eq(size_of(path_in("one-00001-of-00003.gguf")), -1, "part 2 alone");
    cr_assert_eq(size_of(path_in("one-00003-of-00003.gguf")), -1, "part 2 alone");
    char a[320], b[320], cmd[700];
    snprintf(a, sizeof a, "%s", path_in("whole-00002-of-00003.gguf"));
    snprintf(b, sizeof b, "%s", path_in("one-00002-of-00003.gguf"));
    snprintf(cmd, sizeof cmd, "cmp -s %s %s", a, b);
    cr_assert_eq(system(cmd), 0, "part 2 written alone equals part 2 of the set");

    /* --skip-existing keeps it (its mtime stays), refuses it cut short or another run's. */
    struct stat before, after;
    cr_assert_eq(stat(b, &before), 0);
    o.skip_existing = true;
    uint32_t kept = 0;
    sleep(1);
    cr_assert_eq(lc_gguf_split_write(m, one, &o, NULL, NULL, &kept, &err), LC_OK, "%s", err.msg);
    cr_assert_eq(kept, 1);
    cr_assert_eq(stat(b, &after), 0);
    cr_assert_eq(before.st_mtime, after.st_mtime, "kept, not written again");
    cr_assert_eq(truncate(b, size_of(b) - 1), 0);
    err = (lc_error){ 0 };
    cr_assert_eq(lc_gguf_split_write(m, one, &o, NULL, NULL, &kept, &err), LC_E_TRUNCATED);
    cr_assert_str_eq(err.path, b);
    cr_assert_eq(truncate(b, 10), 0);                       /* the header cut too */
    err = (lc_error){ 0 };
    cr_assert_eq(lc_gguf_split_write(m, one, &o, NULL, NULL, &kept, &err), LC_E_TRUNCATED);
    snprintf(cmd, sizeof cmd, "cp %s %s", path_in("whole-00001-of-00003.gguf"), b);
    cr_assert_eq(system(cmd), 0);
    err = (lc_error){ 0 };
    cr_assert_eq(lc_gguf_split_write(m, one, &o, NULL, NULL, &kept, &err), LC_E_MISMATCH);
    cr_assert_str_eq(err.where, "split.no", "another split's part: its split.no");
    cr_assert_eq(size_of(b), size_of(path_in("whole-00001-of-00003.gguf")), "left as it was");

    /* Another run's part 2 of 3 with the same split keys: other bytes in the header. */
    lc_model *other = model((uint64_t[]){ 100, 7, 301, 5, 64, 1 }, 6);
    o.skip_existing = false;
    err = (lc_error){ 0 };
    cr_assert_eq(lc_gguf_split_write(other, one, &o, NULL, NULL, NULL, &err), LC_OK, "%s",
                 err.msg);
    o.skip_existing = true;
    err = (lc_error){ 0 };
    cr_assert_eq(lc_gguf_split_write(m, one, &o, NULL, NULL, &kept, &err), LC_E_MISMATCH);
    cr_assert(strstr(err.msg, "another run's part"), "%s", err.msg);
    lc_model_free(other);

    /* Without a part: the missing ones are written, the one there kept. */
    o.part = o.parts = 0;
    cr_assert_eq(unlink(b), 0);
    cr_assert_eq(lc_gguf_split_write(m, whole, &o, NULL, NULL, &kept, &err), LC_OK);
    cr_assert_eq(kept, 3);
    cr_assert_eq(unlink(a), 0);
    cr_assert_eq(lc_gguf_split_write(m, whole, &o, NULL, NULL, &kept, &err), LC_OK);
    cr_assert_eq(kept, 2);
    cr_assert_gt(size_of(a), 0);
    lc_model_free(m);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
}
