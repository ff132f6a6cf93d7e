/* tests/tools/lc-imatrix-bench.c: the row entries (importance-weighted quantization and
 * the types written by rows only) against ggml's ggml_quantize_chunk, side by side.
 *   lc-imatrix-bench [MIB_OF_F32 [REPS [TYPES]]]
 * MIB_OF_F32 (default 8) of weight-like floats as rows of 4096, one importance vector
 * (positive, spread over decades), best of REPS (default 3). For each type (default:
 * every type of quant/types.h LC_WRITE_TYPES that uses or requires an imatrix), with the
 * imatrix and, where the type runs without one, without it: MB/s of f32 for ours
 * (lc_quantize_rows_imatrix: the best variant's kernels) and for ggml (LC_BENCH_GGML =
 * llama-cpp-python's libggml-base.so), ours over ggml, and whether the bytes are equal;
 * on one thread and, with LC_BENCH_THREADS=N (N > 1), on N threads each taking an equal
 * run of rows (as llama.cpp's quantizer splits a tensor). Both sides' one-time table
 * setup (the IQ grids' neighbour lists) runs before the clock starts.
 * LC_BENCH_CLOCK=cpu times with the thread's CPU clock (single-thread rows only). */
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

typedef size_t (*chunk_fn)(int, const float *, void *, int64_t, int64_t, int64_t,
                           const float *);

enum { COLS = 4096 };

static clockid_t g_clock = CLOCK_MONOTONIC;

static double now(void) {
    struct timespec ts;
    clock_gettime(g_clock, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint32_t g_seed = 777;
static float urand(void) {
    g_seed = g_seed * 1664525u + 1013904223u;
    return (float)(g_seed >> 8) / 16777216.0f;
}

typedef struct job {
    chunk_fn ggml;              /* NULL: ours */
    lc_dtype t;
    const float *x, *im;
    uint8_t *y;
    size_t rows, row_bytes;
} job;

static void *run(void *arg) {
    const job *j = arg;
    if (j->ggml) {
        j->ggml(lc_dtype_get(j->t)->gguf_id, j->x, j->y, 0, (int64_t)j->rows, COLS, j->im);
    } else {
        lc_error err = { 0 };
        if (lc_quantize_rows_imatrix(j->t, j->x, j->y, j->rows, COLS, j->im, &err) != LC_OK)
            fprintf(stderr, "lc-imatrix-bench: %s\n", err.msg);
    }
    return NULL;
}

/* Seconds for rows on `threads` threads. */
static double timed(chunk_fn g, lc_dtype t, const float *x, const float *im, uint8_t *y,
                    size_t rows, size_t row_bytes, int threads) {
    pthread_t tid[64];
    job jobs[64];
    const double t0 = now();
    for (int k = 0; k < threads; k++) {
        const size_t r0 = rows * (size_t)k / (size_t)threads;
        const size_t r1 = rows * (size_t)(k + 1) / (size_t)threads;
        jobs[k] = (job){ g, t, x + r0 * COLS, im, y + r0 * row_bytes, r1 - r0, row_bytes };
        if (threads == 1)
            run(&jobs[k]);
        else
            pthread_create(&tid[k], NULL, run, &jobs[k]);
    }
    for (int k = 0; threads > 1 && k < threads; k++)
        pthread_join(tid[k], NULL);
    return now() - t0;
}

static bool uses_imatrix(lc_dtype t) {
    const lc_imatrix_use u = lc_quant_imatrix_use(t);
    return u == LC_IMATRIX_USES || u == LC_IMATRIX_REQUIRES;
}

int main(int argc, char **argv) {
    const double mib = argc > 1 ? atof(argv[1]) : 8;
    const int reps = argc > 2 ? atoi(argv[2]) : 3;
    const char *types = argc > 3 ? argv[3] : NULL;
    const char *clk = getenv("LC_BENCH_CLOCK");
    if (clk && strcmp(clk, "cpu") == 0)
        g_clock = CLOCK_THREAD_CPUTIME_ID;
    const char *th = getenv("LC_BENCH_THREADS");
    int threads = th ? atoi(th) : 1;
    threads = threads < 1 ? 1 : threads > 64 ? 64 : threads;
    chunk_fn ggml = NULL;
    const char *path = getenv("LC_BENCH_GGML");
    if (path && *path) {
        void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        void *sym = lib ? dlsym(lib, "ggml_quantize_chunk") : NULL;
        if (!sym) {
            fprintf(stderr, "lc-imatrix-bench: %s: %s\n", path, dlerror());
            return 1;
        }
        memcpy(&ggml, &sym, sizeof ggml);
    }
    const size_t rows = (size_t)(mib * 1048576.0 / 4 / COLS) ? (size_t)(mib * 1048576.0 / 4 / COLS) : 1;
    float *x = lc_malloc(rows * COLS * sizeof *x), im[COLS];
    uint8_t *a = lc_malloc(rows * COLS * 2), *b = lc_malloc(rows * COLS * 2);
    if (!x || !a || !b)
        return 1;
    for (size_t i = 0; i < rows * COLS; i++) {
        float s = 0;
        for (int k = 0; k < 4; k++)
            s += urand();
        x[i] = (s - 2.0f) * 0.05f;
    }
    for (int i = 0; i < COLS; i++) {
        const float u = urand();
        im[i] = u * u * u * 20.0f + (i % 97 == 0 ? 0.0f : 1e-4f);
    }
    printf("%-8s %-7s %8s | %10s %10s %8s %5s\n", "type", "imatrix", "threads", "ours MB/s",
           "ggml MB/s", "ours/ggml", "same");
    for (int t = 1; t < LC_DT_COUNT; t++) {
        const lc_dtype dt = (lc_dtype)t;
        if (!uses_imatrix(dt))
            continue;
        if (types) {
            const char *name = lc_dtype_name(dt), *p = strstr(types, name);
            const size_t n = strlen(name);
            if (!p || (p != types && p[-1] != ',') || (p[n] && p[n] != ','))
                continue;
        }
        uint64_t rb;
        lc_dtype_row_bytes(dt, COLS, &rb);
        lc_error err = { 0 };
        if (lc_quant_prepare(dt, &err) != LC_OK)
            return 1;
        for (int with = 1; with >= 0; with--) {
            if (!with && lc_quant_imatrix_use(dt) == LC_IMATRIX_REQUIRES)
                continue;
            const float *w = with ? im : NULL;
            if (ggml)       /* ggml's one-time setup (its IQ tables) outside the clock */
                ggml(lc_dtype_get(dt)->gguf_id, x, b, 0, 1, COLS, w);
            for (int nt = 1; nt <= threads; nt = nt == 1 && threads > 1 ? threads : nt + threads) {
                double ours = 1e30, theirs = 1e30;
                for (int r = 0; r < reps; r++) {
                    const double s1 = timed(NULL, dt, x, w, a, rows, (size_t)rb, nt);
                    ours = s1 < ours ? s1 : ours;
                    if (ggml) {
                        const double s2 = timed(ggml, dt, x, w, b, rows, (size_t)rb, nt);
                        theirs = s2 < theirs ? s2 : theirs;
                    }
                }
                const double mb = (double)rows * COLS * 4 / 1e6;
                if (ggml)
                    printf("%-8s %-7s %8d | %10.1f %10.1f %8.2fx %5s\n", lc_dtype_name(dt),
                           with ? "yes" : "no", nt, mb / ours, mb / theirs, theirs / ours,
                           memcmp(a, b, rows * (size_t)rb) == 0 ? "yes" : "NO");
                else
                    printf("%-8s %-7s %8d | %10.1f %10s %8s %5s\n", lc_dtype_name(dt),
                           with ? "yes" : "no", nt, mb / ours, "-", "-", "-");
                fflush(stdout);
            }
        }
    }
    lc_free(x);
    lc_free(a);
    lc_free(b);
    return 0;
}
