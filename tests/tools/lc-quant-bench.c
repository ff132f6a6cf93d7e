/* tests/tools/lc-quant-bench.c: single-thread throughput of each kernel variant.
 *   lc-quant-bench [MIB_OF_F32 [REPS [GGML_LIB]]]    defaults 64 MiB, 3 repetitions
 * Prints one line per type we quantize: quantize and dequantize speed in MB/s of f32
 * data (10^6 bytes of input floats per second), best of REPS, on roughly normal floats
 * like weights. With GGML_LIB (a libggml-base.so, e.g. build/llama-venv's: see
 * scripts/bench/quant.sh), the line also gives ggml_quantize_chunk's speed on the same
 * floats, timed in turns with ours so that the machine's load hits both alike, and
 * whether its bytes equal ours. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "libconvert/alloc.h"
#include "libconvert/dtype.h"
#include "quant/quant.h"

/* ggml.h: size_t ggml_quantize_chunk(enum ggml_type, const float *src, void *dst,
 * int64_t start, int64_t nrows, int64_t n_per_row, const float *imatrix). */
typedef size_t (*ggml_quantize_chunk_fn)(int, const float *, void *, int64_t, int64_t,
                                         int64_t, const float *);

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    const size_t mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 64;
    const int reps = argc > 2 ? atoi(argv[2]) : 3;
    const size_t n = mib * 1024 * 1024 / sizeof(float) / 4096 * 4096;
    float *x = lc_malloc_array(n, sizeof *x), *y = lc_malloc_array(n, sizeof *y);
    uint8_t *q = lc_malloc_array(n, 2), *g = lc_malloc_array(n, 2);  /* >= 34/32 B/float */
    if (!x || n == 0 || !y || !q || !g || reps < 1) {
        fprintf(stderr, "usage: lc-quant-bench [MIB_OF_F32 [REPS [GGML_LIB]]]\n");
        return 2;
    }
    ggml_quantize_chunk_fn ggml = NULL;
    if (argc > 3) {
        void *lib = dlopen(argv[3], RTLD_NOW | RTLD_LOCAL);
        void *sym = lib ? dlsym(lib, "ggml_quantize_chunk") : NULL;
        if (!sym) {
            fprintf(stderr, "lc-quant-bench: %s: %s\n", argv[3], dlerror());
            return 2;
        }
        memcpy(&ggml, &sym, sizeof ggml);        /* object to function pointer, POSIX-style */
    }
    uint32_t s = 12345;
    for (size_t i = 0; i < n; i++) {       /* roughly normal, like weights */
        float a = 0;
        for (int k = 0; k < 4; k++) {
            s = s * 1664525u + 1013904223u;
            a += (float)(s >> 8) / 16777216.0f;
        }
        x[i] = (a - 2.0f) * 0.05f;
    }
    const lc_qkernels *k = lc_qkernels_best();
    printf("variant %s, %zu MiB of f32, best of %d\n", k->name, mib, reps);
    for (int t = 0; t < LC_DT_COUNT; t++) {
        if (!lc_quant_supported((lc_dtype)t))
            continue;
        const lc_dtype_info *info = lc_dtype_get((lc_dtype)t);
        double bq = 1e30, bd = 1e30, bg = 1e30;
        for (int r = 0; r < reps; r++) {
            double t0 = now();
            lc_qk_quantize(k, (lc_dtype)t)(x, q, n);
            double t1 = now();
            lc_qk_dequantize(k, (lc_dtype)t)(q, y, n);
            double t2 = now();
            bq = t1 - t0 < bq ? t1 - t0 : bq;
            bd = t2 - t1 < bd ? t2 - t1 : bd;
            if (ggml) {                     /* rows of 4096, as a weight matrix's */
                t0 = now();
                ggml(info->gguf_id, x, g, 0, (int64_t)(n / 4096), 4096, NULL);
                t1 = now();
                bg = t1 - t0 < bg ? t1 - t0 : bg;
            }
        }
        const double mb = (double)n * sizeof(float) / 1e6;
        printf("%-5s quantize %8.1f MB/s   dequantize %8.1f MB/s", info->name, mb / bq, mb / bd);
        if (ggml)
            printf("   ggml %8.1f MB/s  %.2fx  %s", mb / bg, bg / bq,
                   memcmp(q, g, n / info->block_size * info->type_size) ? "DIFFERENT" : "same");
        printf("\n");
    }
    lc_free(x), lc_free(y), lc_free(q), lc_free(g);
    return 0;
}
