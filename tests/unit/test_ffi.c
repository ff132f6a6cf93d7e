/* Unit tests for jobs/ffi.h, the flat interface the Python package calls, and the
 * progress callback it reports through. Fixtures from $LC_FIXTURES (default "fixtures"). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jobs/ffi.h"
#include "libconvert/progress.h"

static const char *fx(const char *rel) {
    static char buf[512];
    const char *root = getenv("LC_FIXTURES") ? getenv("LC_FIXTURES") : "fixtures";
    snprintf(buf, sizeof buf, "%s/%s", root, rel);
    return buf;
}

Test(ffi, abi_is_the_header_s) {
    cr_assert_eq(lc_ffi_abi(), LC_FFI_ABI);
}

/* The metadata of a GGUF, encoded and read back by the GGUF reader, encodes to the same
 * bytes: every value type (values.gguf holds each, nested arrays too) survives. */
Test(ffi, meta_encode_round_trips_through_the_reader) {
    lc_model *m = NULL, *back = NULL;
    lc_error err = { 0 };
    const char *fmt;
    uint8_t *a = NULL, *b = NULL;
    size_t la, lb;
    uint64_t na, nb;
    cr_assert_eq(lc_ffi_open(fx("gguf/values.gguf"), NULL, NULL, &m, &fmt, NULL, &err), LC_OK,
                 "%s", err.msg);
    cr_assert_str_eq(fmt, "gguf");
    cr_assert_eq(lc_ffi_meta_encode(m, &a, &la, &na, &err), LC_OK);
    cr_assert_gt(na, 10);
    cr_assert_eq(lc_ffi_model_from_meta(a, la, na, &back, &err), LC_OK, "%s", err.msg);
    cr_assert_eq(lc_ffi_meta_encode(back, &b, &lb, &nb, &err), LC_OK);
    cr_assert_eq(nb, na);
    cr_assert_eq(lb, la);
    cr_assert(memcmp(a, b, la) == 0);
    lc_ffi_free(a);
    lc_ffi_free(b);
    lc_model_free(m);
    lc_model_free(back);
}

Test(ffi, model_from_meta_offsets_are_into_the_entries) {
    /* one entry: key length 1, key "a", type 99 (none such) */
    const uint8_t kv[] = { 1, 0, 0, 0, 0, 0, 0, 0, 'a', 99, 0, 0, 0 };
    lc_model *m = (lc_model *)1;
    lc_error err = { 0 };
    cr_assert_eq(lc_ffi_model_from_meta(kv, sizeof kv, 1, &m, &err), LC_E_MALFORMED);
    cr_assert_null(m);
    cr_assert_eq(err.offset, 9);       /* the type field, counted from the entries */
}

Test(ffi, add_tensor_checks_the_byte_count) {
    lc_model *m = lc_model_new();
    lc_error err = { 0 };
    static const float x[6];
    const uint64_t shape[2] = { 2, 3 };
    cr_assert_eq(lc_ffi_add_tensor(m, "x", LC_DT_F32, 2, shape, x, sizeof x, &err), LC_OK);
    cr_assert_eq(lc_ffi_add_tensor(m, "y", LC_DT_F32, 2, shape, x, 20, &err), LC_E_ARG);
    cr_assert_str_eq(err.where, "y");
    err = (lc_error){ 0 };
    cr_assert_eq(lc_ffi_add_tensor(m, "z", 0, 2, shape, x, 24, &err), LC_E_ARG);
    lc_model_free(m);
}

Test(ffi, names_and_table) {
    lc_model *m = NULL;
    lc_error err = { 0 };
    cr_assert_eq(lc_ffi_open(fx("safetensors/tiny_llama.safetensors"), NULL, NULL, &m, NULL,
                             NULL, &err), LC_OK);
    size_t need = 0, n = 0;
    lc_ffi_names(m, NULL, 0, &need);
    char *buf = malloc(need);
    lc_ffi_names(m, buf, need, &need);
    lc_ffi_tensor t[64];
    lc_ffi_tensors(m, t, 64, &n);
    cr_assert_gt(n, 1);
    const char *p = buf;
    for (size_t i = 0; i < n; i++, p += strlen(p) + 1) {
        cr_assert_str_eq(p, t[i].name);
        cr_assert_not_null(t[i].data);                  /* a view of the map */
        cr_assert_neq(t[i].file_offset, LC_NO_OFFSET);
    }
    cr_assert_eq((size_t)(p - buf), need);
    free(buf);
    lc_model_free(m);
}

Test(ffi, open_with_a_format_reads_as_that_tool) {
    lc_model *m = (lc_model *)1;
    lc_error err = { 0 };
    /* a GGUF read as safetensors fails as safetensors-rewrite would; an unknown format */
    cr_assert_neq(lc_ffi_open(fx("gguf/tensors.gguf"), "safetensors", NULL, &m, NULL, NULL,
                              &err), LC_OK);
    cr_assert_null(m);
    err = (lc_error){ 0 };
    cr_assert_eq(lc_ffi_open(fx("gguf/tensors.gguf"), "onnx", NULL, &m, NULL, NULL, &err),
                 LC_E_ARG);
    err = (lc_error){ 0 };
    const char *fmt;
    cr_assert_eq(lc_ffi_open(fx("gguf/tensors.gguf"), "gguf", NULL, &m, &fmt, NULL, &err),
                 LC_OK);
    cr_assert_str_eq(fmt, "gguf");
    lc_model_free(m);
}

typedef struct seen {
    int      calls, begins;
    uint64_t last_done, last_total;
    char     label[64];
} seen;

static void on_progress(void *ctx, const char *label, uint64_t done, uint64_t total) {
    seen *s = ctx;
    s->calls++;
    if (done == 0)
        s->begins++;
    s->last_done = done;
    s->last_total = total;
    snprintf(s->label, sizeof s->label, "%s", label);
}

Test(progress, callback_sees_begin_and_end) {
    seen s = { 0 };
    lc_progress *p = lc_progress_new_fn(on_progress, &s);
    lc_progress_begin(p, "writing x", 100);
    lc_progress_add(p, 40);
    lc_progress_add(p, 60);
    lc_progress_end(p);
    lc_progress_end(p);                    /* a second end reports nothing */
    cr_assert_eq(s.begins, 1);
    cr_assert_geq(s.calls, 2);
    cr_assert_eq(s.last_done, 100);
    cr_assert_eq(s.last_total, 100);
    cr_assert_str_eq(s.label, "writing x");
    int before = s.calls;
    lc_progress_free(p);                   /* no open phase: no call */
    cr_assert_eq(s.calls, before);
}
