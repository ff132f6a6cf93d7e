/* Unit tests for formats/gguf_bare: widen into GGUF, write, read, narrow back, and the
 * refusals on both sides. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "formats/gguf.h"
#include "formats/gguf_bare.h"

static const uint8_t u8_data[3] = { 1, 2, 255 };
static const uint8_t bool_data[2] = { 0, 1 };
static const uint8_t e4m3_data[4] = { 0x7f, 0x38, 0x01, 0xfe };
static const uint8_t e5m2_data[2] = { 0x7c, 0x83 };
static const uint64_t u64_data[2] = { INT64_MAX, 7 };
static const uint32_t u32_data[1] = { 0xffffffffu };
static const float f32_data[1] = { 1.5f };

static lc_model *sample(bool big_u64) {
    lc_error err = { 0 };
    lc_model *m = lc_model_new();
    cr_assert_eq(lc_model_set_meta_str(m, "format", "np", &err), LC_OK);
    struct { const char *name; lc_dtype dt; uint64_t n; const void *data; } ts[] = {
        { "u8", LC_DT_U8, 3, u8_data }, { "bool", LC_DT_BOOL, 2, bool_data },
        { "e4m3", LC_DT_F8_E4M3, 4, e4m3_data }, { "e5m2", LC_DT_F8_E5M2, 2, e5m2_data },
        { "u64", LC_DT_U64, 2, u64_data }, { "u32", LC_DT_U32, 1, u32_data },
        { "f32", LC_DT_F32, 1, f32_data },
    };
    static uint64_t big[2] = { 1, (uint64_t)1 << 63 };
    for (size_t i = 0; i < sizeof ts / sizeof *ts; i++) {
        lc_tensor *t;
        cr_assert_eq(lc_model_add_tensor(m, ts[i].name, ts[i].dt, 1, &ts[i].n, &t, &err),
                     LC_OK);
        t->data = big_u64 && ts[i].dt == LC_DT_U64 ? (const uint8_t *)big : ts[i].data;
    }
    return m;
}

static char dir[] = "/tmp/lc-gguf-bare-XXXXXX";

Test(gguf_bare, round_trip_restores_dtypes_and_bytes) {
    cr_assert_not_null(mkdtemp(dir));
    char path[300];
    snprintf(path, sizeof path, "%s/b.gguf", dir);
    lc_error err = { 0 };
    lc_model *m = sample(false);
    cr_assert_eq(lc_gguf_bare_encode(m, &err), LC_OK, "%s", err.msg);
    cr_assert_eq(lc_model_find_tensor(m, "u8")->dtype, LC_DT_I16);
    cr_assert_eq(lc_model_find_tensor(m, "bool")->dtype, LC_DT_I8);
    cr_assert_eq(lc_model_find_tensor(m, "e4m3")->dtype, LC_DT_F16);
    cr_assert_eq(lc_model_find_tensor(m, "u32")->dtype, LC_DT_I64);
    cr_assert_eq(lc_model_find_tensor(m, "f32")->dtype, LC_DT_F32);
    const lc_value *v = lc_model_find_meta(m, LC_GGUF_BARE_DTYPE_PREFIX "u8");
    cr_assert(v && v->type == LC_VT_STRING);
    cr_assert_str_eq(v->str.ptr, "U8");
    cr_assert_null(lc_model_find_meta(m, LC_GGUF_BARE_DTYPE_PREFIX "f32"));
    cr_assert_eq(lc_gguf_write(m, path, NULL, NULL, &err), LC_OK, "%s", err.msg);
    lc_model_free(m);

    lc_model *g, *back;
    cr_assert_eq(lc_gguf_load(path, &g, &err), LC_OK, "%s", err.msg);
    const lc_tensor *wide = lc_model_find_tensor(g, "u8");
    cr_assert_eq(((const int16_t *)(const void *)wide->data)[2], 255, "widened value");
    cr_assert_eq(lc_gguf_bare_decode(g, &back, &err), LC_OK, "%s", err.msg);
    cr_assert_eq(lc_model_meta_count(back), 1, "only the original metadata is left");
    lc_model *orig = sample(false);
    for (size_t i = 0; i < lc_model_tensor_count(orig); i++) {
        const lc_tensor *a = lc_model_tensor(orig, i);
        const lc_tensor *b = lc_model_find_tensor(back, a->name);
        cr_assert_not_null(b);
        cr_assert_eq(b->dtype, a->dtype, "%s", a->name);
        cr_assert_eq(b->nbytes, a->nbytes);
        uint8_t got[16];
        cr_assert_eq(lc_tensor_read(b, 0, got, (size_t)b->nbytes, &err), LC_OK, "%s", err.msg);
        cr_assert_eq(memcmp(got, a->data, (size_t)a->nbytes), 0, "%s bytes", a->name);
    }
    lc_model_free(orig);
    lc_model_free(back);
    unlink(path);
    rmdir(dir);
}

Test(gguf_bare, u64_above_int64_fails_on_write) {
    char d[] = "/tmp/lc-gguf-bare-XXXXXX", path[300];
    cr_assert_not_null(mkdtemp(d));
    snprintf(path, sizeof path, "%s/b.gguf", d);
    lc_error err = { 0 };
    lc_model *m = sample(true);
    cr_assert_eq(lc_gguf_bare_encode(m, &err), LC_OK);
    cr_assert_eq(lc_gguf_write(m, path, NULL, NULL, &err), LC_E_OVERFLOW, "%s", err.msg);
    cr_assert_str_eq(err.where, "u64");
    cr_assert_eq(access(path, F_OK), -1, "no file after a failure");
    lc_model_free(m);
    rmdir(d);
}

Test(gguf_bare, refusals) {
    lc_error err = { 0 };
    lc_model *m = lc_model_new();
    cr_assert_eq(lc_model_set_meta_str(m, LC_GGUF_BARE_DTYPE_PREFIX "x", "U8", &err), LC_OK);
    cr_assert_eq(lc_gguf_bare_encode(m, &err), LC_E_UNSUPPORTED);
    cr_assert_str_eq(err.where, LC_GGUF_BARE_DTYPE_PREFIX "x");
    lc_model *out = (lc_model *)1;
    memset(&err, 0, sizeof err);
    cr_assert_eq(lc_gguf_bare_decode(m, &out, &err), LC_E_MALFORMED, "no tensor x");
    cr_assert_null(out);

    m = lc_model_new();
    lc_tensor *t;
    uint64_t n = 1;
    static const int16_t one = 1;
    cr_assert_eq(lc_model_add_tensor(m, "x", LC_DT_I16, 1, &n, &t, &err), LC_OK);
    t->data = (const uint8_t *)&one;
    cr_assert_eq(lc_model_set_meta_str(m, LC_GGUF_BARE_DTYPE_PREFIX "x", "F32", &err), LC_OK);
    memset(&err, 0, sizeof err);
    cr_assert_eq(lc_gguf_bare_decode(m, &out, &err), LC_E_MALFORMED, "I16 does not carry F32");
    cr_assert_str_eq(err.where, LC_GGUF_BARE_DTYPE_PREFIX "x");
}

Test(gguf_bare, carriers) {
    cr_assert_eq(lc_gguf_bare_carrier(LC_DT_U16), LC_DT_I32);
    cr_assert_eq(lc_gguf_bare_carrier(LC_DT_F8_E5M2), LC_DT_F16);
    cr_assert_eq(lc_gguf_bare_carrier(LC_DT_BF16), LC_DT_BF16);
    cr_assert_eq(lc_gguf_bare_carrier(LC_DT_Q4_K), LC_DT_Q4_K);
    cr_assert_eq(lc_gguf_bare_carrier(LC_DT_INVALID), LC_DT_INVALID);
}

/* A container claims no architecture: a GGUF's keys carried as strings (a vocab-only
 * GGUF through gguf2safetensors) would make llama.cpp read them as a model's typed
 * keys. The key is renamed in place (order kept) and named back on the way out. */
Test(gguf_bare, architecture_is_renamed_both_ways) {
    lc_error err = { 0 };
    lc_model *m = lc_model_new();
    cr_assert_eq(lc_model_set_meta_str(m, "general.type", "model", &err), LC_OK);
    cr_assert_eq(lc_model_set_meta_str(m, "general.architecture", "llama", &err), LC_OK);
    cr_assert_eq(lc_model_set_meta_str(m, "llama.block_count", "4", &err), LC_OK);
    cr_assert_eq(lc_gguf_bare_encode(m, &err), LC_OK, "%s", err.msg);
    cr_assert_null(lc_model_find_meta(m, "general.architecture"));
    cr_assert_str_eq(lc_model_meta(m, 1)->key, LC_GGUF_BARE_ARCH_KEY);
    cr_assert_str_eq(lc_model_find_meta(m, LC_GGUF_BARE_ARCH_KEY)->str.ptr, "llama");
    cr_assert_str_eq(lc_model_find_meta(m, "llama.block_count")->str.ptr, "4");
    lc_model *back = NULL;
    cr_assert_eq(lc_gguf_bare_decode(m, &back, &err), LC_OK, "%s", err.msg);
    cr_assert_str_eq(lc_model_meta(back, 1)->key, "general.architecture");
    cr_assert_str_eq(lc_model_find_meta(back, "general.architecture")->str.ptr, "llama");
    cr_assert_null(lc_model_find_meta(back, LC_GGUF_BARE_ARCH_KEY));
    lc_model_free(back);

    m = lc_model_new();                           /* the name is reserved on the way in */
    cr_assert_eq(lc_model_set_meta_str(m, LC_GGUF_BARE_ARCH_KEY, "x", &err), LC_OK);
    cr_assert_eq(lc_gguf_bare_encode(m, &err), LC_E_UNSUPPORTED);
    cr_assert_str_eq(err.where, LC_GGUF_BARE_ARCH_KEY);
    lc_model_free(m);
}
