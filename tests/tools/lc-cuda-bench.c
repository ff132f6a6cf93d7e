/* tests/tools/lc-cuda-bench.c: the CUDA back end's speed beside its bounds and the CPU,
 * for make bench-cuda (scripts/bench-cuda.sh adds the whole-file figures).
 *   lc-cuda-bench [MIB [REPS [CASES]]]
 * MIB (default 256) of f32 per case, best of REPS (default 5); CASES a comma-separated
 * subset of the names printed (F32>Q4_K,BF16>Q4_K,...). First the bounds, measured in
 * this run on this device: pinned host-to-device and device-to-host copies, and a
 * device-to-device copy (its read plus write traffic: the memory bandwidth a kernel can
 * reach). Then per case, in GB/s of f32 (4 bytes an element, the convention of
 * lc-quant-bench):
 *   kernel    the kernels alone on device-resident data (launch to synchronised),
 *             and their memory traffic (source, F32 intermediate when there is one,
 *             result) as a share of the device-to-device copy's;
 *   host      lc_qdev_convert from host memory to host memory (pinned staging, two lanes,
 *             what --device runs per read), and its source bytes' rate as a share of the
 *             host-to-device copy: the end-to-end bound when the source crosses PCIe;
 *   cpu 1t, cpu Nt  the CPU path (lc_convert, the best kernel variant) on one thread
 *             and on N (every core, at most 16).
 * Prints the reason and exits 77 where no device opens (LC_CUDA_EMULATE=1 measures the
 * emulation, which says nothing about a GPU). */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "libconvert/convert.h"
#include "libconvert/dtype.h"
#include "quant/device.h"
#include "quant/quant.h"
#include "quant/types.h"

#ifdef LC_HAVE_CUDA
#include "quant/cuda/gpu.h"

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static size_t bytes_of(lc_dtype t, size_t n) {
    const lc_dtype_info *i = lc_dtype_get(t);
    return n / i->block_size * i->type_size;
}

/* The CPU path of from -> to over elements [a, b) of src/dst. */
static int cpu_part(lc_dtype from, const uint8_t *src, lc_dtype to, uint8_t *dst, size_t a,
                    size_t b, float *tmp) {
    lc_error err = { 0 };
    const size_t n = b - a;
    const uint8_t *s = src + bytes_of(from, a);
    uint8_t *d = dst + bytes_of(to, a);
    const bool fq = lc_dtype_is_quant(from), tq = lc_dtype_is_quant(to);
    if (!fq && !tq)
        return lc_convert(from, s, to, d, n, &err) == LC_OK;
    if (from == LC_DT_F32)
        return lc_quantize_rows(to, (const float *)(const void *)s, d, 1, n, &err) == LC_OK;
    if (to == LC_DT_F32)
        return lc_dequantize_rows(from, s, (float *)(void *)d, 1, n, &err) == LC_OK;
    return (fq ? lc_dequantize_rows(from, s, tmp, 1, n, &err) :
                 lc_convert(from, s, LC_DT_F32, tmp, n, &err)) == LC_OK &&
           (tq ? lc_quantize_rows(to, tmp, d, 1, n, &err) :
                 lc_convert(LC_DT_F32, tmp, to, d, n, &err)) == LC_OK;
}

typedef struct part {
    lc_dtype from, to;
    const uint8_t *src;
    uint8_t *dst;
    size_t a, b;
    float *tmp;
    int ok;
} part;

static void *cpu_thread(void *arg) {
    part *p = arg;
    p->ok = cpu_part(p->from, p->src, p->to, p->dst, p->a, p->b, p->tmp);
    return NULL;
}

/* Seconds of the CPU path on `threads` threads, rows split in whole 256-element runs. */
static double cpu_time(lc_dtype from, const uint8_t *src, lc_dtype to, uint8_t *dst, size_t n,
                       int threads, float *tmp) {
    pthread_t th[16];
    part p[16];
    const size_t per = (n / 256 + (size_t)threads - 1) / (size_t)threads * 256;
    const double t0 = now();
    for (int i = 0; i < threads; i++) {
        const size_t a = per * (size_t)i < n ? per * (size_t)i : n;
        const size_t b = a + per < n ? a + per : n;
        p[i] = (part){ from, to, src, dst, a, b, tmp + a, 0 };
        pthread_create(&th[i], NULL, cpu_thread, &p[i]);
    }
    int ok = 1;
    for (int i = 0; i < threads; i++) {
        pthread_join(th[i], NULL);
        ok &= p[i].ok;
    }
    return ok ? now() - t0 : -1.0;
}

typedef struct bench_case {
    const char *name;
    lc_dtype from, to;
    lc_cu_op ops[2];
    int nops;
} bench_case;

static int want_case(const char *list, const char *name) {
    if (!list)
        return 1;
    const size_t len = strlen(name);
    for (const char *p = list; (p = strstr(p, name)) != NULL; p += len)
        if ((p == list || p[-1] == ',') && (p[len] == ',' || p[len] == '\0'))
            return 1;
    return 0;
}

static int fail(const char *what, const lc_error *err) {
    printf("lc-cuda-bench: %s: %s\n", what, err->msg);
    return 1;
}

int main(int argc, char **argv) {
    const size_t mib = argc > 1 ? strtoull(argv[1], NULL, 10) : 256;
    const int reps = argc > 2 ? atoi(argv[2]) : 5;
    const char *only = argc > 3 ? argv[3] : NULL;
    const size_t n = mib * (1u << 20) / 4 / 256 * 256;
    lc_error err = { 0 };
    char desc[192];
    lc_gpu *g = NULL;
    const char *emu = getenv("LC_CUDA_EMULATE");
    if ((emu && strcmp(emu, "1") == 0 ? lc_gpu_open_emulated(0, &g, desc, sizeof desc, &err) :
         lc_gpu_open_driver(0, &g, desc, sizeof desc, &err)) != LC_OK) {
        printf("%s\n", err.msg);
        return 77;
    }
    lc_qdev *qd = NULL;
    if (lc_qdev_open("cuda", &qd, &err) != LC_OK)
        return fail("lc_qdev_open", &err);
    const size_t bytes = n * 4;
    void *stream = NULL;
    uint8_t *h_in = NULL, *h_out = NULL;
    uint64_t d_a = 0, d_b = 0, d_c = 0;
    if (g->ops->bind(g, &err) != LC_OK || g->ops->stream_new(g, &stream, &err) != LC_OK ||
        g->ops->host_alloc(g, bytes, (void **)&h_in, &err) != LC_OK ||
        g->ops->host_alloc(g, bytes, (void **)&h_out, &err) != LC_OK ||
        g->ops->dev_alloc(g, bytes, &d_a, &err) != LC_OK ||
        g->ops->dev_alloc(g, bytes, &d_b, &err) != LC_OK ||
        g->ops->dev_alloc(g, bytes, &d_c, &err) != LC_OK)
        return fail("buffers", &err);
    uint8_t *src = malloc(bytes), *dst = malloc(bytes);
    float *x = malloc(bytes), *tmp = malloc(bytes);
    if (!src || !dst || !x || !tmp)
        return 1;
    uint32_t s = 12345;
    for (size_t i = 0; i < n; i++) {                      /* weight-like: sum of uniforms */
        float a = 0;
        for (int k = 0; k < 4; k++) {
            s = s * 1664525u + 1013904223u;
            a += (float)(s >> 8) / 16777216.0f - 0.5f;
        }
        x[i] = a * 0.02f;
    }
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    const int nt = cores < 1 ? 1 : cores > 16 ? 16 : (int)cores;

    /* ---- bounds ---- */
    double h2d = 1e30, d2h = 1e30, d2d = 1e30;
    for (int r = 0; r < reps; r++) {
        double t0 = now();
        if (g->ops->h2d(g, d_a, h_in, bytes, stream, &err) != LC_OK ||
            g->ops->sync(g, stream, &err) != LC_OK)
            return fail("h2d", &err);
        double t = now() - t0;
        h2d = t < h2d ? t : h2d;
        t0 = now();
        if (g->ops->d2h(g, h_out, d_a, bytes, stream, &err) != LC_OK ||
            g->ops->sync(g, stream, &err) != LC_OK)
            return fail("d2h", &err);
        t = now() - t0;
        d2h = t < d2h ? t : d2h;
        t0 = now();
        if (g->ops->d2d(g, d_b, d_a, bytes, stream, &err) != LC_OK ||
            g->ops->sync(g, stream, &err) != LC_OK)
            return fail("d2d", &err);
        t = now() - t0;
        d2d = t < d2d ? t : d2d;
    }
    const double h2d_gbs = (double)bytes / h2d / 1e9, copy_gbs = 2.0 * (double)bytes / d2d / 1e9;
    printf("device %s\n", desc);
    printf("bounds, %zu MiB, best of %d: host->device %.1f GB/s, device->host %.1f GB/s, "
           "device copy %.1f GB/s of traffic (read + write)\n", mib, reps, h2d_gbs,
           (double)bytes / d2h / 1e9, copy_gbs);
    printf("%-14s %10s %8s %10s %8s %9s %9s  (GB/s of f32; cpu Nt = %d threads)\n", "case",
           "kernel", "%copy", "host", "%h2d", "cpu 1t", "cpu Nt", nt);

    /* ---- cases ---- */
    bench_case cases[64];
    size_t nc = 0;
    cases[nc++] = (bench_case){ "F32>F16", LC_DT_F32, LC_DT_F16, { LC_CU_OP_f32_f16 }, 1 };
    cases[nc++] = (bench_case){ "BF16>F16", LC_DT_BF16, LC_DT_F16, { LC_CU_OP_bf16_f16 }, 1 };
    cases[nc++] = (bench_case){ "F16>F32", LC_DT_F16, LC_DT_F32, { LC_CU_OP_f16_f32 }, 1 };
#define CASES(T, stem)                                                                      \
    cases[nc++] = (bench_case){ "F32>" #T, LC_DT_F32, LC_DT_##T,                            \
                                { LC_CU_OP_##stem##_quantize }, 1 };                        \
    cases[nc++] = (bench_case){ "BF16>" #T, LC_DT_BF16, LC_DT_##T,                          \
                                { LC_CU_OP_bf16_f32, LC_CU_OP_##stem##_quantize }, 2 };     \
    cases[nc++] = (bench_case){ #T ">F32", LC_DT_##T, LC_DT_F32,                            \
                                { LC_CU_OP_##stem##_dequantize }, 1 };
    LC_QUANT_TYPES(CASES)
#undef CASES
    for (size_t c = 0; c < nc; c++) {
        const bench_case *bc = &cases[c];
        if (!want_case(only, bc->name))
            continue;
        /* The source, made by the CPU from x. */
        if (bc->from == LC_DT_F32)
            memcpy(src, x, bytes);
        else if (!cpu_part(LC_DT_F32, (const uint8_t *)x, bc->from, src, 0, n, tmp))
            return 1;
        const size_t in = bytes_of(bc->from, n), out = bytes_of(bc->to, n);
        memcpy(h_in, src, in);
        if (g->ops->h2d(g, d_a, h_in, in, stream, &err) != LC_OK ||
            g->ops->sync(g, stream, &err) != LC_OK)
            return fail(bc->name, &err);
        double kt = 1e30, ht = 1e30, c1 = 1e30, cn = 1e30;
        for (int r = 0; r < reps; r++) {
            const double t0 = now();
            for (int k = 0; k < bc->nops; k++) {
                const lc_dtype side = k == 0 ? (bc->from == LC_DT_F32 ? bc->to : bc->from) :
                                               bc->to;
                const uint64_t items = n / lc_dtype_get(side)->block_size;
                if (g->ops->launch(g, bc->ops[k], k ? d_c : d_a, k || bc->nops == 1 ? d_b : d_c,
                                   items, stream, &err) != LC_OK)
                    return fail(bc->name, &err);
            }
            if (g->ops->sync(g, stream, &err) != LC_OK)
                return fail(bc->name, &err);
            double t = now() - t0;
            kt = t < kt ? t : kt;
            const double t1 = now();
            if (lc_qdev_convert(qd, bc->from, src, bc->to, dst, n, &err) != LC_OK)
                return fail(bc->name, &err);
            t = now() - t1;
            ht = t < ht ? t : ht;
            t = cpu_time(bc->from, src, bc->to, dst, n, 1, tmp);
            c1 = t > 0 && t < c1 ? t : c1;
            t = cpu_time(bc->from, src, bc->to, dst, n, nt, tmp);
            cn = t > 0 && t < cn ? t : cn;
        }
        const double f32 = (double)bytes / 1e9;
        const double traffic = (double)(in + out + (bc->nops == 2 ? 2 * bytes : 0)) / 1e9;
        printf("%-14s %10.1f %7.0f%% %10.2f %7.0f%% %9.3f %9.3f\n", bc->name, f32 / kt,
               100.0 * traffic / kt / copy_gbs, f32 / ht, 100.0 * (double)in / ht / 1e9 / h2d_gbs,
               f32 / c1, f32 / cn);
        fflush(stdout);
    }
    lc_qdev_close(qd);
    g->ops->host_free(g, h_in);
    g->ops->host_free(g, h_out);
    g->ops->dev_free(g, d_a);
    g->ops->dev_free(g, d_b);
    g->ops->dev_free(g, d_c);
    g->ops->stream_free(g, stream);
    g->ops->close(g);
    free(src), free(dst), free(x), free(tmp);
    return 0;
}
#else
int main(void) {
    printf("lc-cuda-bench: this build has no CUDA back end (make CUDA=1)\n");
    return 77;
}
#endif
