/* tests/tools/lc-cuda-check.c: the CUDA back end on a real device, for make check-cuda
 * (and under compute-sanitizer, which is why this is a plain program, not Criterion).
 *   lc-cuda-check probe           prints the device and exits 0, or why there is none
 *                                 and exits 77 (check-cuda then skips, saying why)
 *   lc-cuda-check kernels [N]     every pair the device converts (f32, f16, bf16 and
 *                                 every block type, each way) on N elements (default
 *                                 2^20) of weight-like data with zeros, subnormals and
 *                                 huge values, and every 16-bit pattern through the plain
 *                                 conversions, against the CPU path byte for byte; one
 *                                 line per pair; exit 1 on any difference, 77 without
 *                                 a device.
 * LC_CUDA_EMULATE=1 runs it on the emulated device (how it is tested without a GPU). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libconvert/convert.h"
#include "libconvert/dtype.h"
#include "quant/device.h"
#include "quant/quant.h"
#include "quant/types.h"

enum { SKIP = 77 };

static uint32_t rng(uint32_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 17;
    *s ^= *s << 5;
    return *s;
}

static void fill(float *x, size_t n, uint32_t seed) {
    uint32_t s = seed | 1;
    for (size_t i = 0; i < n; i++) {
        const float u = (float)(rng(&s) >> 8) / 8388608.0f - 1.0f;
        float v = ldexpf(u, (int)(i / 256 % 60) - 30);
        switch (rng(&s) % 128) {
        case 0: v = 0.0f; break;
        case 1: v = -0.0f; break;
        case 2: v = ldexpf(u, -140); break;                   /* subnormal */
        case 3: v = ldexpf(u, 120); break;                    /* huge */
        case 4: v = (float)(int)(rng(&s) % 17) - 8.5f; break; /* ties */
        default: break;
        }
        x[i] = v;
    }
}

static int cpu(lc_dtype from, const void *src, lc_dtype to, void *dst, size_t n) {
    lc_error err = { 0 };
    const bool fq = lc_dtype_is_quant(from), tq = lc_dtype_is_quant(to);
    if (!fq && !tq)
        return lc_convert(from, src, to, dst, n, &err) == LC_OK;
    float *f = malloc(n * sizeof *f);
    int ok = f != NULL;
    ok = ok && (fq ? lc_dequantize_rows(from, src, f, 1, n, &err) :
                     lc_convert(from, src, LC_DT_F32, f, n, &err)) == LC_OK;
    ok = ok && (tq ? lc_quantize_rows(to, f, dst, 1, n, &err) :
                     lc_convert(LC_DT_F32, f, to, dst, n, &err)) == LC_OK;
    free(f);
    return ok;
}

static size_t bytes_of(lc_dtype t, size_t n) {
    const lc_dtype_info *i = lc_dtype_get(t);
    return n / i->block_size * i->type_size;
}

/* One pair: 1 when the device's bytes are the CPU's. */
static int pair(lc_qdev *d, lc_dtype from, lc_dtype to, const void *src, size_t n) {
    const size_t out = bytes_of(to, n);
    uint8_t *want = malloc(out), *got = malloc(out);
    lc_error err = { 0 };
    int ok = want && got && cpu(from, src, to, want, n);
    if (ok && lc_qdev_convert(d, from, src, to, got, n, &err) != LC_OK) {
        printf("FAILED %s -> %s: %s\n", lc_dtype_name(from), lc_dtype_name(to), err.msg);
        ok = 0;
    } else if (ok) {
        size_t i = 0;
        while (i < out && want[i] == got[i])
            i++;
        ok = i == out;
        printf("%s %s -> %s, %zu elements%s", ok ? "ok" : "DIFFERS", lc_dtype_name(from),
               lc_dtype_name(to), n, ok ? "\n" : "");
        if (!ok)
            printf(": first at byte %zu of %zu\n", i, out);
    }
    free(want), free(got);
    return ok;
}

static int kernels(lc_qdev *d, size_t n) {
    n = n / 256 * 256;
    if (n == 0)
        n = 256;
    static const lc_dtype blocks[] = { LC_QUANT_TYPES(LC_QUANT_DTYPE) };
    lc_dtype all[3 + sizeof blocks / sizeof blocks[0]];
    const size_t na = sizeof all / sizeof all[0];
    all[0] = LC_DT_F32, all[1] = LC_DT_F16, all[2] = LC_DT_BF16;
    memcpy(all + 3, blocks, sizeof blocks);
    float *x = malloc(n * sizeof *x), *tame = malloc(n * sizeof *tame);
    uint8_t *src = malloc(n * 4 + 65536 * 4);
    if (!x || !tame || !src)
        return 0;
    fill(x, n, 2024);
    /* A block-type source is made from x with its huge values (2^120) brought to 2^14: a
     * block scale past f16's range would make the dequantized source hold inf and NaN,
     * the non-finite input gguf-quantize refuses and block_ops.h's rule 3 leaves to the
     * compiler (which NaN x86 keeps from two). The plain types and F32 -> every type
     * keep the huge values. */
    for (size_t i = 0; i < n; i++)
        tame[i] = fabsf(x[i]) > 0x1p15f ? copysignf(0x1p14f, x[i]) : x[i];
    int ok = 1;
    for (size_t a = 0; a < na; a++) {
        if (all[a] == LC_DT_F32)
            memcpy(src, x, n * 4);
        else if (!cpu(LC_DT_F32, lc_dtype_is_quant(all[a]) ? tame : x, all[a], src, n))
            return 0;
        for (size_t b = 0; b < na; b++)
            if (a != b)
                ok &= pair(d, all[a], all[b], src, n);
    }
    uint16_t *h = (uint16_t *)(void *)src;                  /* every 16-bit pattern */
    for (uint32_t i = 0; i < 65536; i++)
        h[i] = (uint16_t)i;
    static const lc_dtype plain[] = { LC_DT_F32, LC_DT_F16, LC_DT_BF16 };
    for (size_t a = 1; a < 3; a++)
        for (size_t b = 0; b < 3; b++)
            if (a != b)
                ok &= pair(d, plain[a], plain[b], h, 65536);
    free(x), free(tame), free(src);
    return ok;
}

int main(int argc, char **argv) {
    if (argc < 2 || (strcmp(argv[1], "probe") != 0 && strcmp(argv[1], "kernels") != 0)) {
        fprintf(stderr, "usage: lc-cuda-check probe | kernels [N]\n");
        return 2;
    }
    lc_qdev *d = NULL;
    lc_error err = { 0 };
    if (lc_qdev_open("cuda", &d, &err) != LC_OK) {
        printf("%s\n", err.msg);
        return SKIP;
    }
    printf("%s\n", lc_qdev_describe(d));
    int ok = 1;
    if (strcmp(argv[1], "kernels") == 0)
        ok = kernels(d, argc > 2 ? strtoull(argv[2], NULL, 10) : (size_t)1 << 20);
    lc_qdev_close(d);
    return ok ? 0 : 1;
}
