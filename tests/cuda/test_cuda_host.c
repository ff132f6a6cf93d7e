/* The CUDA back end's arithmetic without a GPU: quant/cuda/block_ops.h compiled by nvcc
 * for the host (tests/cuda/host.cu) against the CPU reference, byte for byte.
 *
 * Two builds of the same functions are held against the reference:
 *   cuda-host    every float operation is the host's own;
 *   cuda-nanfix  every NaN result is rewritten from the operands as the device code
 *                does it (LC_CU_NANFIX), so the device's own NaN bits (one canonical
 *                NaN) cannot reach the output: this is the device's arithmetic.
 * The block kernels go through tests/unit/test_quant_variants.c, built into this binary
 * with these two tables as its variants (fixtures/quant hard and special inputs,
 * ties, subnormals, signed zeros, huge values, NaN and infinities in every lane, random
 * bits as floats and as blocks, 4M values of 15 kinds; see that file). This file adds
 * the element conversions (every f16 and bf16 pattern, a sweep of f32 patterns with
 * every rounding tie) and lc_cu_roundf against libm's roundf.
 * LC_CUDA_EXHAUSTIVE=1 sweeps every one of the 2^32 f32 patterns instead. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "libconvert/convert.h"
#include "libconvert/dtype.h"
#include "quant/blocks.h"
#include "quant/quant.h"
#include "quant/types.h"

/* ---- the two builds of tests/cuda/host.cu ---- */

#define DECLARE_HOST(T, stem) LC_QUANT_DECLARE(stem, cuhost) LC_QUANT_DECLARE(stem, cunanfix)
LC_QUANT_TYPES(DECLARE_HOST)
int lc_convert_cuhost(const char *op, const void *src, void *dst, size_t n);
int lc_convert_cunanfix(const char *op, const void *src, void *dst, size_t n);
float lc_roundf_cuhost(float v);
float lc_roundf_cunanfix(float v);

#define Q_HOST(T, stem) [LC_DT_##T] = lc_##stem##_quantize_cuhost,
#define DQ_HOST(T, stem) [LC_DT_##T] = lc_##stem##_dequantize_cuhost,
#define Q_FIX(T, stem) [LC_DT_##T] = lc_##stem##_quantize_cunanfix,
#define DQ_FIX(T, stem) [LC_DT_##T] = lc_##stem##_dequantize_cunanfix,
static const lc_qkernels cuda_host = {
    .name = "cuda-host",
    .quantize = { LC_QUANT_TYPES(Q_HOST) },
    .dequantize = { LC_QUANT_TYPES(DQ_HOST) },
};
static const lc_qkernels cuda_nanfix = {
    .name = "cuda-nanfix",
    .quantize = { LC_QUANT_TYPES(Q_FIX) },
    .dequantize = { LC_QUANT_TYPES(DQ_FIX) },
};

/* test_quant_variants.c's variants() in this binary (-DLC_TEST_VARIANTS). */
int lc_test_cuda_variants(const lc_qkernels **out);
int lc_test_cuda_variants(const lc_qkernels **out) {
    out[0] = &cuda_host;
    out[1] = &cuda_nanfix;
    return 2;
}

typedef int (*convert_fn)(const char *op, const void *src, void *dst, size_t n);
static const convert_fn converters[] = { lc_convert_cuhost, lc_convert_cunanfix };
static const char *const converter_names[] = { "cuda-host", "cuda-nanfix" };

/* Every type's item size agrees with the dtype table (the kernels index blocks by it). */
Test(cuda_host, block_sizes_match_dtype_table) {
#define SIZES(T, stem)                                                                    \
    cr_assert_eq(lc_dtype_get(LC_DT_##T)->type_size, sizeof(lc_block_##stem), #T);       \
    cr_assert_eq(lc_dtype_get(LC_DT_##T)->block_size, LC_QK_##T, #T);
#define LC_QK_Q8_0 LC_QK8_0
#define LC_QK_Q4_0 LC_QK4_0
#define LC_QK_Q4_1 LC_QK4_1
#define LC_QK_Q5_0 LC_QK5_0
#define LC_QK_Q5_1 LC_QK5_1
#define LC_QK_Q2_K LC_QK_K
#define LC_QK_Q3_K LC_QK_K
#define LC_QK_Q4_K LC_QK_K
#define LC_QK_Q5_K LC_QK_K
#define LC_QK_Q6_K LC_QK_K
    LC_QUANT_TYPES(SIZES)
}

/* One conversion of n elements by lc_convert and by each build; the first difference. */
static void check_convert(const char *op, lc_dtype from, lc_dtype to, const void *src,
                          size_t n) {
    const size_t out = n * lc_dtype_get(to)->type_size;
    uint8_t *want = malloc(out), *got = malloc(out);
    cr_assert(want && got);
    lc_error err = { 0 };
    cr_assert_eq(lc_convert(from, src, to, want, n, &err), LC_OK, "%s", err.msg);
    for (size_t v = 0; v < 2; v++) {
        memset(got, 0xa5, out);
        cr_assert_eq(converters[v](op, src, got, n), 1, "no op %s", op);
        if (memcmp(want, got, out) != 0) {
            size_t i = 0;
            while (want[i] == got[i])
                i++;
            const size_t e = i / lc_dtype_get(to)->type_size;
            uint32_t in = 0;
            memcpy(&in, (const uint8_t *)src + e * lc_dtype_get(from)->type_size,
                   lc_dtype_get(from)->type_size);
            cr_assert_fail("%s %s: element %zu (input bits 0x%08x) differs from lc_convert",
                           converter_names[v], op, e, in);
        }
    }
    free(want), free(got);
}

Test(cuda_host, every_16_bit_pattern) {
    uint16_t *h = malloc(65536 * sizeof *h);
    cr_assert_not_null(h);
    for (uint32_t i = 0; i < 65536; i++)
        h[i] = (uint16_t)i;
    check_convert("f16_f32", LC_DT_F16, LC_DT_F32, h, 65536);
    check_convert("bf16_f32", LC_DT_BF16, LC_DT_F32, h, 65536);
    check_convert("f16_bf16", LC_DT_F16, LC_DT_BF16, h, 65536);
    check_convert("bf16_f16", LC_DT_BF16, LC_DT_F16, h, 65536);
    free(h);
}

/* f32 patterns: every sign and exponent with the mantissas where rounding to f16 and to
 * bf16 decides (the dropped bits at 0, 1, just below, at and just above one half, all
 * ones, under both parities of the kept bit), then a strided sweep of all 2^32 (stride 7;
 * every pattern under LC_CUDA_EXHAUSTIVE=1). */
static void check_f32_narrowing(const uint32_t *u, size_t n) {
    check_convert("f32_f16", LC_DT_F32, LC_DT_F16, u, n);
    check_convert("f32_bf16", LC_DT_F32, LC_DT_BF16, u, n);
}

Test(cuda_host, f32_narrowing_ties_and_sweep, .timeout = 1200) {
    enum { CHUNK = 1 << 20 };
    uint32_t *u = malloc(CHUNK * sizeof *u);
    cr_assert_not_null(u);
    static const uint32_t low13[] = { 0, 1, 0xfff, 0x1000, 0x1001, 0x1fff };
    static const uint32_t low16[] = { 0, 1, 0x7fff, 0x8000, 0x8001, 0xffff };
    size_t n = 0;
    for (uint32_t se = 0; se < 512; se++) {
        for (uint32_t hi = 0; hi < 1024; hi++)          /* f16: 10 kept mantissa bits */
            for (size_t k = 0; k < 6; k++)
                u[n++] = se << 23 | hi << 13 | low13[k];
        for (uint32_t hi = 0; hi < 128; hi++)           /* bf16: 7 kept mantissa bits */
            for (size_t k = 0; k < 6; k++)
                u[n++] = se << 23 | hi << 16 | low16[k];
        if (n + 1024 * 6 + 128 * 6 > CHUNK) {
            check_f32_narrowing(u, n);
            n = 0;
        }
    }
    check_f32_narrowing(u, n);
    const char *ex = getenv("LC_CUDA_EXHAUSTIVE");
    const uint64_t stride = ex && strcmp(ex, "1") == 0 ? 1 : 7;
    n = 0;
    for (uint64_t v = 0; v < (uint64_t)1 << 32; v += stride) {
        u[n++] = (uint32_t)v;
        if (n == CHUNK) {
            check_f32_narrowing(u, n);
            n = 0;
        }
    }
    check_f32_narrowing(u, n);
    free(u);
}

/* lc_cu_roundf is libm's roundf on every f32 pattern (stride 3; all under
 * LC_CUDA_EXHAUSTIVE=1), NaN for NaN. */
Test(cuda_host, roundf_matches_libm, .timeout = 1200) {
    const char *ex = getenv("LC_CUDA_EXHAUSTIVE");
    const uint64_t stride = ex && strcmp(ex, "1") == 0 ? 1 : 3;
    for (uint64_t v = 0; v < (uint64_t)1 << 32; v += stride) {
        const uint32_t b = (uint32_t)v;
        float f, want, got[2];
        memcpy(&f, &b, 4);
        want = roundf(f);
        got[0] = lc_roundf_cuhost(f);
        got[1] = lc_roundf_cunanfix(f);
        for (int k = 0; k < 2; k++) {
            if (isnan(want) && isnan(got[k]))
                continue;
            if (memcmp(&want, &got[k], 4) != 0)
                cr_assert_fail("%s roundf(0x%08x): want %a, got %a", converter_names[k], b,
                               (double)want, (double)got[k]);
        }
    }
}
