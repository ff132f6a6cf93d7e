/* Unit tests for formats/gguf: one literal-bytes case per code the reader returns
 * (code and offset), the IR it builds from gguf-py fixtures, the writer's layout,
 * chunked streaming, refusals, and out-of-memory paths. */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "formats/gguf.h"
#include "formats/gguf_split.h"
#include "libconvert/alloc.h"
#include "libconvert/bytes.h"
#include "libconvert/map.h"

/* ---- a tiny little-endian builder for hand-made files ---- */

typedef struct buf {
    uint8_t b[4096];
    size_t n;
} buf;

static size_t put(buf *g, const void *p, size_t n) {
    size_t at = g->n;
    memcpy(g->b + g->n, p, n);
    g->n += n;
    return at;
}
static size_t u32(buf *g, uint32_t v) { uint8_t b[4]; lc_store_le32(b, v); return put(g, b, 4); }
static size_t u64(buf *g, uint64_t v) { uint8_t b[8]; lc_store_le64(b, v); return put(g, b, 8); }
static size_t str(buf *g, const char *s) {
    size_t at = u64(g, strlen(s));
    put(g, s, strlen(s));
    return at;
}
static void header(buf *g, uint32_t version, uint64_t nt, uint64_t nkv) {
    g->n = 0;
    put(g, "GGUF", 4);
    u32(g, version);
    u64(g, nt);
    u64(g, nkv);
}

static lc_code load(const buf *g, lc_error *err) {
    lc_model *m = (lc_model *)1;
    memset(err, 0, sizeof *err);
    lc_code rc = lc_gguf_load_mem(g->b, g->n, &m, err);
    if (rc != LC_OK)
        cr_assert_null(m, "out-param must be NULL on failure");
    lc_model_free(m);
    return rc;
}

#define EXPECT(g, want_, off)                                                              \
    do {                                                                                  \
        lc_error e_;                                                                      \
        cr_assert_eq(load(g, &e_), want_, "code %s (%s)", lc_code_name(e_.code), e_.msg); \
        cr_assert_eq(e_.offset, (uint64_t)(off), "offset %#llx (%s)",                    \
                     (unsigned long long)e_.offset, e_.msg);                              \
    } while (0)

/* ---- one case per code ---- */

Test(gguf, truncated_magic_literal) {
    static const uint8_t bytes[] = { 'G', 'G', 'U' };
    lc_model *m;
    lc_error err = { 0 };
    cr_assert_eq(lc_gguf_load_mem(bytes, sizeof bytes, &m, &err), LC_E_TRUNCATED);
    cr_assert_eq(err.offset, 0);
    cr_assert_null(m);
}

Test(gguf, bad_magic_literal) {
    static const uint8_t bytes[] = { 'G', 'G', 'M', 'L', 3, 0, 0, 0 };
    lc_model *m;
    lc_error err = { 0 };
    cr_assert_eq(lc_gguf_load_mem(bytes, sizeof bytes, &m, &err), LC_E_MALFORMED);
    cr_assert_eq(err.offset, 0);
}

Test(gguf, versions_literal) {
    static const uint8_t v1[] = { 'G', 'G', 'U', 'F', 1, 0, 0, 0 };
    static const uint8_t v4[] = { 'G', 'G', 'U', 'F', 4, 0, 0, 0 };
    static const uint8_t be[] = { 'G', 'G', 'U', 'F', 0, 0, 0, 3 };
    const uint8_t *cases[] = { v1, v4, be };
    for (int i = 0; i < 3; i++) {
        lc_model *m;
        lc_error err = { 0 };
        cr_assert_eq(lc_gguf_load_mem(cases[i], 8, &m, &err), LC_E_UNSUPPORTED, "case %d", i);
        cr_assert_eq(err.offset, 4);
    }
}

Test(gguf, huge_counts_fail_before_allocating) {
    buf g;
    header(&g, 3, 0, (uint64_t)1 << 60);  /* 2^60 entries in a 100-byte file */
    while (g.n < 100)
        g.b[g.n++] = 0;
    lc_model *m;
    lc_error err = { 0 };
    /* lc_model_new is the first allocation; any later one fails: it must not happen. */
    lc_alloc_fail_after(2);
    lc_code rc = lc_gguf_load_mem(g.b, g.n, &m, &err);
    lc_alloc_fail_after(0);
    cr_assert_eq(rc, LC_E_TRUNCATED, "%s", err.msg);
    cr_assert_eq(err.offset, 16);
    header(&g, 3, (uint64_t)1 << 63, 0);
    EXPECT(&g, LC_E_OVERFLOW, 8);
    header(&g, 3, 0, UINT64_MAX);
    EXPECT(&g, LC_E_OVERFLOW, 16);
}

Test(gguf, metadata_errors) {
    buf g;
    size_t at;
    header(&g, 3, 0, 1);
    at = u64(&g, UINT64_MAX);                  /* key length */
    u64(&g, 0);                                /* enough bytes for the count check */
    EXPECT(&g, LC_E_TRUNCATED, at);

    header(&g, 3, 0, 1);
    str(&g, "k");
    at = u32(&g, 13);                          /* value type */
    u32(&g, 0);
    EXPECT(&g, LC_E_MALFORMED, at);

    header(&g, 3, 0, 1);
    str(&g, "k");
    u32(&g, LC_VT_ARRAY);
    u32(&g, LC_VT_U64);
    at = u64(&g, (uint64_t)1 << 62);           /* count * 8 overflows */
    EXPECT(&g, LC_E_OVERFLOW, at);

    header(&g, 3, 0, 1);
    str(&g, "k");
    u32(&g, LC_VT_STRING);
    at = u64(&g, 1000);                        /* string past EOF */
    put(&g, "abc", 3);
    EXPECT(&g, LC_E_TRUNCATED, at);

    header(&g, 3, 0, 1);
    str(&g, "k");
    u32(&g, LC_VT_ARRAY);
    for (int d = 0; d < LC_GGUF_MAX_DEPTH; d++) {
        u32(&g, LC_VT_ARRAY);
        u64(&g, 1);
    }
    at = u32(&g, LC_VT_U8);
    u64(&g, 0);
    EXPECT(&g, LC_E_OVERFLOW, at);

    header(&g, 3, 0, 2);
    str(&g, "k");
    u32(&g, LC_VT_U8);
    put(&g, "\1", 1);
    at = str(&g, "k");
    u32(&g, LC_VT_U8);
    put(&g, "\2", 1);
    lc_error e;
    cr_assert_eq(load(&g, &e), LC_E_MALFORMED);
    cr_assert_eq(e.offset, at);
    cr_assert_str_eq(e.where, "k");

    header(&g, 3, 0, 1);
    str(&g, "general.alignment");
    u32(&g, LC_VT_U32);
    at = u32(&g, 3);
    EXPECT(&g, LC_E_MALFORMED, at);
}

/* A file with one F32 tensor of ne (4, 2) after an optional alignment key. */
static void one_tensor(buf *g, uint32_t ndim, uint64_t ne0, uint32_t type, uint64_t off,
                       size_t *ndim_at, size_t *ne_at, size_t *type_at, size_t *off_at) {
    header(g, 3, 1, 0);
    str(g, "t");
    *ndim_at = u32(g, ndim);
    *ne_at = u64(g, ne0);
    for (uint32_t d = 1; d < ndim; d++)
        u64(g, 2);
    *type_at = u32(g, type);
    *off_at = u64(g, off);
    while (g->n % 32)
        g->b[g->n++] = 0;
    for (int i = 0; i < 32; i++)
        g->b[g->n++] = (uint8_t)i;
}

Test(gguf, tensor_info_errors) {
    buf g;
    size_t nd, ne, ty, of;
    one_tensor(&g, 2, 4, 0, 0, &nd, &ne, &ty, &of);
    lc_error e;
    cr_assert_eq(load(&g, &e), LC_OK, "%s", e.msg);
    one_tensor(&g, 2, 0, 0, 0, &nd, &ne, &ty, &of);   /* ggml allows ne = 0 */
    lc_model *m;
    cr_assert_eq(lc_gguf_load_mem(g.b, g.n, &m, &e), LC_OK, "%s", e.msg);
    cr_assert_eq(lc_model_tensor(m, 0)->nbytes, 0);
    cr_assert(lc_model_tensor(m, 0)->shape[0] == 2 && lc_model_tensor(m, 0)->shape[1] == 0);
    lc_model_free(m);
    one_tensor(&g, 5, 4, 0, 0, &nd, &ne, &ty, &of);
    EXPECT(&g, LC_E_MALFORMED, nd);
    one_tensor(&g, 2, (uint64_t)1 << 63, 0, 0, &nd, &ne, &ty, &of);
    EXPECT(&g, LC_E_OVERFLOW, ne);
    one_tensor(&g, 2, (uint64_t)1 << 62, 0, 0, &nd, &ne, &ty, &of);
    EXPECT(&g, LC_E_OVERFLOW, ne);             /* 2^63 elements pass INT64_MAX */
    one_tensor(&g, 2, 4, 5, 0, &nd, &ne, &ty, &of);
    EXPECT(&g, LC_E_UNSUPPORTED, ty);          /* removed Q4_3 */
    one_tensor(&g, 2, 4, 8, 0, &nd, &ne, &ty, &of);
    EXPECT(&g, LC_E_MALFORMED, ne);            /* Q8_0 row of 4 */
    one_tensor(&g, 2, 4, 0, 16, &nd, &ne, &ty, &of);
    EXPECT(&g, LC_E_MALFORMED, of);            /* misaligned */
    one_tensor(&g, 2, 4, 0, 32, &nd, &ne, &ty, &of);
    EXPECT(&g, LC_E_MALFORMED, of);            /* not the running sum */
    one_tensor(&g, 2, 8, 0, 0, &nd, &ne, &ty, &of);
    EXPECT(&g, LC_E_TRUNCATED, of);            /* 64 bytes, 32 present */
}

Test(gguf, duplicate_tensor_names_where) {
    buf g;
    header(&g, 3, 2, 0);
    str(&g, "t");
    u32(&g, 1);
    u64(&g, 4);
    u32(&g, 0);
    u64(&g, 0);
    size_t at = str(&g, "t");
    u32(&g, 1);
    u64(&g, 4);
    u32(&g, 0);
    u64(&g, 32);
    lc_error e;
    cr_assert_eq(load(&g, &e), LC_E_MALFORMED);
    cr_assert_eq(e.offset, at);
    cr_assert_str_eq(e.where, "t");
}

/* ---- the IR built from gguf-py's files ---- */

static const char *fixture(const char *name) {
    static char path[512];
    const char *dir = getenv("LC_FIXTURES");
    snprintf(path, sizeof path, "%s/gguf/%s", dir ? dir : "fixtures", name);
    return path;
}

Test(gguf, reads_gguf_py_file) {
    lc_model *m;
    lc_gguf_info info;
    lc_error err = { 0 };
    cr_assert_eq(lc_gguf_load_ex(fixture("tensors.gguf"), &m, &info, &err), LC_OK, "%s",
                 err.msg);
    cr_assert_eq(info.version, 3);
    cr_assert_eq(info.alignment, 32);
    cr_assert_eq(info.n_tensors, 8);
    cr_assert_eq(info.data_offset % 32, 0);
    cr_assert_str_eq(lc_model_meta(m, 0)->key, "general.architecture");
    const lc_value *v = lc_model_find_meta(m, "t.i8");
    cr_assert(v && v->type == LC_VT_I8 && v->i == -100);
    v = lc_model_find_meta(m, "t.u64");
    cr_assert(v && v->type == LC_VT_U64 && v->u == UINT64_MAX);
    v = lc_model_find_meta(m, "t.f32");
    cr_assert(v && v->type == LC_VT_F32 && v->f == (double)3.14159f);
    v = lc_model_find_meta(m, "t.arr_nested3");
    cr_assert(v && v->type == LC_VT_ARRAY && v->arr.elem == LC_VT_ARRAY && v->arr.count == 2);
    const lc_value *inner = lc_value_arr_item(lc_value_arr_item(v, 0), 1);
    cr_assert(inner && inner->arr.elem == LC_VT_STRING && inner->arr.count == 2);
    cr_assert_str_eq(lc_value_arr_str(inner, 1, NULL), "z");
    const lc_tensor *t = lc_model_find_tensor(m, "w.f16");
    cr_assert(t && t->dtype == LC_DT_F16 && t->ndim == 3);
    cr_assert(t->shape[0] == 2 && t->shape[1] == 3 && t->shape[2] == 8, "ne reversed");
    cr_assert_eq(t->nbytes, 2 * 3 * 8 * 2);
    t = lc_model_find_tensor(m, "w.q4_k");
    cr_assert(t && t->dtype == LC_DT_Q4_K && t->shape[0] == 2 && t->shape[1] == 256);
    cr_assert_eq(t->nbytes, 288);
    t = lc_model_find_tensor(m, "w.f64_4d");
    cr_assert(t && t->ndim == 4 && t->shape[0] == 2 && t->shape[1] == 1 && t->shape[3] == 2);
    cr_assert_eq(t->file_offset % 32, 0);
    lc_model_free(m);

    cr_assert_eq(lc_gguf_load_ex(fixture("align64.gguf"), &m, &info, &err), LC_OK);
    cr_assert_eq(info.alignment, 64);
    for (size_t i = 0; i < lc_model_tensor_count(m); i++)
        cr_assert_eq(lc_model_tensor(m, i)->file_offset % 64, 0);
    lc_model_free(m);
    cr_assert_eq(lc_gguf_load_ex(fixture("v2_patched.gguf"), &m, &info, &err), LC_OK);
    cr_assert_eq(info.version, 2);
    lc_model_free(m);
}

Test(gguf, missing_file_is_notfound) {
    lc_model *m;
    lc_error err = { 0 };
    cr_assert_eq(lc_gguf_load("/nonexistent/x.gguf", &m, &err), LC_E_NOTFOUND);
    cr_assert_str_eq(err.path, "/nonexistent/x.gguf");
}

/* Every allocation in turn fails: the loader must report NOMEM and free everything
 * (ASan's leak check runs this in `make asan`). */
Test(gguf, out_of_memory_everywhere) {
    lc_map *map;
    lc_error err = { 0 };
    cr_assert_eq(lc_map_open(fixture("tensors.gguf"), &map, &err), LC_OK);
    int failures = 0;
    for (long n = 1;; n++) {
        lc_model *m;
        memset(&err, 0, sizeof err);
        lc_alloc_fail_after(n);
        lc_code rc = lc_gguf_load_mem(map->data, map->size, &m, &err);
        lc_alloc_fail_after(0);
        if (rc == LC_OK) {
            lc_model_free(m);
            break;
        }
        cr_assert_eq(rc, LC_E_NOMEM, "allocation %ld: %s", n, err.msg);
        failures++;
    }
    cr_assert_gt(failures, 20);
    lc_map_close(map);
}

/* ---- writer ---- */

typedef struct counting { size_t max_len; int calls; } counting;

static lc_code counting_read(void *ctx, const lc_tensor *t, uint64_t off, void *dst, size_t len,
                             lc_error *err) {
    (void)t, (void)err;
    counting *c = ctx;
    c->calls++;
    if (len > c->max_len)
        c->max_len = len;
    for (size_t i = 0; i < len; i++)
        ((uint8_t *)dst)[i] = (uint8_t)(off + i);
    return LC_OK;
}
static const lc_source_ops counting_ops = { counting_read, NULL };

static char dir[] = "/tmp/lc-gguf-XXXXXX";

static const char *tmp_path(const char *name) {
    static char path[300];
    static int made;
    if (!made++)
        cr_assert_not_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return path;
}

Test(gguf, writer_round_trip_and_chunks) {
    lc_error err = { 0 };
    lc_model *m = lc_model_new();
    lc_value v = lc_value_uint(LC_VT_U32, 64);
    cr_assert_eq(lc_model_add_meta(m, "general.alignment", &v, &err), LC_OK);
    cr_assert_eq(lc_value_array(&v, LC_VT_STRING, 0, &err), LC_OK);   /* empty array */
    cr_assert_eq(lc_model_add_meta(m, "empty", &v, &err), LC_OK);
    lc_value inner;
    cr_assert_eq(lc_value_array(&v, LC_VT_ARRAY, 1, &err), LC_OK);
    cr_assert_eq(lc_value_array(&inner, LC_VT_I16, 1, &err), LC_OK);
    cr_assert_eq(lc_value_arr_set(&inner, 0, lc_value_int(LC_VT_I16, -7), &err), LC_OK);
    cr_assert_eq(lc_value_arr_set(&v, 0, inner, &err), LC_OK);
    cr_assert_eq(lc_model_add_meta(m, "nested", &v, &err), LC_OK);
    v = lc_value_float(LC_VT_F64, 0.1);
    cr_assert_eq(lc_model_add_meta(m, "f64", &v, &err), LC_OK);
    static const float data[6] = { 1, 2, 3, 4, 5, 6 };
    lc_tensor *t;
    cr_assert_eq(lc_model_add_tensor(m, "a", LC_DT_F32, 2, (uint64_t[]){ 2, 3 }, &t, &err),
                 LC_OK);
    t->data = (const uint8_t *)data;
    counting c = { 0, 0 };
    cr_assert_eq(lc_model_add_tensor(m, "b", LC_DT_Q8_0, 1, (uint64_t[]){ 64 }, &t, &err),
                 LC_OK);
    t->ops = &counting_ops;
    t->ctx = &c;
    const char *path = tmp_path("w.gguf");
    lc_gguf_write_opts o = { .chunk_bytes = 5, .threads = 1 };   /* counting is not atomic */
    cr_assert_eq(lc_gguf_write(m, path, &o, NULL, &err), LC_OK, "%s", err.msg);
    cr_assert_eq(c.max_len, 5, "reads are bounded by the chunk");
    cr_assert_eq(c.calls, 14);                                  /* 68 bytes / 5 */
    lc_model_free(m);

    lc_gguf_info info;
    cr_assert_eq(lc_gguf_load_ex(path, &m, &info, &err), LC_OK, "%s", err.msg);
    cr_assert_eq(info.version, 3);
    cr_assert_eq(info.alignment, 64);
    cr_assert_eq(lc_model_meta_count(m), 4);
    cr_assert_eq(lc_model_find_meta(m, "empty")->arr.count, 0);
    cr_assert_eq(lc_value_arr_int(lc_value_arr_item(lc_model_find_meta(m, "nested"), 0), 0), -7);
    cr_assert_eq(lc_model_find_meta(m, "f64")->f, 0.1);
    const lc_tensor *a = lc_model_find_tensor(m, "a"), *b = lc_model_find_tensor(m, "b");
    cr_assert(a->shape[0] == 2 && a->shape[1] == 3);
    cr_assert_eq(memcmp(a->data, data, sizeof data), 0);
    cr_assert_eq(b->file_offset - a->file_offset, 64, "a is padded to the alignment");
    for (int i = 0; i < 68; i++)
        cr_assert_eq(b->data[i], (uint8_t)i);
    lc_model_free(m);
    unlink(path);
}

Test(gguf, writer_refusals) {
    struct { lc_dtype dt; uint32_t ndim; const char *name; lc_code want; } cases[] = {
        { LC_DT_U8, 1, "u8", LC_E_UNSUPPORTED },
        { LC_DT_F32, 5, "five", LC_E_UNSUPPORTED },
        { LC_DT_F32, 1, "a-name-of-exactly-sixty-four-bytes-which-ggml-cannot-load-xxxxxx",
          LC_E_UNSUPPORTED },
    };
    const char *path = tmp_path("r.gguf");
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        lc_error err = { 0 };
        lc_model *m = lc_model_new();
        const uint64_t shape[5] = { 1, 1, 1, 1, 1 };
        cr_assert_eq(lc_model_add_tensor(m, cases[i].name, cases[i].dt, cases[i].ndim, shape,
                                         NULL, &err), LC_OK);
        cr_assert_eq(lc_gguf_write(m, path, NULL, NULL, &err), cases[i].want, "case %zu", i);
        cr_assert_str_eq(err.where, cases[i].name);
        cr_assert_eq(access(path, F_OK), -1, "no file after a refusal");
        lc_model_free(m);
    }
    lc_error err = { 0 };
    lc_model *m = lc_model_new();
    lc_value v = lc_value_uint(LC_VT_U32, 48);
    cr_assert_eq(lc_model_add_meta(m, "general.alignment", &v, &err), LC_OK);
    cr_assert_eq(lc_gguf_write(m, path, NULL, NULL, &err), LC_E_ARG);
    cr_assert_str_eq(err.where, "general.alignment");
    lc_model_free(m);
    m = lc_model_new();
    cr_assert_eq(lc_value_array(&v, LC_VT_U8, 0, &err), LC_OK);
    v.arr.elem = (lc_vtype)LC_VT_COUNT;                    /* no such element type */
    cr_assert_eq(lc_model_add_meta(m, "bad", &v, &err), LC_OK);
    cr_assert_eq(lc_gguf_write(m, path, NULL, NULL, &err), LC_E_ARG);
    cr_assert_eq(access(path, F_OK), -1);
    lc_model_free(m);
}

/* A huge alignment pads only as much as the data it aligns: a file of no tensors that
 * asks for 2^31 is refused (ggml would write 2 GiB of zeros), one of 64 KiB is written
 * as ggml writes it, and 2^20 over 3 MiB of data too. */
Test(gguf, writer_bounds_the_padding_of_a_huge_alignment) {
    const char *path = tmp_path("al.gguf");
    struct { uint32_t align; uint64_t n; lc_code want; } cases[] = {
        { 1u << 31, 0, LC_E_ARG }, { 1u << 20, 1024, LC_E_ARG },
        { 1u << 16, 0, LC_OK }, { 1u << 20, 3u << 18, LC_OK },
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        lc_error err = { 0 };
        lc_model *m = lc_model_new();
        lc_value v = lc_value_uint(LC_VT_U32, cases[i].align);
        cr_assert_eq(lc_model_add_meta(m, "general.alignment", &v, &err), LC_OK);
        float *data = NULL;
        if (cases[i].n) {
            lc_tensor *t;
            cr_assert_eq(lc_model_add_tensor(m, "w", LC_DT_F32, 1, (uint64_t[]){ cases[i].n },
                                             &t, &err), LC_OK);
            data = calloc(cases[i].n, sizeof *data);
            t->data = (const uint8_t *)data;
        }
        cr_assert_eq(lc_gguf_write(m, path, NULL, NULL, &err), cases[i].want, "case %zu: %s",
                     i, err.msg);
        struct stat st;
        if (cases[i].want == LC_OK) {
            cr_assert_eq(stat(path, &st), 0);
            cr_assert_eq(st.st_size % cases[i].align, 0, "padded as ggml pads");
        } else {
            cr_assert_str_eq(err.where, "general.alignment");
            cr_assert_eq(access(path, F_OK), -1, "no file after a refusal");
        }
        unlink(path);
        free(data);
        lc_model_free(m);
    }
}

/* The writer under every allocation failure: NOMEM, and no file or temp file left. */
Test(gguf, writer_out_of_memory_leaves_nothing) {
    lc_model *m;
    lc_error err = { 0 };
    cr_assert_eq(lc_gguf_load(fixture("tensors.gguf"), &m, &err), LC_OK);
    const char *path = tmp_path("oom.gguf");
    for (long n = 1;; n++) {
        memset(&err, 0, sizeof err);
        lc_alloc_fail_after(n);
        lc_code rc = lc_gguf_write(m, path, NULL, NULL, &err);
        lc_alloc_fail_after(0);
        if (rc == LC_OK)
            break;
        cr_assert_eq(rc, LC_E_NOMEM, "allocation %ld: %s", n, err.msg);
        cr_assert_eq(rmdir(dir), 0, "allocation %ld left a file or temporary", n);
        cr_assert_eq(mkdir(dir, 0700), 0);
    }
    lc_model_free(m);
    unlink(path);
}

/* ---- the writer's threads ---- */

/* Bytes of tensor `t` are a function of (tensor index, offset); the source fails at
 * fail_at when that is below nbytes, and may sleep to shuffle the workers' timing. */
typedef struct pattern { uint8_t seed; uint64_t fail_at; } pattern;

static lc_code pattern_read(void *ctx, const lc_tensor *t, uint64_t off, void *dst, size_t len,
                            lc_error *err) {
    const pattern *p = ctx;
    (void)t;
    if (p->fail_at >= off && p->fail_at < off + len)
        return lc_fail(err, LC_E_IO, p->fail_at, "source %u fails", p->seed);
    if ((off / len + p->seed) % 3 == 0)
        usleep(50);
    for (size_t i = 0; i < len; i++)
        ((uint8_t *)dst)[i] = (uint8_t)((off + i) * 31 + p->seed);
    return LC_OK;
}
static const lc_source_ops pattern_ops = { pattern_read, NULL };

static lc_model *pattern_model(pattern *pats, size_t n) {
    lc_error err = { 0 };
    lc_model *m = lc_model_new();
    static const float small[3] = { 1, 2, 3 };
    for (size_t i = 0; i < n; i++) {
        char name[32];
        snprintf(name, sizeof name, "t%zu", i);
        lc_tensor *t;
        const uint64_t cols = 1 + (i * 37) % 900;     /* odd sizes: padding everywhere */
        cr_assert_eq(lc_model_add_tensor(m, name, LC_DT_I8, 1, &cols, &t, &err), LC_OK);
        if (i % 5 == 4) {                              /* zero-copy views in between */
            t->dtype = LC_DT_F32;
            t->shape[0] = 3;
            t->nbytes = sizeof small;
            t->data = (const uint8_t *)small;
            continue;
        }
        t->ops = &pattern_ops;
        t->ctx = &pats[i];
    }
    return m;
}

static size_t slurp(const char *path, uint8_t *into, size_t cap) {
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f);
    const size_t n = fread(into, 1, cap, f);
    fclose(f);
    return n;
}

Test(gguf, writer_same_file_for_any_thread_count) {
    enum { N = 40 };
    pattern pats[N];
    for (size_t i = 0; i < N; i++)
        pats[i] = (pattern){ (uint8_t)i, UINT64_MAX };
    lc_model *m = pattern_model(pats, N);
    static uint8_t want[1 << 16], got[1 << 16];
    size_t want_n = 0;
    static const int threads[] = { 1, 2, 3, 7 };
    for (size_t k = 0; k < sizeof threads / sizeof *threads; k++) {
        lc_error err = { 0 };
        const lc_gguf_write_opts o = { .chunk_bytes = 64, .threads = threads[k] };
        const char *path = tmp_path("threads.gguf");
        cr_assert_eq(lc_gguf_write(m, path, &o, NULL, &err), LC_OK, "%s", err.msg);
        if (k == 0) {
            want_n = slurp(path, want, sizeof want);
            cr_assert_gt(want_n, 10000);
        } else {
            cr_assert_eq(slurp(path, got, sizeof got), want_n, "threads %d", threads[k]);
            cr_assert_eq(memcmp(want, got, want_n), 0, "threads %d", threads[k]);
        }
        unlink(path);
    }
    /* ... and the file holds the bytes the sources gave. */
    lc_model *back;
    lc_error err = { 0 };
    cr_assert_eq(lc_gguf_load_mem(want, want_n, &back, &err), LC_OK, "%s", err.msg);
    for (size_t i = 0; i < N; i++) {
        const lc_tensor *t = lc_model_tensor(back, i);
        if (i % 5 == 4)
            continue;
        for (uint64_t b = 0; b < t->nbytes; b++)
            cr_assert_eq(t->data[b], (uint8_t)(b * 31 + i), "t%zu byte %" PRIu64, i, b);
    }
    lc_model_free(back);
    lc_model_free(m);
}

Test(gguf, writer_first_failing_source_wins_for_any_thread_count) {
    enum { N = 30 };
    pattern pats[N];
    for (size_t i = 0; i < N; i++)
        pats[i] = (pattern){ (uint8_t)i, UINT64_MAX };
    pats[21].fail_at = 100;     /* a later tensor fails early in its bytes ... */
    pats[13].fail_at = 300;     /* ... this earlier one later in its: 13 is reported */
    lc_model *m = pattern_model(pats, N);
    for (int threads = 1; threads <= 4; threads++) {
        lc_error err = { 0 };
        const lc_gguf_write_opts o = { .chunk_bytes = 32, .threads = threads };
        const char *path = tmp_path("fail.gguf");
        cr_assert_eq(lc_gguf_write(m, path, &o, NULL, &err), LC_E_IO);
        cr_assert_str_eq(err.where, "t13", "threads %d", threads);
        cr_assert_eq(err.offset, 300);
        cr_assert_str_eq(err.path, "", "a source's failure carries no output path");
        cr_assert_eq(access(path, F_OK), -1, "no file after a failure");
    }
    lc_model_free(m);
}

/* ---- split models: llama_split_path / llama_split_prefix ---- */

Test(gguf_split, names_of_the_parts) {
    char name[64];
    lc_error err = {0};
    cr_assert_eq(lc_gguf_split_path("d/m", 0, 3, name, sizeof name, &err), LC_OK);
    cr_assert_str_eq(name, "d/m-00001-of-00003.gguf");
    cr_assert_eq(lc_gguf_split_path("m", 11, 123456, name, sizeof name, &err), LC_OK);
    cr_assert_str_eq(name, "m-00012-of-123456.gguf", "%%05d: wider counts are not cut");
    cr_assert_eq(lc_gguf_split_path("m", 3, 3, name, sizeof name, &err), LC_E_ARG);
    err = (lc_error){0};
    cr_assert_eq(lc_gguf_split_path("a-long-prefix", 0, 2, name, 20, &err), LC_E_ARG);

    cr_assert(lc_gguf_split_prefix("d/m-00001-of-00003.gguf", 0, 3, name, sizeof name));
    cr_assert_str_eq(name, "d/m");
    cr_assert(lc_gguf_split_prefix("x-00002-of-00004.gguf", 1, 4, name, sizeof name));
    cr_assert_str_eq(name, "x");
    cr_assert_not(lc_gguf_split_prefix("d/m-00001-of-00003.gguf", 0, 4, name, sizeof name));
    cr_assert_not(lc_gguf_split_prefix("d/m-00002-of-00003.gguf", 0, 3, name, sizeof name));
    cr_assert_not(lc_gguf_split_prefix("-00001-of-00003.gguf", 0, 3, name, sizeof name),
                  "an empty prefix is no name (llama_split_prefix)");
    cr_assert_not(lc_gguf_split_prefix("m.gguf", 0, 3, name, sizeof name));
    cr_assert_not(lc_gguf_split_prefix("d/m-00001-of-00003.gguf", 0, 3, name, 3),
                  "a prefix that does not fit");
}
