/* tests/tools/lc-quant-bench.c: throughput of the kernel variants, one thread and all.
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
 * over memcpy, and over the reference. LC_BENCH_CLOCK=cpu: see now(). A dequantize-only
 * type (quant/types.h LC_DEQUANT_TYPES) is timed only where TYPES names it, on one
 * dequantize row, from random blocks (random_blocks()).
 *
 * LC_BENCH_GGML=path/to/libggml-base.so (llama-cpp-python's, see scripts/bench/quant.sh)
 * adds ggml's ggml_quantize_chunk (what llama-quantize runs: without an importance matrix,
 * quantize_row_<type>_ref on one thread) as a column, timed in the same turns on rows of
 * 4096 of the same floats, the fastest variant over it, and whether its bytes equal ours.
 *
 * LC_BENCH_THREADS=N (N > 1) adds a second table after the first: quantize with the
 * variant lc_qkernels_best() picks, ggml_quantize_chunk and memcpy, each splitting the rows
 * into N equal runs on N threads (as llama.cpp's quantizer splits a tensor's rows), wall
 * clock, best of REPS, in the same turns. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "libconvert/alloc.h"
#include "libconvert/dtype.h"
#include "quant/quant.h"

enum { MAXV = 8 };

/* ggml.h: size_t ggml_quantize_chunk(enum ggml_type, const float *src, void *dst,
 * int64_t start, int64_t nrows, int64_t n_per_row, const float *imatrix). */
typedef size_t (*ggml_quantize_chunk_fn)(int, const float *, void *, int64_t, int64_t,
                                         int64_t, const float *);

/* ggml_quantize_chunk from LC_BENCH_GGML's library; NULL without one, -1 on failure. */
static ggml_quantize_chunk_fn load_ggml(int *failed) {
    const char *path = getenv("LC_BENCH_GGML");
    *failed = 0;
    if (!path || !*path)
        return NULL;
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    void *sym = lib ? dlsym(lib, "ggml_quantize_chunk") : NULL;
    if (!sym) {
        fprintf(stderr, "lc-quant-bench: %s: %s\n", path, dlerror());
        *failed = 1;
        return NULL;
    }
    ggml_quantize_chunk_fn f;
    memcpy(&f, &sym, sizeof f);                 /* object to function pointer, POSIX-style */
    return f;
}

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

/* nb random blocks of the dequantize-only type t at q, with their scales kept in the
 * normal range where random bits would often make subnormal products (Q8_K's binary32
 * d, MXFP4's E8M0 exponent), whose microcode assists would time something else. */
static void random_blocks(lc_dtype t, uint8_t *q, size_t nb) {
    const size_t ts = lc_dtype_get(t)->type_size;
    uint32_t s = 2463534242u;
    for (size_t i = 0; i < nb * ts; i++) {
        s ^= s << 13, s ^= s >> 17, s ^= s << 5;
        q[i] = (uint8_t)(s >> 24);
    }
    for (size_t b = 0; b < nb; b++) {
        uint8_t *p = q + b * ts;
        if (t == LC_DT_Q8_K) {                    /* 2^-10 .. 2^-3, either sign */
            const uint32_t d = (uint32_t)(p[3] & 0x80) << 24 | (uint32_t)(117 + p[2] % 8) << 23 |
                               (uint32_t)p[1] << 8 | p[0];
            memcpy(p, &d, 4);
        } else if (t == LC_DT_MXFP4) {
            p[0] = (uint8_t)(120 + p[0] % 8);
        }
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
    int nv = 0, failed;
    const ggml_quantize_chunk_fn ggml = load_ggml(&failed);
    uint8_t *g = ggml ? lc_malloc_array(n, 2) : NULL;
    char *copy = strdup(vlist);
    if (failed || !copy || (ggml && !g)) {
        free(copy), lc_free(g);
        return 1;
    }
    for (char *tok = strtok(copy, ","); tok && nv < MAXV; tok = strtok(NULL, ","), nv++) {
        names[nv] = tok;
        ks[nv] = lc_qkernels_get(tok);
    }
    const double gb = (double)n * sizeof(float) / 1e9;
    printf("one thread, %zu MiB of f32, best of %d, %s clock; GB/s of f32 (quantize reads, "
           "dequantize writes that many float bytes); memcpy copies the same bytes\n", mib, reps,
           g_clock == CLOCK_MONOTONIC ? "wall" : "thread CPU");
    printf("%-5s %-10s", "type", "op");
    for (int v = 0; v < nv; v++)
        printf(" %7s", names[v]);
    printf(" %7s%s %12s %9s%s\n", "memcpy", ggml ? "    ggml" : "", "best/memcpy", "best/ref",
           ggml ? " best/ggml  ggml bytes" : "");
    for (int t = 0; t < LC_DT_COUNT; t++) {
        const bool dq_only = !lc_quant_supported((lc_dtype)t) &&
                             lc_dequant_supported((lc_dtype)t) && tlist &&
                             listed(tlist, lc_dtype_name((lc_dtype)t));
        if (!dq_only &&
            (!lc_quant_supported((lc_dtype)t) || !listed(tlist, lc_dtype_name((lc_dtype)t))))
            continue;
        const lc_dtype_info *info = lc_dtype_get((lc_dtype)t);
        if (dq_only)             /* q holds at most 2 bytes per value: 292/256 fits */
            random_blocks((lc_dtype)t, q, n / info->block_size);
        double bq[MAXV], bd[MAXV], bm = 1e30, bg = 1e30;
        int same = -1;
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
                if (!dq_only)
                    lc_qk_quantize(ks[v], (lc_dtype)t)(x, q, n);
                const double t1 = now();
                lc_qk_dequantize(ks[v], (lc_dtype)t)(q, y, n);
                const double t2 = now();
                bq[v] = t1 - t0 < bq[v] ? t1 - t0 : bq[v];
                bd[v] = t2 - t1 < bd[v] ? t2 - t1 : bd[v];
            }
            if (ggml && !dq_only) {             /* rows of 4096, as a weight matrix's */
                t0 = now();
                ggml((int)info->gguf_id, x, g, 0, (int64_t)(n / 4096), 4096, NULL);
                const double dg = now() - t0;
                bg = dg < bg ? dg : bg;
                /* q holds the last variant's bytes: every variant writes the same. */
                same = memcmp(q, g, n / info->block_size * info->type_size) == 0;
            }
        }
        for (int dir = dq_only; dir < 2; dir++) {
            const double *b = dir ? bd : bq;
            double best = 1e30, ref = 0;
            printf("%-5s %-10s", info->name, dir ? "dequantize" : "quantize");
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
            printf(" %7.2f", gb / bm);
            if (ggml)
                dir ? printf(" %7s", "-") : printf(" %7.2f", gb / bg);
            printf(" %11.2fx", bm / best);
            ref > 0 ? printf(" %8.1fx", ref / best) : printf(" %9s", "-");
            if (ggml && !dir)
                printf(" %8.1fx  %s", bg / best, same ? "same" : "DIFFERENT");
            printf("\n");
        }
        fflush(stdout);
    }
    free(copy);
    lc_free(g);
    return 0;
}

/* The all-threads table: one job per thread, each a run of whole 4096-float rows. */
enum { MAXT = 256, ROW = 4096 };
enum job_kind { JOB_MEMCPY, JOB_OURS, JOB_GGML };

struct job {
    enum job_kind kind;
    lc_quantize_fn ours;
    ggml_quantize_chunk_fn ggml;
    int gguf_id;
    const float *x;
    float *y;
    uint8_t *q;
    size_t row0, nrows, row_bytes;
};

static void *run_job(void *arg) {
    const struct job *j = arg;
    const float *x = j->x + j->row0 * ROW;
    switch (j->kind) {
    case JOB_MEMCPY:
        memcpy(j->y + j->row0 * ROW, x, j->nrows * ROW * sizeof *x);
        break;
    case JOB_OURS:
        for (size_t r = 0; r < j->nrows; r++)
            j->ours(x + r * ROW, j->q + (j->row0 + r) * j->row_bytes, ROW);
        break;
    case JOB_GGML:     /* ggml_quantize_chunk's start is an element index into src and dst */
        j->ggml(j->gguf_id, j->x, j->q, (int64_t)(j->row0 * ROW), (int64_t)j->nrows, ROW, NULL);
        break;
    }
    return NULL;
}

/* Seconds for one pass of `proto` over every row on nt threads (wall clock). A thread that
 * cannot be started runs its share on this one, still inside the timing. */
static double timed_pass(struct job proto, size_t rows, int nt) {
    pthread_t tid[MAXT];
    bool started[MAXT];
    struct job jobs[MAXT];
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (int i = 0; i < nt; i++) {
        jobs[i] = proto;
        jobs[i].row0 = rows * (size_t)i / (size_t)nt;
        jobs[i].nrows = rows * (size_t)(i + 1) / (size_t)nt - jobs[i].row0;
        started[i] = pthread_create(&tid[i], NULL, run_job, &jobs[i]) == 0;
        if (!started[i])
            run_job(&jobs[i]);
    }
    for (int i = 0; i < nt; i++)
        if (started[i])
            pthread_join(tid[i], NULL);
    clock_gettime(CLOCK_MONOTONIC, &b);
    return (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) * 1e-9;
}

static int threaded(int nt, int reps, const char *tlist, float *x, float *y, uint8_t *q,
                    size_t n) {
    int failed;
    const ggml_quantize_chunk_fn ggml = load_ggml(&failed);
    if (failed)
        return 1;
    const lc_qkernels *k = lc_qkernels_best();
    const size_t rows = n / ROW;
    const double gb = (double)n * sizeof(float) / 1e9;
    printf("%d threads (%s), rows of %d split evenly, wall clock, best of %d; GB/s of f32\n",
           nt, k->name, ROW, reps);
    timed_pass((struct job){ .kind = JOB_MEMCPY, .x = x, .y = y }, rows, nt);   /* warm-up */
    printf("%-5s %8s %8s%s %12s%s\n", "type", k->name, "memcpy", ggml ? "     ggml" : "",
           "ours/memcpy", ggml ? "  ours/ggml" : "");
    for (int t = 0; t < LC_DT_COUNT; t++) {
        if (!lc_quant_supported((lc_dtype)t) || !listed(tlist, lc_dtype_name((lc_dtype)t)))
            continue;
        const lc_dtype_info *info = lc_dtype_get((lc_dtype)t);
        struct job ours = { .kind = JOB_OURS, .ours = lc_qk_quantize(k, (lc_dtype)t), .x = x,
                            .q = q, .row_bytes = ROW / info->block_size * info->type_size };
        struct job mem = { .kind = JOB_MEMCPY, .x = x, .y = y };
        struct job gg = { .kind = JOB_GGML, .ggml = ggml, .gguf_id = (int)info->gguf_id, .x = x,
                          .q = q };
        double bo = 1e30, bm = 1e30, bg = 1e30;
        for (int r = 0; r < reps; r++) {
            double d = timed_pass(mem, rows, nt);
            bm = d < bm ? d : bm;
            d = timed_pass(ours, rows, nt);
            bo = d < bo ? d : bo;
            if (ggml) {
                d = timed_pass(gg, rows, nt);
                bg = d < bg ? d : bg;
            }
        }
        printf("%-5s %8.2f %8.2f", info->name, gb / bo, gb / bm);
        if (ggml)
            printf(" %8.2f", gb / bg);
        printf(" %11.2fx", bm / bo);
        if (ggml)
            printf(" %9.1fx", bg / bo);
        printf("\n");
        fflush(stdout);
    }
    return 0;
}

int main(int argc, char **argv) {
    const char *clk = getenv("LC_BENCH_CLOCK");
    if (clk && strcmp(clk, "cpu") == 0)
        g_clock = CLOCK_THREAD_CPUTIME_ID;
    const size_t mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 64;
    const int reps = argc > 2 ? atoi(argv[2]) : 3;
    const size_t n = mib * 1024 * 1024 / sizeof(float) / 4096 * 4096;   /* rows of 4096 */
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
    const char *th = getenv("LC_BENCH_THREADS");
    const int nt = th ? atoi(th) : 0;
    if (rc == 0 && nt > 1)
        rc = threaded(nt < MAXT ? nt : MAXT, reps, argc > 4 ? argv[4] : NULL, x, y, q, n);
done:
    lc_free(x), lc_free(y), lc_free(q);
    return rc;
}
