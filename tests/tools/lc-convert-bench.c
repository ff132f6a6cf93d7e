/* lc-convert-bench: test-only timing loop for the common lc_convert rows.
 *
 *   lc-convert-bench [MIB]
 *
 * Converts MIB mebibytes of source data (default 64) for each common pair, best of 5
 * runs, and prints source MB/s, destination MB/s and memcpy of the same source bytes
 * for scale; then the same F32->F16 through lc_tensor_cast, read in 1 MiB pieces.
 * Not a test: nothing is asserted, and `make check` never runs it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "libconvert/alloc.h"
#include "libconvert/bytes.h"
#include "libconvert/convert.h"
#include "libconvert/tensor.h"

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    const size_t mib = argc > 1 ? (size_t)strtoul(argv[1], NULL, 10) : 64;
    const size_t bytes = (mib ? mib : 1) << 20;
    uint8_t *src = lc_malloc(bytes), *dst = lc_malloc(2 * bytes);
    if (!src || !dst) {
        fprintf(stderr, "lc-convert-bench: out of memory\n");
        return 1;
    }
    uint32_t seed = 12345;                         /* f32 values spread over [-4, 4) */
    for (size_t i = 0; i + 4 <= bytes; i += 4) {
        seed = seed * 1664525u + 1013904223u;
        lc_store_le32(src + i, lc_f32_to_bits((float)(seed >> 8) * 0x1p-21f - 4.0f));
    }
    static const struct { lc_dtype from, to; } pairs[] = {
        { LC_DT_F32, LC_DT_F16 }, { LC_DT_BF16, LC_DT_F16 }, { LC_DT_F16, LC_DT_F32 },
        { LC_DT_F32, LC_DT_BF16 }, { LC_DT_BF16, LC_DT_F32 }, { LC_DT_F16, LC_DT_BF16 },
        { LC_DT_F64, LC_DT_F16 }, { LC_DT_I32, LC_DT_I16 },
    };
    double best = 1e9;
    for (int r = 0; r < 5; r++) {
        double t0 = now();
        memcpy(dst, src, bytes);
        double t = now() - t0;
        best = t < best ? t : best;
    }
    printf("%-12s %10.0f MB/s\n", "memcpy", (double)bytes / best / 1e6);
    for (size_t p = 0; p < sizeof pairs / sizeof *pairs; p++) {
        const size_t fs = lc_dtype_get(pairs[p].from)->type_size;
        const size_t ts = lc_dtype_get(pairs[p].to)->type_size;
        const size_t n = bytes / fs;
        if (pairs[p].from == LC_DT_I32)          /* values that fit, so the loop runs through */
            for (size_t i = 0; i < n; i++)
                lc_store_le32(src + 4 * i, (uint32_t)(i & 0x3fff));
        best = 1e9;
        for (int r = 0; r < 5; r++) {
            double t0 = now();
            if (lc_convert(pairs[p].from, src, pairs[p].to, dst, n, NULL) != LC_OK) {
                fprintf(stderr, "lc-convert-bench: conversion failed\n");
                return 1;
            }
            double t = now() - t0;
            best = t < best ? t : best;
        }
        char name[32];
        snprintf(name, sizeof name, "%s->%s", lc_dtype_name(pairs[p].from),
                 lc_dtype_name(pairs[p].to));
        printf("%-12s %10.0f MB/s in %10.0f MB/s out %8.0f Melem/s\n", name,
               (double)(n * fs) / best / 1e6, (double)(n * ts) / best / 1e6,
               (double)n / best / 1e6);
    }
    /* The lazy cast over a zero-copy view, read in 1 MiB pieces as a writer would. */
    for (size_t i = 0; i + 4 <= bytes; i += 4)
        lc_store_le32(src + i, lc_f32_to_bits((float)(i % 1000) * 0.01f));
    char name[] = "bench";
    lc_tensor t = { .name = name, .dtype = LC_DT_F32, .ndim = 1, .shape = { bytes / 4 },
                    .nbytes = bytes / 4 * 4, .data = src, .file_offset = LC_NO_OFFSET };
    if (lc_tensor_cast(&t, LC_DT_F16, NULL) != LC_OK)
        return 1;
    best = 1e9;
    for (int r = 0; r < 5; r++) {
        double t0 = now();
        for (uint64_t off = 0; off < t.nbytes; off += 1 << 20) {
            size_t k = t.nbytes - off < (1 << 20) ? (size_t)(t.nbytes - off) : (1 << 20);
            if (lc_tensor_read(&t, off, dst + off, k, NULL) != LC_OK)
                return 1;
        }
        double dt = now() - t0;
        best = dt < best ? dt : best;
    }
    printf("%-12s %10.0f MB/s in %10.0f MB/s out\n", "cast F32->F16", (double)bytes / best / 1e6,
           (double)t.nbytes / best / 1e6);
    t.ops->free(t.ctx);
    lc_free(src);
    lc_free(dst);
    return 0;
}
