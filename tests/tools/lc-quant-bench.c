/* tests/tools/lc-quant-bench.c: single-thread throughput of each kernel variant.
 *   lc-quant-bench [MIB_OF_F32 [REPS [INPUT.f32]]]   defaults 64 MiB, 3 repetitions
 * Prints one line per type: quantize and dequantize speed in MB/s of f32 data
 * (10^6 bytes of input floats per second), best of REPS. The input is generated
 * (roughly normal, like weights) unless INPUT.f32 gives raw little-endian floats, of
 * which the first MIB_OF_F32 MiB are used (scripts/bench/quant_ggml.py times ggml on the
 * same file). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "libconvert/alloc.h"
#include "libconvert/dtype.h"
#include "quant/quant.h"

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    const size_t mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 64;
    const int reps = argc > 2 ? atoi(argv[2]) : 3;
    const size_t n = mib * 1024 * 1024 / sizeof(float) / 256 * 256;
    float *x = lc_malloc_array(n, sizeof *x), *y = lc_malloc_array(n, sizeof *y);
    uint8_t *q = lc_malloc_array(n, 2);   /* >= 34/32 bytes per float */
    if (!x || n == 0 || !y || !q || reps < 1) {
        fprintf(stderr, "usage: lc-quant-bench [MIB_OF_F32 [REPS [INPUT.f32]]]\n");
        return 2;
    }
    if (argc > 3) {
        FILE *f = fopen(argv[3], "rb");
        const size_t got = f ? fread(x, sizeof *x, n, f) : 0;
        if (f)
            fclose(f);
        if (got != n) {
            fprintf(stderr, "lc-quant-bench: %s holds fewer than %zu floats\n", argv[3], n);
            return 2;
        }
    } else {
        uint32_t s = 12345;
        for (size_t i = 0; i < n; i++) {   /* roughly normal, like weights */
            float a = 0;
            for (int k = 0; k < 4; k++) {
                s = s * 1664525u + 1013904223u;
                a += (float)(s >> 8) / 16777216.0f;
            }
            x[i] = (a - 2.0f) * 0.05f;
        }
    }
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
    lc_free(x), lc_free(y), lc_free(q);
    return 0;
}
