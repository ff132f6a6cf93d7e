/* tests/tools/lc-quant-bench.c: single-thread throughput of the kernel variants.
 *   lc-quant-bench [MIB_OF_F32 [REPS [VARIANTS [TYPES]]]]
 * MIB_OF_F32 (default 64) of weight-like floats, best of REPS (default 3).
 *
 * Without VARIANTS: the variant lc_qkernels_best() picks (LC_QUANT=ref|avx2|... forces
 * one), first line "variant NAME, ...", then one line per type with its quantize and
 * dequantize speed in MB/s of f32 (10^6 bytes of floats in or out per second).
 *
 * With VARIANTS (comma-separated, e.g. ref,avx2,avx512) and optionally TYPES (Q4_K,Q6_K):
 * a table, one row per type and direction, GB/s of f32 for each variant next to memcpy of
 * the same number of f32 bytes, all measured side by side: each repetition times memcpy
 * and then every variant on the same buffers, so that a noisy machine slows them alike.
 * A variant this build or CPU lacks prints "-". The last columns: the fastest variant
 * over memcpy, and over the reference. LC_BENCH_CLOCK=cpu: see now(). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "libconvert/alloc.h"
#include "libconvert/dtype.h"
#include "quant/quant.h"

enum { MAXV = 8 };

/* LC_BENCH_CLOCK=cpu times with this thread's CPU clock instead of the wall clock: on a
 * machine shared with other jobs it leaves out the time the thread was not running. */
static clockid_t g_clock = CLOCK_MONOTONIC;

static double now(void) {
    struct timespec ts;
    clock_gettime(g_clock, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void fill(float *x, size_t n) {
    uint32_t s = 12345;
    for (size_t i = 0; i < n; i++) {       /* roughly normal, like weights */
        float a = 0;
        for (int k = 0; k < 4; k++) {
            s = s * 1664525u + 1013904223u;
            a += (float)(s >> 8) / 16777216.0f;
        }
        x[i] = (a - 2.0f) * 0.05f;
    }
}

/* True when `name` is one of the comma-separated items of `list` (NULL: every name). */
static bool listed(const char *list, const char *name) {
    if (!list)
        return true;
    const size_t len = strlen(name);
    for (const char *p = list; *p;) {
        const char *end = strchr(p, ',');
        const size_t l = end ? (size_t)(end - p) : strlen(p);
        if (l == len && strncmp(p, name, l) == 0)
            return true;
        p += l + (end != NULL);
    }
    return false;
}

static int legacy(size_t mib, int reps, float *x, float *y, uint8_t *q, size_t n) {
    const lc_qkernels *k = lc_qkernels_best();
    printf("variant %s, %zu MiB of f32, best of %d\n", k->name, mib, reps);
    for (int t = 0; t < LC_DT_COUNT; t++) {
        if (!lc_quant_supported((lc_dtype)t))
            continue;
        double bq = 1e30, bd = 1e30;
        for (int r = 0; r < reps; r++) {
            double t0 = now();
            lc_qk_quantize(k, (lc_dtype)t)(x, q, n);
            double t1 = now();
            lc_qk_dequantize(k, (lc_dtype)t)(q, y, n);
            double t2 = now();
            bq = t1 - t0 < bq ? t1 - t0 : bq;
            bd = t2 - t1 < bd ? t2 - t1 : bd;
        }
        const double mb = (double)n * sizeof(float) / 1e6;
        printf("%-5s quantize %8.1f MB/s   dequantize %8.1f MB/s\n", lc_dtype_name((lc_dtype)t),
               mb / bq, mb / bd);
    }
    return 0;
}

static int table(size_t mib, int reps, const char *vlist, const char *tlist, float *x, float *y,
                 uint8_t *q, size_t n) {
    const char *names[MAXV];
    const lc_qkernels *ks[MAXV];
    int nv = 0;
    char *copy = strdup(vlist);
    if (!copy)
        return 1;
    for (char *tok = strtok(copy, ","); tok && nv < MAXV; tok = strtok(NULL, ","), nv++) {
        names[nv] = tok;
        ks[nv] = lc_qkernels_get(tok);
    }
    const double gb = (double)n * sizeof(float) / 1e9;
    printf("one thread, %zu MiB of f32, best of %d, %s clock; GB/s of f32 (quantize reads, dequantize "
           "writes that many float bytes); memcpy copies the same bytes\n", mib, reps,
           g_clock == CLOCK_MONOTONIC ? "wall" : "thread CPU");
    printf("%-5s %-10s", "type", "op");
    for (int v = 0; v < nv; v++)
        printf(" %7s", names[v]);
    printf(" %7s %12s %9s\n", "memcpy", "best/memcpy", "best/ref");
    for (int t = 0; t < LC_DT_COUNT; t++) {
        if (!lc_quant_supported((lc_dtype)t) || !listed(tlist, lc_dtype_name((lc_dtype)t)))
            continue;
        double bq[MAXV], bd[MAXV], bm = 1e30;
        for (int v = 0; v < nv; v++)
            bq[v] = bd[v] = 1e30;
        for (int r = 0; r < reps; r++) {
            double t0 = now();
            memcpy(y, x, n * sizeof *x);
            const double dm = now() - t0;
            bm = dm < bm ? dm : bm;
            for (int v = 0; v < nv; v++) {
                if (!ks[v])
                    continue;
                t0 = now();
                lc_qk_quantize(ks[v], (lc_dtype)t)(x, q, n);
                const double t1 = now();
                lc_qk_dequantize(ks[v], (lc_dtype)t)(q, y, n);
                const double t2 = now();
                bq[v] = t1 - t0 < bq[v] ? t1 - t0 : bq[v];
                bd[v] = t2 - t1 < bd[v] ? t2 - t1 : bd[v];
            }
        }
        for (int dir = 0; dir < 2; dir++) {
            const double *b = dir ? bd : bq;
            double best = 1e30, ref = 0;
            printf("%-5s %-10s", lc_dtype_name((lc_dtype)t), dir ? "dequantize" : "quantize");
            for (int v = 0; v < nv; v++) {
                if (!ks[v]) {
                    printf(" %7s", "-");
                    continue;
                }
                printf(" %7.2f", gb / b[v]);
                best = b[v] < best ? b[v] : best;
                if (strcmp(names[v], "ref") == 0)
                    ref = b[v];
            }
            printf(" %7.2f %11.2fx", gb / bm, bm / best);
            if (ref > 0)
                printf(" %8.1fx", ref / best);
            printf("\n");
        }
        fflush(stdout);
    }
    free(copy);
    return 0;
}

int main(int argc, char **argv) {
    const char *clk = getenv("LC_BENCH_CLOCK");
    if (clk && strcmp(clk, "cpu") == 0)
        g_clock = CLOCK_THREAD_CPUTIME_ID;
    const size_t mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 64;
    const int reps = argc > 2 ? atoi(argv[2]) : 3;
    const size_t n = mib * 1024 * 1024 / sizeof(float) / 256 * 256;
    float *x = lc_malloc_array(n, sizeof *x), *y = lc_malloc_array(n, sizeof *y);
    uint8_t *q = lc_malloc_array(n, 2);   /* >= 34/32 bytes per float */
    int rc = 2;
    if (!x || n == 0 || !y || !q || reps < 1 || argc > 5) {
        fprintf(stderr, "usage: lc-quant-bench [MIB_OF_F32 [REPS [VARIANTS [TYPES]]]]\n");
        goto done;
    }
    fill(x, n);
    memset(y, 0, n * sizeof *y);          /* touch every page before timing */
    memset(q, 0, n * 2);
    rc = argc > 3 ? table(mib, reps, argv[3], argc > 4 ? argv[4] : NULL, x, y, q, n)
                  : legacy(mib, reps, x, y, q, n);
done:
    lc_free(x), lc_free(y), lc_free(q);
    return rc;
}
