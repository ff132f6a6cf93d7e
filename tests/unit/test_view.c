/* Unit tests for the generic lazy views: libconvert/view.c (file, map, heads) and
 * quant/view.c (quantizing and dequantizing sources). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "libconvert/map.h"
#include "libconvert/model.h"
#include "libconvert/view.h"
#include "quant/quant.h"
#include "quant/view.h"

Test(view, quant_both_ways_and_map_view) {
    lc_error err = { 0 };
    lc_model *m = lc_model_new(), *work = lc_model_new();
    const uint64_t shape[2] = { 3, 64 };
    static float x[3 * 64];
    for (int i = 0; i < 3 * 64; i++)
        x[i] = (float)(i % 17) - 8.5f;
    /* The map view's contract: the bytes are in a read-only file mapping. */
    char path[] = "/tmp/lc-hf-view-q-XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    cr_assert_eq(write(fd, x, sizeof x), (ssize_t)sizeof x);
    close(fd);
    lc_map *map = NULL;
    cr_assert_eq(lc_map_open(path, &map, &err), LC_OK);
    unlink(path);
    lc_tensor *f, *q, *back;
    cr_assert_eq(lc_model_add_tensor(m, "f", LC_DT_F32, 2, shape, &f, &err), LC_OK);
    f->data = map->data;
    lc_tensor *v;
    cr_assert_eq(lc_model_add_tensor(work, "f", LC_DT_F32, 2, shape, &v, &err), LC_OK);
    cr_assert_eq(lc_view_map(v, f, &err), LC_OK);
    cr_assert_eq(lc_model_add_tensor(m, "q", LC_DT_Q8_0, 2, shape, &q, &err), LC_OK);
    cr_assert_eq(lc_quant_view(q, v, LC_DT_Q8_0, true, &err), LC_OK);
    uint8_t want[3 * 68], got[3 * 68];
    cr_assert_eq(lc_quantize_rows(LC_DT_Q8_0, x, want, 3, 64, &err), LC_OK);
    cr_assert_eq(lc_tensor_read(q, 0, got, sizeof got, &err), LC_OK);
    cr_assert_eq(memcmp(got, want, sizeof got), 0);
    cr_assert_eq(lc_tensor_read(q, 70, got, 100, &err), LC_OK);   /* a range across rows */
    cr_assert_eq(memcmp(got, want + 70, 100), 0);
    cr_assert_eq(lc_model_add_tensor(m, "b", LC_DT_F32, 2, shape, &back, &err), LC_OK);
    cr_assert_eq(lc_quant_view(back, q, LC_DT_Q8_0, false, &err), LC_OK);
    float deq[3 * 64], ref[3 * 64];
    cr_assert_eq(lc_dequantize_rows(LC_DT_Q8_0, want, ref, 3, 64, &err), LC_OK);
    cr_assert_eq(lc_tensor_read(back, 0, deq, sizeof deq, &err), LC_OK);
    cr_assert_eq(memcmp(deq, ref, sizeof deq), 0);
    const uint64_t odd[2] = { 2, 48 };
    lc_tensor *bad;
    cr_assert_eq(lc_model_add_tensor(m, "odd", LC_DT_F32, 2, odd, &bad, &err), LC_OK);
    cr_assert_eq(lc_quant_view(bad, bad, LC_DT_Q8_0, true, &err), LC_E_ARG);
    lc_model_free(m);
    lc_model_free(work);
    lc_map_close(map);
}

Test(view, file_view_short_file_is_truncated_at_its_offset) {
    lc_error err = { 0 };
    char path[] = "/tmp/lc-hf-view-XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    cr_assert_eq(write(fd, "0123456789", 10), 10);
    lc_model *m = lc_model_new(), *work = lc_model_new();
    const uint64_t shape[1] = { 8 };
    lc_tensor *s;
    cr_assert_eq(lc_model_add_tensor(m, "s", LC_DT_U8, 1, shape, &s, &err), LC_OK);
    s->file_offset = 4;      /* bytes 4..11 of a 10-byte file */
    lc_tensor *v;
    cr_assert_eq(lc_model_add_tensor(work, "s", LC_DT_U8, 1, shape, &v, &err), LC_OK);
    cr_assert_eq(lc_view_file(v, fd, s->file_offset, path, &err), LC_OK);
    char buf[8];
    cr_assert_eq(lc_tensor_read(v, 0, buf, 6, &err), LC_OK);
    cr_assert_eq(memcmp(buf, "456789", 6), 0);
    cr_assert_eq(lc_tensor_read(v, 0, buf, 8, &err), LC_E_TRUNCATED);
    cr_assert_eq(err.offset, 10);
    cr_assert_str_eq(err.path, path, "the error names the file");
    cr_assert_str_eq(err.where, "s", "and the tensor, by its own name");
    close(fd);
    unlink(path);
    lc_model_free(m);
    lc_model_free(work);
}

Test(view, map_view_gives_pages_back_and_rereads_the_same_bytes) {
    enum { N = 3 << 20 };                          /* 3 MiB: drops happen behind reads */
    lc_error err = { 0 };
    uint8_t *data = malloc(N), *buf = malloc(N);
    for (size_t i = 0; i < N; i++)
        data[i] = (uint8_t)(i * 2654435761u >> 13);
    char path[] = "/tmp/lc-hf-view-m-XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    cr_assert_eq(write(fd, data, N), (ssize_t)N);
    close(fd);
    lc_map *map = NULL;
    cr_assert_eq(lc_map_open(path, &map, &err), LC_OK);
    unlink(path);
    lc_model *m = lc_model_new(), *work = lc_model_new();
    const uint64_t shape[1] = { N };
    lc_tensor *s;
    cr_assert_eq(lc_model_add_tensor(m, "s", LC_DT_U8, 1, shape, &s, &err), LC_OK);
    s->data = map->data;
    lc_tensor *v;
    cr_assert_eq(lc_model_add_tensor(work, "s", LC_DT_U8, 1, shape, &v, &err), LC_OK);
    cr_assert_eq(lc_view_map(v, s, &err), LC_OK);
    for (size_t off = 0; off < N; off += 65536)
        cr_assert_eq(lc_tensor_read(v, off, buf + off, 65536, &err), LC_OK);
    cr_assert_eq(memcmp(buf, data, N), 0);
    memset(buf, 0, N);                             /* again, after the pages were dropped */
    cr_assert_eq(lc_tensor_read(v, 0, buf, N, &err), LC_OK);
    cr_assert_eq(memcmp(buf, data, N), 0);
    lc_model_free(m);
    lc_model_free(work);
    lc_map_close(map);
    free(data);
    free(buf);
}

/* A lazy F32 source that counts the bytes read from it. */
static uint64_t g_read;
static lc_code count_read(void *ctx, const lc_tensor *t, uint64_t off, void *dst, size_t len,
                          lc_error *err) {
    (void)ctx;
    (void)t;
    (void)err;
    float *f = dst;
    for (size_t i = 0; i < len / 4; i++)
        f[i] = (float)((off / 4 + i) % 23) - 11.0f;
    g_read += len;
    return LC_OK;
}
static const lc_source_ops COUNT_OPS = { count_read, NULL, NULL };

/* One row of 2^24 elements: a small read at its end converts only the blocks it needs
 * (it used to convert the whole row for every chunk, quadratic in the row length). */
Test(view, quant_reads_only_the_blocks_a_range_touches) {
    enum { N = 1 << 24 };
    lc_error err = { 0 };
    lc_model *m = lc_model_new();
    const uint64_t shape[1] = { N };
    lc_tensor *src, *q, *back;
    cr_assert_eq(lc_model_add_tensor(m, "src", LC_DT_F32, 1, shape, &src, &err), LC_OK);
    src->ops = &COUNT_OPS;
    cr_assert_eq(lc_model_add_tensor(m, "q", LC_DT_Q4_0, 1, shape, &q, &err), LC_OK);
    cr_assert_eq(lc_quant_view(q, src, LC_DT_Q4_0, true, &err), LC_OK);
    uint8_t got[100], want[18 * 8];
    g_read = 0;
    const uint64_t off = q->nbytes - 100;
    cr_assert_eq(lc_tensor_read(q, off, got, sizeof got, &err), LC_OK);
    cr_assert_leq(g_read, 8 * 32 * 4, "read %llu source bytes for 100 output bytes",
                  (unsigned long long)g_read);
    /* The bytes equal the quantizer's on the blocks they come from. */
    float x[8 * 32];
    const uint64_t first = off / 18;
    count_read(NULL, src, first * 32 * 4, x, sizeof x, &err);
    const uint64_t nblk = q->nbytes / 18 - first;
    cr_assert_eq(lc_quantize_rows(LC_DT_Q4_0, x, want, 1, (size_t)nblk * 32, &err), LC_OK);
    cr_assert_eq(memcmp(got, want + (off - first * 18), sizeof got), 0);
    /* And the way back reads only the blocks a float range needs. */
    cr_assert_eq(lc_model_add_tensor(m, "b", LC_DT_F32, 1, shape, &back, &err), LC_OK);
    cr_assert_eq(lc_quant_view(back, q, LC_DT_Q4_0, false, &err), LC_OK);
    float f[40];
    g_read = 0;
    cr_assert_eq(lc_tensor_read(back, (uint64_t)N * 4 - sizeof f, f, sizeof f, &err), LC_OK);
    cr_assert_leq(g_read, 3 * 32 * 4, "dequantizing 40 floats read %llu source bytes",
                  (unsigned long long)g_read);
    lc_model_free(m);
}

/* An importance-weighted view of a stack of experts: expert e's rows use the e-th row of
 * the matrix (llama-quantize's per-expert slice), whatever range is read. */
static float im_rows[3 * 512];
static int im_freed;
static lc_code im_get(void *ctx, uint64_t mat, float *out, lc_error *err) {
    (void)ctx;
    (void)err;
    memcpy(out, im_rows + mat * 512, 512 * sizeof *out);
    return LC_OK;
}
static void im_free(void *ctx) { im_freed += ctx == im_rows; }

Test(view, quant_imatrix_per_expert) {
    enum { E = 3, R = 4, C = 512 };
    static float x[E * R * C];
    for (int i = 0; i < E * R * C; i++)
        x[i] = (float)((i * 7919) % 1009) / 97.0f - 5.0f;
    for (int i = 0; i < E * C; i++)
        im_rows[i] = (float)((i * 31) % 101) * (i < C ? 0.01f : i < 2 * C ? 1.0f : 100.0f);
    const lc_dtype types[] = { LC_DT_Q4_0, LC_DT_Q4_K, LC_DT_IQ4_XS };
    for (size_t k = 0; k < sizeof types / sizeof types[0]; k++) {
        const lc_dtype t = types[k];
        lc_error err = { 0 };
        lc_model *m = lc_model_new();
        const uint64_t shape[3] = { E, R, C };
        lc_tensor *f, *q;
        cr_assert_eq(lc_model_add_tensor(m, "f", LC_DT_F32, 3, shape, &f, &err), LC_OK);
        f->data = (const uint8_t *)x;
        cr_assert_eq(lc_model_add_tensor(m, "q", t, 3, shape, &q, &err), LC_OK);
        const lc_quant_imatrix qi = { .get = im_get, .free = im_free, .ctx = im_rows,
                                      .rows_per_matrix = R };
        cr_assert_eq(lc_quant_view_imatrix(q, f, t, &qi, &err), LC_OK);
        const size_t rb = C / lc_dtype_get(t)->block_size * lc_dtype_get(t)->type_size;
        static uint8_t want[E * R * C], got[E * R * C];
        for (int e = 0; e < E; e++)
            cr_assert_eq(lc_quantize_rows_imatrix(t, x + e * R * C, want + e * R * rb, R, C,
                                                  im_rows + e * C, &err), LC_OK);
        cr_assert_eq(lc_tensor_read(q, 0, got, E * R * rb, &err), LC_OK);
        cr_assert_eq(memcmp(got, want, E * R * rb), 0, "%s", lc_dtype_name(t));
        const uint64_t off = rb * 3 + 5, len = rb * 5 + 7;      /* across two experts */
        memset(got, 0, sizeof got);
        cr_assert_eq(lc_tensor_read(q, off, got, len, &err), LC_OK);
        cr_assert_eq(memcmp(got, want + off, len), 0, "%s", lc_dtype_name(t));
        /* Expert 1's weights matter: another matrix gives other bytes there only. */
        cr_assert_eq(lc_quantize_rows_imatrix(t, x + R * C, got, R, C, im_rows, &err), LC_OK);
        cr_assert_neq(memcmp(got, want + R * rb, R * rb), 0, "%s", lc_dtype_name(t));
        lc_model_free(m);
    }
    cr_assert_eq(im_freed, 3, "the view releases its context");
}
