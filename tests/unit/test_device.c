/* Unit tests for quant/device.h: --device parsing and opening in every build, and, in a
 * CUDA=1 build, the CUDA back end's own code on the emulated device (LC_CUDA_EMULATE=1:
 * the device's arithmetic, pinned and device buffers, streams that run only when
 * synchronised): every pair it converts against the CPU path on data that walks many
 * pieces through both lanes, byte windows of the lazy view, concurrent callers sharing
 * the slots, running out of device memory, and a source that fails half-way.
 * The same against a real GPU is `make check-cuda`. */
#include <criterion/criterion.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "libconvert/convert.h"
#include "libconvert/dtype.h"
#include "libconvert/model.h"
#include "quant/blocks.h"
#include "quant/device.h"
#include "quant/quant.h"
#include "quant/types.h"
#include "quant/view.h"

static const lc_dtype block_types[] = { LC_QUANT_TYPES(LC_QUANT_DTYPE) };
#define NBLOCK (sizeof block_types / sizeof block_types[0])

Test(qdev, parse_specs) {
    static const char *const good[] = { "cpu", "cuda", "cuda:0", "cuda:7", "cuda:255" };
    static const char *const bad[] = { "", "gpu", "cuda:", "cuda:x", "cuda:256", "cuda:-1",
                                       "cuda:0x1", "cuda0", "CUDA", "cpu:0", "cuda:1000" };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        lc_error err = { 0 };
        cr_assert_eq(lc_qdev_parse(good[i], &err), LC_OK, "%s: %s", good[i], err.msg);
    }
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        lc_error err = { 0 };
        cr_assert_eq(lc_qdev_parse(bad[i], &err), LC_E_ARG, "%s accepted", bad[i]);
    }
}

Test(qdev, cpu_is_no_device) {
    lc_qdev *d = (lc_qdev *)1;
    lc_error err = { 0 };
    cr_assert_eq(lc_qdev_open("cpu", &d, &err), LC_OK);
    cr_assert_null(d);
    cr_assert_eq(lc_qdev_open(NULL, &d, &err), LC_OK);
    cr_assert_null(d);
    cr_assert_not(lc_qdev_supports(NULL, LC_DT_F32, LC_DT_Q8_0));
    lc_qdev_close(NULL);
}

/* Without a GPU (and without the emulation) "cuda" says "no CUDA device" and why; in a
 * build without the back end too. On a machine where a device opens, nothing to test. */
Test(qdev, no_device_is_one_sentence) {
    unsetenv("LC_CUDA_EMULATE");
    lc_qdev *d = NULL;
    lc_error err = { 0 };
    const lc_code rc = lc_qdev_open("cuda:3", &d, &err);
    if (rc == LC_OK) {
        lc_qdev_close(d);
        cr_skip_test("a CUDA device opened: %s", err.msg);
    }
    cr_assert_null(d);
    cr_assert_eq(rc, LC_E_UNSUPPORTED, "%s", err.msg);
    cr_assert(strncmp(err.msg, "no CUDA device: ", 16) == 0, "%s", err.msg);
    cr_assert_null(strchr(err.msg, '\n'));
    cr_assert_null(lc_qdev_kernels("cuda"));
}

/* ---- the emulated device (CUDA=1 builds) ---- */

static lc_qdev *emulated(const char *lane_elems) {
#ifndef LC_HAVE_CUDA
    (void)lane_elems;
    cr_skip_test("this build has no CUDA back end (make CUDA=1 runs these)");
    return NULL;
#else
    setenv("LC_CUDA_EMULATE", "1", 1);
    if (lane_elems)
        setenv("LC_CUDA_LANE_ELEMS", lane_elems, 1);
    lc_qdev *d = NULL;
    lc_error err = { 0 };
    cr_assert_eq(lc_qdev_open("cuda", &d, &err), LC_OK, "%s", err.msg);
    cr_assert_not_null(d);
    cr_assert(strstr(lc_qdev_describe(d), "emulated"), "%s", lc_qdev_describe(d));
    return d;
#endif
}

static uint32_t rng(uint32_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 17;
    *s ^= *s << 5;
    return *s;
}

/* Weights of many scales, with a few zeros, subnormals and ties mixed in (no NaN: the
 * tools never convert one). */
static void fill(float *x, size_t n, uint32_t seed) {
    uint32_t s = seed | 1;
    for (size_t i = 0; i < n; i++) {
        const float u = (float)(rng(&s) >> 8) / 8388608.0f - 1.0f;
        const int e = (int)(i / 256 % 40) - 20;
        float v = ldexpf(u, e);
        switch (rng(&s) % 64) {
        case 0: v = 0.0f; break;
        case 1: v = -0.0f; break;
        case 2: v = ldexpf(u, -140); break;
        case 3: v = (float)(int)(rng(&s) % 17) - 8.5f; break;
        default: break;
        }
        x[i] = v;
    }
}

/* What the CPU path makes of `from` data src (n elements) as `to`: widen or dequantize
 * to F32, then narrow or quantize (or lc_convert between plain types). */
static void cpu_convert(lc_dtype from, const void *src, lc_dtype to, void *dst, size_t n) {
    lc_error err = { 0 };
    const bool fq = lc_dtype_is_quant(from), tq = lc_dtype_is_quant(to);
    if (!fq && !tq) {
        cr_assert_eq(lc_convert(from, src, to, dst, n, &err), LC_OK, "%s", err.msg);
        return;
    }
    float *f = malloc(n * sizeof *f);
    cr_assert_not_null(f);
    if (fq)
        cr_assert_eq(lc_dequantize_rows(from, src, f, 1, n, &err), LC_OK, "%s", err.msg);
    else
        cr_assert_eq(lc_convert(from, src, LC_DT_F32, f, n, &err), LC_OK, "%s", err.msg);
    if (tq)
        cr_assert_eq(lc_quantize_rows(to, f, dst, 1, n, &err), LC_OK, "%s", err.msg);
    else
        cr_assert_eq(lc_convert(LC_DT_F32, f, to, dst, n, &err), LC_OK, "%s", err.msg);
    free(f);
}

/* n elements of `t` made from floats x by the CPU path (the test's source data). */
static void *source(lc_dtype t, const float *x, size_t n) {
    void *p = malloc(n * 4 + 64);
    cr_assert_not_null(p);
    if (t == LC_DT_F32)
        memcpy(p, x, n * 4);
    else
        cpu_convert(LC_DT_F32, x, t, p, n);
    return p;
}

static size_t bytes_of(lc_dtype t, size_t n) {
    const lc_dtype_info *i = lc_dtype_get(t);
    return n / i->block_size * i->type_size;
}

static void check_pair(lc_qdev *d, lc_dtype from, lc_dtype to, const float *x, size_t n) {
    void *src = source(from, x, n);
    const size_t out = bytes_of(to, n);
    uint8_t *want = malloc(out), *got = malloc(out + 64);
    cr_assert(want && got);
    cpu_convert(from, src, to, want, n);
    memset(got, 0xa5, out + 64);
    lc_error err = { 0 };
    cr_assert_eq(lc_qdev_convert(d, from, src, to, got, n, &err), LC_OK, "%s -> %s: %s",
                 lc_dtype_name(from), lc_dtype_name(to), err.msg);
    size_t i = 0;
    while (i < out && want[i] == got[i])
        i++;
    cr_assert_eq(i, out, "%s -> %s: byte %zu of %zu differs from the CPU path",
                 lc_dtype_name(from), lc_dtype_name(to), i, out);
    for (size_t k = 0; k < 64; k++)
        cr_assert_eq(got[out + k], 0xa5, "%s -> %s wrote past its end", lc_dtype_name(from),
                     lc_dtype_name(to));
    free(src), free(want), free(got);
}

/* Every pair the device takes, 256 * 150 elements through 768-element lanes: ~50
 * pieces, the two lanes alternating, a short last piece. */
Test(qdev, every_pair_matches_the_cpu_path, .timeout = 300) {
    lc_qdev *d = emulated("768");
    enum { N = 256 * 150 };
    float *x = malloc(N * sizeof *x);
    cr_assert_not_null(x);
    fill(x, N, 7);
    lc_dtype all[3 + NBLOCK];
    all[0] = LC_DT_F32, all[1] = LC_DT_F16, all[2] = LC_DT_BF16;
    memcpy(all + 3, block_types, sizeof block_types);
    for (size_t a = 0; a < 3 + NBLOCK; a++) {
        for (size_t b = 0; b < 3 + NBLOCK; b++) {
            cr_assert_eq(lc_qdev_supports(d, all[a], all[b]), a != b);
            if (a != b)
                check_pair(d, all[a], all[b], x, N);
        }
    }
    static const lc_dtype others[] = { LC_DT_F64, LC_DT_I8, LC_DT_IQ4_NL, LC_DT_Q8_K,
                                       LC_DT_F8_E4M3 };
    for (size_t i = 0; i < sizeof others / sizeof others[0]; i++) {
        cr_assert_not(lc_qdev_supports(d, others[i], LC_DT_F32));
        cr_assert_not(lc_qdev_supports(d, LC_DT_F32, others[i]));
    }
    lc_error err = { 0 };
    cr_assert_eq(lc_qdev_convert(d, LC_DT_F32, x, LC_DT_Q4_K, x, 100, &err), LC_E_ARG);
    cr_assert_eq(lc_qdev_convert(d, LC_DT_F64, x, LC_DT_F32, x, 32, &err), LC_E_UNSUPPORTED);
    free(x);
    lc_qdev_close(d);
}

/* Every 16-bit pattern through the plain conversions (NaN payloads, infinities,
 * subnormals, signed zeros) and f32 patterns with every rounding tie. */
Test(qdev, special_values_of_plain_conversions) {
    lc_qdev *d = emulated("4096");
    uint16_t *h = malloc(65536 * 2);
    uint8_t *want = malloc(65536 * 4), *got = malloc(65536 * 4);
    cr_assert(h && want && got);
    for (uint32_t i = 0; i < 65536; i++)
        h[i] = (uint16_t)i;
    static const lc_dtype from16[] = { LC_DT_F16, LC_DT_BF16 };
    static const lc_dtype to[] = { LC_DT_F32, LC_DT_F16, LC_DT_BF16 };
    lc_error err = { 0 };
    for (size_t a = 0; a < 2; a++) {
        for (size_t b = 0; b < 3; b++) {
            if (from16[a] == to[b])
                continue;
            const size_t out = bytes_of(to[b], 65536);
            cr_assert_eq(lc_convert(from16[a], h, to[b], want, 65536, &err), LC_OK);
            cr_assert_eq(lc_qdev_convert(d, from16[a], h, to[b], got, 65536, &err), LC_OK, "%s",
                         err.msg);
            cr_assert_eq(memcmp(want, got, out), 0, "%s -> %s", lc_dtype_name(from16[a]),
                         lc_dtype_name(to[b]));
        }
    }
    uint32_t *u = (uint32_t *)(void *)h;
    for (uint32_t i = 0; i < 32768; i++)        /* exponent and sign, then a tie pattern */
        u[i] = (i >> 6) << 23 | (i & 63) << 12 | ((i & 1) ? 0x1000u : 0x8000u);
    for (size_t b = 1; b < 3; b++) {
        cr_assert_eq(lc_convert(LC_DT_F32, u, to[b], want, 32768, &err), LC_OK);
        cr_assert_eq(lc_qdev_convert(d, LC_DT_F32, u, to[b], got, 32768, &err), LC_OK);
        cr_assert_eq(memcmp(want, got, bytes_of(to[b], 32768)), 0, "F32 -> %s",
                     lc_dtype_name(to[b]));
    }
    free(h), free(want), free(got);
    lc_qdev_close(d);
}

/* The lazy view: any byte window of a quantized tensor, starting and ending inside
 * blocks, equals the CPU's quant view. */
Test(qdev, view_windows_match_the_cpu_view) {
    lc_qdev *d = emulated("1024");
    enum { ROWS = 24, COLS = 512 };
    float *x = malloc(ROWS * COLS * sizeof *x);
    cr_assert_not_null(x);
    fill(x, ROWS * COLS, 99);
    lc_model *m = lc_model_new();
    cr_assert_not_null(m);
    lc_error err = { 0 };
    const uint64_t shape[2] = { ROWS, COLS };
    lc_tensor *src, *cpu, *dev;
    cr_assert_eq(lc_model_add_tensor(m, "w", LC_DT_F32, 2, shape, &src, &err), LC_OK);
    src->data = (const uint8_t *)x;
    for (size_t ti = 0; ti < NBLOCK; ti++) {
        const lc_dtype t = block_types[ti];
        char name[32];
        snprintf(name, sizeof name, "cpu%zu", ti);
        cr_assert_eq(lc_model_add_tensor(m, name, t, 2, shape, &cpu, &err), LC_OK);
        cr_assert_eq(lc_quant_view(cpu, src, t, true, &err), LC_OK);
        snprintf(name, sizeof name, "dev%zu", ti);
        cr_assert_eq(lc_model_add_tensor(m, name, t, 2, shape, &dev, &err), LC_OK);
        cr_assert_eq(lc_qdev_view(dev, src, d, &err), LC_OK, "%s", err.msg);
        const uint64_t total = cpu->nbytes;
        uint8_t *a = malloc(total), *b = malloc(total);
        cr_assert(a && b);
        uint32_t s = 5;
        for (int k = 0; k < 40; k++) {
            uint64_t off = rng(&s) % total, len = rng(&s) % (total - off) + 1;
            if (k == 0)
                off = 0, len = total;
            memset(b, 0x11, total);
            cr_assert_eq(lc_tensor_read(cpu, off, a, (size_t)len, &err), LC_OK);
            cr_assert_eq(lc_tensor_read(dev, off, b, (size_t)len, &err), LC_OK, "%s", err.msg);
            cr_assert_eq(memcmp(a, b, (size_t)len), 0, "%s window [%llu, +%llu)",
                         lc_dtype_name(t), (unsigned long long)off, (unsigned long long)len);
            cr_assert_eq(b[len < total ? len : 0], len < total ? 0x11 : b[0],
                         "%s read past its window", lc_dtype_name(t));
        }
        free(a), free(b);
    }
    src->data = NULL;
    lc_model_free(m);
    free(x);
    lc_qdev_close(d);
}

/* Eight threads at once share the four slots (the others wait), each its own data. */
typedef struct worker {
    lc_qdev *d;
    int id;
    bool ok;
} worker;

static void *work(void *arg) {
    worker *w = arg;
    enum { N = 256 * 40 };
    float *x = malloc(N * sizeof *x);
    const lc_dtype t = block_types[w->id % NBLOCK];
    const size_t out = bytes_of(t, N);
    uint8_t *want = malloc(out), *got = malloc(out);
    lc_error err = { 0 };
    w->ok = x && want && got;
    for (int rep = 0; w->ok && rep < 5; rep++) {
        fill(x, N, (uint32_t)(w->id * 31 + rep));
        w->ok = lc_quantize_rows(t, x, want, 1, N, &err) == LC_OK &&
                lc_qdev_convert(w->d, LC_DT_F32, x, t, got, N, &err) == LC_OK &&
                memcmp(want, got, out) == 0;
    }
    free(x), free(want), free(got);
    return NULL;
}

Test(qdev, concurrent_callers_share_the_slots) {
    lc_qdev *d = emulated("512");
    pthread_t th[8];
    worker w[8];
    for (int i = 0; i < 8; i++) {
        w[i] = (worker){ d, i, false };
        cr_assert_eq(pthread_create(&th[i], NULL, work, &w[i]), 0);
    }
    for (int i = 0; i < 8; i++) {
        pthread_join(th[i], NULL);
        cr_assert(w[i].ok, "thread %d got other bytes than the CPU", i);
    }
    lc_qdev_close(d);
}

/* A device without room for one slot fails to open, saying so. */
Test(qdev, not_enough_device_memory) {
#ifndef LC_HAVE_CUDA
    cr_skip_test("this build has no CUDA back end (make CUDA=1 runs these)");
#else
    setenv("LC_CUDA_EMULATE", "1", 1);
    setenv("LC_CUDA_EMULATE_MIB", "8", 1);
    lc_qdev *d = NULL;
    lc_error err = { 0 };
    cr_assert_eq(lc_qdev_open("cuda", &d, &err), LC_E_NOMEM);
    cr_assert_null(d);
    cr_assert(strstr(err.msg, "not enough CUDA device memory"), "%s", err.msg);
    setenv("LC_CUDA_EMULATE_MIB", "96", 1);   /* room for one slot: opens */
    cr_assert_eq(lc_qdev_open("cuda", &d, &err), LC_OK, "%s", err.msg);
    lc_qdev_close(d);
#endif
}

/* A source that fails half-way: the error comes back, and the slot is usable again. */
static lc_code failing_read(void *ctx, const lc_tensor *t, uint64_t off, void *dst, size_t len,
                            lc_error *err) {
    (void)ctx, (void)t, (void)dst;
    if (off + len > 256 * 4 * 30)
        return lc_fail(err, LC_E_IO, off, "disk gone");
    memset(dst, 0, len);
    return LC_OK;
}
static const lc_source_ops FAILING = { failing_read, NULL, NULL };

Test(qdev, failing_source) {
    lc_qdev *d = emulated("512");
    lc_model *m = lc_model_new();
    lc_error err = { 0 };
    const uint64_t shape[1] = { 256 * 100 };
    lc_tensor *src, *dst;
    cr_assert_eq(lc_model_add_tensor(m, "s", LC_DT_F32, 1, shape, &src, &err), LC_OK);
    src->ops = &FAILING;
    cr_assert_eq(lc_model_add_tensor(m, "d", LC_DT_Q4_K, 1, shape, &dst, &err), LC_OK);
    cr_assert_eq(lc_qdev_view(dst, src, d, &err), LC_OK);
    uint8_t *buf = malloc(dst->nbytes);
    cr_assert_not_null(buf);
    for (int k = 0; k < 8; k++) {               /* more than the slots: each was given back */
        lc_error e = { 0 };
        cr_assert_eq(lc_tensor_read(dst, 0, buf, (size_t)dst->nbytes, &e), LC_E_IO);
        cr_assert(strstr(e.msg, "disk gone"), "%s", e.msg);
    }
    cr_assert_eq(lc_tensor_read(dst, 0, buf, 144 * 20, &err), LC_OK, "%s", err.msg);
    free(buf);
    lc_model_free(m);
    lc_qdev_close(d);
}

/* The variant tests' table is there on the emulated device. */
Test(qdev, kernel_table) {
    lc_qdev_close(emulated(NULL));
    const lc_qkernels *k = lc_qdev_kernels("cuda");
    cr_assert_not_null(k, "%s", lc_qdev_kernels_error());
    cr_assert_str_eq(k->name, "cuda");
    float x[256];
    fill(x, 256, 3);
    lc_block_q4_K want, got;
    lc_q4_K_quantize_ref(x, &want, 256);
    k->quantize[LC_DT_Q4_K](x, &got, 256);
    cr_assert_eq(memcmp(&want, &got, sizeof want), 0);
    cr_assert_null(lc_qdev_kernels("metal"));
}
