/* Unit tests for quant/: block sizes against the dtype table, known blocks, round-trip
 * error bounds, the tail and non-finite policies, binary16 conversion, dispatch and
 * lc_quantize_rows, and hand-made blocks of the dequantize-only types. Bit identity with
 * ggml is tested in tests/integration/test_quant.py (golden blocks, gguf-py) and
 * tests/llama/test_quant_ggml.py (ggml itself, through ctypes). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "libconvert/bytes.h"
#include "libconvert/dtype.h"
#include "quant/blocks.h"
#include "quant/quant.h"
#include "quant/quant_impl.h"

static const lc_dtype types[] = { LC_DT_Q8_0, LC_DT_Q4_0, LC_DT_Q4_1, LC_DT_Q5_0,
                                  LC_DT_Q5_1, LC_DT_Q2_K, LC_DT_Q3_K, LC_DT_Q4_K,
                                  LC_DT_Q5_K, LC_DT_Q6_K };
#define NTYPES (sizeof types / sizeof types[0])

/* The types we only dequantize: every other block type of the pinned ggml. */
static const lc_dtype dq_types[] = { LC_DT_Q8_1,   LC_DT_Q8_K,   LC_DT_IQ2_XXS, LC_DT_IQ2_XS,
                                     LC_DT_IQ3_XXS, LC_DT_IQ1_S, LC_DT_IQ4_NL, LC_DT_IQ3_S,
                                     LC_DT_IQ2_S,  LC_DT_IQ4_XS, LC_DT_IQ1_M,  LC_DT_TQ1_0,
                                     LC_DT_TQ2_0,  LC_DT_MXFP4,  LC_DT_NVFP4,  LC_DT_Q1_0,
                                     LC_DT_Q2_0 };
#define NDQ (sizeof dq_types / sizeof dq_types[0])

/* Deterministic normal-ish floats (sum of uniforms; no libc rand state). */
static void fill_normal(float *x, size_t n, uint32_t seed) {
    uint32_t s = seed * 2654435761u + 1;
    for (size_t i = 0; i < n; i++) {
        float acc = 0;
        for (int k = 0; k < 12; k++) {
            s = s * 1664525u + 1013904223u;
            acc += (float)(s >> 8) / 16777216.0f;
        }
        x[i] = acc - 6.0f;
    }
}

Test(quant, block_structs_match_dtype_table) {
    const struct { lc_dtype t; size_t size, block; } want[] = {
        { LC_DT_Q8_0, sizeof(lc_block_q8_0), LC_QK8_0 },
        { LC_DT_Q4_0, sizeof(lc_block_q4_0), LC_QK4_0 },
        { LC_DT_Q4_1, sizeof(lc_block_q4_1), LC_QK4_1 },
        { LC_DT_Q5_0, sizeof(lc_block_q5_0), LC_QK5_0 },
        { LC_DT_Q5_1, sizeof(lc_block_q5_1), LC_QK5_1 },
        { LC_DT_Q2_K, sizeof(lc_block_q2_K), LC_QK_K },
        { LC_DT_Q3_K, sizeof(lc_block_q3_K), LC_QK_K },
        { LC_DT_Q4_K, sizeof(lc_block_q4_K), LC_QK_K },
        { LC_DT_Q5_K, sizeof(lc_block_q5_K), LC_QK_K },
        { LC_DT_Q6_K, sizeof(lc_block_q6_K), LC_QK_K },
        { LC_DT_Q8_1, sizeof(lc_block_q8_1), LC_QK8_1 },
        { LC_DT_Q8_K, sizeof(lc_block_q8_K), LC_QK_K },
        { LC_DT_IQ2_XXS, sizeof(lc_block_iq2_xxs), LC_QK_K },
        { LC_DT_IQ2_XS, sizeof(lc_block_iq2_xs), LC_QK_K },
        { LC_DT_IQ2_S, sizeof(lc_block_iq2_s), LC_QK_K },
        { LC_DT_IQ3_XXS, sizeof(lc_block_iq3_xxs), LC_QK_K },
        { LC_DT_IQ3_S, sizeof(lc_block_iq3_s), LC_QK_K },
        { LC_DT_IQ1_S, sizeof(lc_block_iq1_s), LC_QK_K },
        { LC_DT_IQ1_M, sizeof(lc_block_iq1_m), LC_QK_K },
        { LC_DT_IQ4_NL, sizeof(lc_block_iq4_nl), LC_QK4_NL },
        { LC_DT_IQ4_XS, sizeof(lc_block_iq4_xs), LC_QK_K },
        { LC_DT_TQ1_0, sizeof(lc_block_tq1_0), LC_QK_K },
        { LC_DT_TQ2_0, sizeof(lc_block_tq2_0), LC_QK_K },
        { LC_DT_MXFP4, sizeof(lc_block_mxfp4), LC_QK_MXFP4 },
        { LC_DT_NVFP4, sizeof(lc_block_nvfp4), LC_QK_NVFP4 },
        { LC_DT_Q1_0, sizeof(lc_block_q1_0), LC_QK1_0 },
        { LC_DT_Q2_0, sizeof(lc_block_q2_0), LC_QK2_0 },
    };
    cr_assert_eq(sizeof want / sizeof want[0], NTYPES + NDQ, "a struct for every type");
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const lc_dtype_info *info = lc_dtype_get(want[i].t);
        cr_assert_eq(info->type_size, want[i].size, "%s bytes", info->name);
        cr_assert_eq(info->block_size, want[i].block, "%s block", info->name);
        cr_assert(lc_dequant_supported(want[i].t), "%s", info->name);
    }
    cr_assert_not(lc_quant_supported(LC_DT_F16));
    cr_assert_not(lc_dequant_supported(LC_DT_F16));
    cr_assert_not(lc_quant_supported(LC_DT_IQ2_XXS));
    cr_assert(lc_dequant_supported(LC_DT_IQ2_XXS));
    cr_assert_not(lc_quant_supported((lc_dtype)-1));
    cr_assert_not(lc_dequant_supported((lc_dtype)-1));
    cr_assert_not(lc_quant_supported(LC_DT_COUNT));
    cr_assert_not(lc_dequant_supported(LC_DT_COUNT));
}

/* Every block type libconvert/dtype.h knows (every one the pinned ggml defines) can be
 * read: a GGUF from llama.cpp never stops a tool for want of a dequantizer. */
Test(quant, every_block_type_dequantizes) {
    for (int t = 1; t < LC_DT_COUNT; t++)
        cr_assert_eq(lc_dequant_supported((lc_dtype)t), lc_dtype_is_quant((lc_dtype)t), "%s",
                     lc_dtype_name((lc_dtype)t));
}

/* quant/types.h is the one list: the reference table, lc_quant_supported() and the
 * file types derive from it. A type added there must be added to this file's tests too. */
Test(quant, type_list_is_the_tested_list) {
    static const lc_dtype listed[] = { LC_QUANT_TYPES(LC_QUANT_DTYPE) };
    static const lc_dtype dq_listed[] = { LC_DEQUANT_TYPES(LC_QUANT_DTYPE) };
    cr_assert_eq(sizeof listed / sizeof listed[0], NTYPES, "quant/types.h vs types[] here");
    for (size_t i = 0; i < NTYPES; i++)
        cr_assert_eq(listed[i], types[i], "%s", lc_dtype_name(listed[i]));
    cr_assert_eq(sizeof dq_listed / sizeof dq_listed[0], NDQ, "quant/types.h vs dq_types[]");
    for (size_t i = 0; i < NDQ; i++)
        cr_assert_eq(dq_listed[i], dq_types[i], "%s", lc_dtype_name(dq_listed[i]));
    for (int t = 0; t < LC_DT_COUNT; t++) {
        bool in = false, dq = false;
        for (size_t i = 0; i < NTYPES; i++)
            in = in || types[i] == (lc_dtype)t;
        for (size_t i = 0; i < NDQ; i++)
            dq = dq || dq_types[i] == (lc_dtype)t;
        cr_assert_not(in && dq, "%s in both lists", lc_dtype_name((lc_dtype)t));
        cr_assert_eq(lc_quant_supported((lc_dtype)t), in, "%s", lc_dtype_name((lc_dtype)t));
        cr_assert_eq(lc_dequant_supported((lc_dtype)t), in || dq, "%s",
                     lc_dtype_name((lc_dtype)t));
        cr_assert_eq(lc_qk_ref.quantize[t] != NULL, in, "%s", lc_dtype_name((lc_dtype)t));
        cr_assert_eq(lc_qk_ref.dequantize[t] != NULL, in || dq, "%s",
                     lc_dtype_name((lc_dtype)t));
    }
}

Test(quant, q8_0_known_block_rounds_half_away_from_zero) {
    float x[32] = { 127.0f, -0.5f, 0.5f, 1.5f, -2.5f, 2.5f, -127.0f, 0.0f, -0.0f, 63.49f };
    lc_block_q8_0 y;
    lc_q8_0_quantize_ref(x, &y, 32);
    cr_assert_eq(y.d, 0x3c00);                   /* d = 127/127 = 1.0 */
    const int8_t want[10] = { 127, -1, 1, 2, -3, 3, -127, 0, 0, 63 };
    for (int j = 0; j < 10; j++)
        cr_assert_eq(y.qs[j], want[j], "qs[%d] = %d, want %d", j, y.qs[j], want[j]);
}

Test(quant, q4_0_known_block_uses_signed_extreme) {
    float x[32] = {0};
    x[0] = -8.0f;  /* the extreme is negative: d = -8/-8 = 1, q = x + 8 */
    x[1] = 7.0f;
    x[2] = 8.0f;   /* 16.5 truncates to 16, clamped to 15 */
    x[3] = 0.49f;
    x[16] = -3.0f;
    lc_block_q4_0 y;
    lc_q4_0_quantize_ref(x, &y, 32);
    cr_assert_eq(y.d, 0x3c00);
    cr_assert_eq(y.qs[0], (uint8_t)(0 | 5 << 4));
    cr_assert_eq(y.qs[1] & 0x0f, 15);
    cr_assert_eq(y.qs[2] & 0x0f, 15);
    cr_assert_eq(y.qs[3] & 0x0f, 8);
}

/* Per-block bound on |x - dequant(quant(x))| for normal data: half a step plus the
 * binary16 rounding of the scale (and of the min), and one step where ggml's upper
 * clamp (q <= 15 / 31) cuts the symmetric types. */
static float block_bound(lc_dtype t, const float *x, int n) {
    float lo = x[0], hi = x[0], amax = 0;
    for (int i = 0; i < n; i++) {
        lo = fminf(lo, x[i]);
        hi = fmaxf(hi, x[i]);
        amax = fmaxf(amax, fabsf(x[i]));
    }
    const float slop = amax * 0x1p-9f;
    switch (t) {
    case LC_DT_Q8_0: return 0.5f * amax / 127 + slop;
    case LC_DT_Q4_0: return amax / 8 + slop;
    case LC_DT_Q5_0: return amax / 16 + slop;
    case LC_DT_Q4_1: return 0.5f * (hi - lo) / 15 + slop;
    case LC_DT_Q5_1: return 0.5f * (hi - lo) / 31 + slop;
    default: return INFINITY;
    }
}

Test(quant, round_trip_error_bounds) {
    enum { N = 4096 };
    float *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y);
    uint8_t *q = malloc(N * 2);
    fill_normal(x, N, 1);
    for (size_t i = 0; i < NTYPES; i++) {
        const lc_dtype t = types[i];
        lc_qk_quantize(&lc_qk_ref, t)(x, q, N);
        lc_qk_dequantize(&lc_qk_ref, t)(q, y, N);
        double se = 0, sx = 0;
        for (int j = 0; j < N; j++) {
            se += (double)(y[j] - x[j]) * (y[j] - x[j]);
            sx += (double)x[j] * x[j];
        }
        const double rel = sqrt(se / sx);
        /* measured: Q8_0 .0052, Q4_0 .084, Q4_1 .079, Q5_0 .042, Q5_1 .038, Q2_K .29,
         * Q3_K .15, Q4_K .071, Q5_K .036, Q6_K .017 */
        const double limit[] = { 0.006, 0.095, 0.085, 0.046, 0.042, 0.31, 0.16, 0.078, 0.039,
                                 0.019 };
        _Static_assert(sizeof limit / sizeof limit[0] == NTYPES, "one limit per type");
        cr_assert(rel > 0 && rel < limit[i], "%s relative rmse %g", lc_dtype_name(t), rel);
        const int bs = (int)lc_dtype_get(t)->block_size;
        for (int b = 0; b < N / 32 && bs == 32; b++) {
            const float bound = block_bound(t, x + 32 * b, 32);
            for (int j = 32 * b; j < 32 * b + 32; j++)
                cr_assert(fabsf(y[j] - x[j]) <= bound, "%s x[%d]=%g -> %g, bound %g",
                          lc_dtype_name(t), j, x[j], y[j], bound);
        }
    }
    free(x), free(y), free(q);
}

/* n not a multiple of the block: whole blocks are converted, nothing past them is
 * read or written (the canary bytes after the output stay put). */
Test(quant, partial_tail_is_not_written) {
    for (size_t i = 0; i < NTYPES; i++) {
        const lc_dtype t = types[i];
        const size_t bs = lc_dtype_get(t)->block_size, ts = lc_dtype_get(t)->type_size;
        const size_t n = 2 * bs + bs / 2 + 1;
        float *x = malloc(n * sizeof *x);
        fill_normal(x, n, 2);
        uint8_t *q = malloc(3 * ts), *want = malloc(2 * ts);
        memset(q, 0xaa, 3 * ts);
        lc_qk_quantize(&lc_qk_ref, t)(x, q, n);
        lc_qk_quantize(&lc_qk_ref, t)(x, want, 2 * bs);
        cr_assert(memcmp(q, want, 2 * ts) == 0, "%s whole blocks", lc_dtype_name(t));
        for (size_t j = 2 * ts; j < 3 * ts; j++)
            cr_assert_eq(q[j], 0xaa, "%s wrote byte %zu past the last block", lc_dtype_name(t), j);
        float *y = malloc(3 * bs * sizeof *y);
        for (size_t j = 0; j < 3 * bs; j++)
            y[j] = -7.0f;
        memcpy(q + 2 * ts, q, ts);   /* a valid third block that must not be decoded */
        lc_qk_dequantize(&lc_qk_ref, t)(q, y, n);
        for (size_t j = 2 * bs; j < 3 * bs; j++)
            cr_assert_eq(y[j], -7.0f, "%s decoded element %zu past the last block",
                         lc_dtype_name(t), j);
        lc_qk_quantize(&lc_qk_ref, t)(x, q, bs - 1);   /* less than a block: no write */
        cr_assert(memcmp(q, want, ts) == 0);
        free(x), free(q), free(want), free(y);
    }
}

/* The same for the dequantize-only types: whole blocks decoded, nothing past them. */
Test(quant, dequantize_only_partial_tail_is_not_written) {
    for (size_t i = 0; i < NDQ; i++) {
        const lc_dtype t = dq_types[i];
        const size_t bs = lc_dtype_get(t)->block_size, ts = lc_dtype_get(t)->type_size;
        uint8_t *q = malloc(3 * ts);
        for (size_t j = 0; j < 3 * ts; j++)
            q[j] = (uint8_t)(j * 37 + 11);
        float *y = malloc(3 * bs * sizeof *y), *want = malloc(2 * bs * sizeof *want);
        for (size_t j = 0; j < 3 * bs; j++)
            y[j] = -7.0f;
        lc_qk_dequantize(&lc_qk_ref, t)(q, want, 2 * bs);
        lc_qk_dequantize(&lc_qk_ref, t)(q, y, 2 * bs + bs / 2 + 1);
        cr_assert(memcmp(y, want, 2 * bs * sizeof *y) == 0, "%s whole blocks", lc_dtype_name(t));
        for (size_t j = 2 * bs; j < 3 * bs; j++)
            cr_assert_eq(y[j], -7.0f, "%s decoded element %zu past the last block",
                         lc_dtype_name(t), j);
        free(q), free(y), free(want);
    }
}

/* ---- hand-made blocks of the dequantize-only types (the format facts, one by one) ---- */

Test(quant, dequantize_q1_0_and_q2_0) {
    lc_block_q1_0 b1;
    memset(&b1, 0, sizeof b1);
    b1.d = 0x4000;                                /* 2.0 */
    b1.qs[0] = 0x05;                              /* elements 0 and 2 are +d */
    b1.qs[15] = 0x80;                             /* element 127 is +d */
    float y[LC_QK1_0];
    lc_q1_0_dequantize_ref(&b1, y, LC_QK1_0);
    for (int j = 0; j < LC_QK1_0; j++)
        cr_assert_eq(y[j], j == 0 || j == 2 || j == 127 ? 2.0f : -2.0f, "q1_0 x[%d]", j);
    /* A signalling-NaN scale comes out quiet, as ggml's binary16 conversion makes it. */
    b1.d = 0x7c01;
    lc_q1_0_dequantize_ref(&b1, y, LC_QK1_0);
    uint32_t bits;
    memcpy(&bits, &y[0], sizeof bits);
    cr_assert_eq(bits, 0x7fc02000u, "q1_0 sNaN scale: %08x", bits);
    memcpy(&bits, &y[1], sizeof bits);
    cr_assert_eq(bits, 0xffc02000u, "-d of it: %08x", bits);

    lc_block_q2_0 b2;
    memset(&b2, 0, sizeof b2);
    b2.d = 0x3800;                                /* 0.5 */
    b2.qs[0] = 0xe4;                              /* elements 0..3: q = 0, 1, 2, 3 */
    lc_q2_0_dequantize_ref(&b2, y, LC_QK2_0);
    cr_assert_eq(y[0], -0.5f);
    cr_assert_eq(y[1], 0.0f);
    cr_assert_eq(y[2], 0.5f);
    cr_assert_eq(y[3], 1.0f);
    cr_assert_eq(y[63], -0.5f);
}

Test(quant, dequantize_ternary) {
    lc_block_tq2_0 t2;
    memset(&t2, 0, sizeof t2);
    t2.d = 0x3c00;
    t2.qs[0] = 0x24;                              /* bits: 00 01 10 00 -> q 0, 1, 2, 0 */
    float y[LC_QK_K];
    lc_tq2_0_dequantize_ref(&t2, y, LC_QK_K);
    cr_assert_eq(y[0], -1.0f);                    /* q 0 (bits 0-1) of byte 0 */
    cr_assert_eq(y[32], 0.0f);                    /* q 1 (bits 2-3): element 32 */
    cr_assert_eq(y[64], 1.0f);                    /* q 2 (bits 4-5): element 64 */
    cr_assert_eq(y[96], -1.0f);
    /* TQ1_0: byte ceil(v*256/243) holds 5 base-3 digits of v, most significant first. */
    lc_block_tq1_0 t1;
    memset(&t1, 0, sizeof t1);
    t1.d = 0x3c00;
    const int v = 2 * 81 + 0 * 27 + 1 * 9 + 2 * 3 + 1;   /* digits 2 0 1 2 1 */
    t1.qs[0] = (uint8_t)((v * 256 + 242) / 243);
    t1.qh[3] = (uint8_t)((81 * 256 + 242) / 243);        /* digits 1 0 0 0 (then 0) */
    lc_tq1_0_dequantize_ref(&t1, y, LC_QK_K);
    const float want[5] = { 1, -1, 0, 1, 0 };
    for (int n = 0; n < 5; n++)
        cr_assert_eq(y[32 * n], want[n], "tq1_0 digit %d: %g", n, y[32 * n]);
    cr_assert_eq(y[240 + 3], 0.0f);               /* qh[3] digit 0 */
    cr_assert_eq(y[244 + 3], -1.0f);              /* qh[3] digit 1 */
}

Test(quant, dequantize_fp4) {
    lc_block_mxfp4 m;
    memset(&m, 0, sizeof m);
    m.e = 128;                                    /* 2^(128-128) = 1: x = kvalues (doubled) */
    for (int j = 0; j < 16; j++)
        m.qs[j] = (uint8_t)(j | (15 - j) << 4);
    float y[LC_QK_NVFP4];
    lc_mxfp4_dequantize_ref(&m, y, LC_QK_MXFP4);
    static const float e2m1x2[16] = { 0, 1, 2, 3, 4, 6, 8, 12, -0.0f, -1, -2, -3, -4, -6, -8, -12 };
    for (int j = 0; j < 16; j++) {
        cr_assert_eq(y[j], e2m1x2[j], "mxfp4 x[%d]", j);
        cr_assert_eq(y[16 + j], e2m1x2[15 - j], "mxfp4 x[%d]", 16 + j);
    }
    m.e = 0;                                      /* 2^-128, a binary32 subnormal */
    lc_mxfp4_dequantize_ref(&m, y, LC_QK_MXFP4);
    cr_assert_eq(y[1], 0x1p-128f);
    m.e = 255;                                    /* not NaN in ggml: 2^127 */
    lc_mxfp4_dequantize_ref(&m, y, LC_QK_MXFP4);
    cr_assert_eq(y[1], 0x1p127f);

}

/* One MXFP4 block quantized from x (32 values). */
static lc_block_mxfp4 mxfp4_of(const float *x) {
    lc_block_mxfp4 m;
    cr_assert_eq(lc_quantize_rows(LC_DT_MXFP4, x, &m, 1, LC_QK_MXFP4, NULL), LC_OK);
    return m;
}

Test(quant, quantize_mxfp4) {
    float x[LC_QK_MXFP4] = { 6.0f, 0.25f, 0.75f, -0.25f, -6.0f, 2.9f, 100.0f };
    lc_block_mxfp4 m = mxfp4_of(x);
    /* amax 100: floor(log2 100) = 6, e = 6 - 2 + 127; scale 2^(e-128) = 2, codes x 2 */
    cr_assert_eq(m.e, 131);
    cr_assert_eq(m.qs[6] & 15, 7, "100 -> 12*2 = 24, the largest code");
    x[6] = 0.0f;                                  /* amax 6: e 127, scale 0.5 */
    m = mxfp4_of(x);
    cr_assert_eq(m.e, 127);
    cr_assert_eq(m.qs[0] & 15, 7, "6 = 12 * 0.5");
    cr_assert_eq(m.qs[1] & 15, 0, "0.25: a tie of 0 and 0.5, the first code wins");
    cr_assert_eq(m.qs[2] & 15, 1, "0.75: a tie of 0.5 and 1, the first code wins");
    cr_assert_eq(m.qs[3] & 15, 0, "-0.25: a tie of 0 and -0.5, code 0 (+0) first");
    cr_assert_eq(m.qs[4] & 15, 15, "-6 = -12 * 0.5");
    cr_assert_eq(m.qs[5] & 15, 5, "2.9 -> 3 = 6 * 0.5");
    cr_assert_eq(m.qs[8], 0, "zeros");
    /* log2f rounds 1024 * (1 - 2^-24) up to 10: e = 135, not 134, as ggml has it */
    memset(x, 0, sizeof x);
    x[20] = 0x1.fffffep9f;
    m = mxfp4_of(x);
    cr_assert_eq(m.e, 135);
    cr_assert_eq(m.qs[4] >> 4, 6, "so the scale is 128 and 1024 - 2^-14 takes 8 * 128");
    /* a subnormal amax: e = -140 - 2 + 127 = -15, stored as its low byte (241) */
    x[20] = 0x1p-140f;
    cr_assert_eq(mxfp4_of(x).e, 241);
    x[20] = INFINITY;                             /* log2 inf: INT32_MIN's low byte */
    cr_assert_eq(mxfp4_of(x).e, 0);
    x[20] = 0.0f;                                 /* all zero: e 0, every code 0 */
    m = mxfp4_of(x);
    cr_assert_eq(m.e, 0);
    for (int j = 0; j < 16; j++)
        cr_assert_eq(m.qs[j], 0);
    x[3] = NAN;                                   /* NaN never becomes amax: code 0 */
    x[4] = 1.0f;
    m = mxfp4_of(x);
    cr_assert_eq(m.e, 125);
    cr_assert_eq(m.qs[3], 0);
    cr_assert_eq(m.qs[4] & 15, 6, "1 = 8 * 2^-3");
}

Test(quant, dequantize_nvfp4) {
    float y[LC_QK_NVFP4];
    lc_block_nvfp4 nv;
    memset(&nv, 0, sizeof nv);
    nv.d[0] = 0x38;                               /* E4M3 1.0 (exp 7), halved: 0.5 */
    nv.d[1] = 0x7f;                               /* E4M3 NaN reads as 0 */
    nv.d[2] = 0x01;                               /* subnormal 2^-9, halved */
    nv.d[3] = 0xff;                               /* bit 7 ignored: 1.875 * 2^8, halved */
    memset(nv.qs, 0x71, sizeof nv.qs);            /* low nibble 1, high nibble 7 */
    lc_nvfp4_dequantize_ref(&nv, y, LC_QK_NVFP4);
    cr_assert_eq(y[0], 0.5f);                     /* kvalue 1 * 0.5 */
    cr_assert_eq(y[8], 6.0f);                     /* kvalue 12 * 0.5 */
    cr_assert_eq(y[16], 0.0f);
    cr_assert_eq(y[32], 0x1p-10f);
    cr_assert_eq(y[48], 240.0f);
    cr_assert_eq(y[56], 2880.0f);
}

Test(quant, dequantize_iq4_and_q8) {
    lc_block_iq4_nl b;
    b.d = 0x3c00;
    for (int j = 0; j < 16; j++)
        b.qs[j] = (uint8_t)(j | j << 4);
    float y[LC_QK_K];
    lc_iq4_nl_dequantize_ref(&b, y, LC_QK4_NL);
    static const float levels[16] = { -127, -104, -83, -65, -49, -35, -22, -10,
                                      1,    13,   25,  38,  53,  69,  89,  113 };
    for (int j = 0; j < 16; j++) {
        cr_assert_eq(y[j], levels[j]);
        cr_assert_eq(y[j + 16], levels[j]);
    }
    lc_block_q8_K k;
    memset(&k, 0, sizeof k);
    lc_store_le32(k.d, 0x3e000000u);               /* binary32 0.125 */
    k.qs[0] = -128;
    k.qs[255] = 127;
    lc_q8_K_dequantize_ref(&k, y, LC_QK_K);
    cr_assert_eq(y[0], -16.0f);
    cr_assert_eq(y[255], 15.875f);
    cr_assert_eq(y[1], 0.0f);
    lc_block_q8_1 q1;
    memset(&q1, 0, sizeof q1);
    q1.d = 0x3800;                                /* 0.5 */
    q1.s = 0x7c00;                                /* the sum is never read */
    q1.qs[3] = -3;
    lc_q8_1_dequantize_ref(&q1, y, LC_QK8_1);
    cr_assert_eq(y[3], -1.5f);
    cr_assert_eq(y[4], 0.0f);
}

/* NaN policy (ggml's, as built by gcc on x86-64): amax = MAX(amax, |v|) picks |v|
 * whenever amax > |v| is false, so a NaN restarts the search and only survives in
 * a block's last slot; a NaN element quantizes to 0. */
Test(quant, q8_0_nan_policy) {
    float x[64];
    for (int j = 0; j < 64; j++)
        x[j] = (float)(j % 32) - 10.0f;           /* amax 21 */
    x[5] = NAN;                                   /* mid-block: skipped */
    x[63] = NAN;                                  /* last slot: amax becomes NaN */
    lc_block_q8_0 y[2];
    lc_q8_0_quantize_ref(x, y, 64);
    cr_assert_eq(y[0].d, lc_q_f32_to_f16(21.0f / 127.0f));
    cr_assert_eq(y[0].qs[5], 0);
    cr_assert_eq(y[0].qs[31], 127);
    cr_assert_eq(y[1].d, 0x7e00);                 /* canonical quiet NaN */
    for (int j = 0; j < 32; j++)
        cr_assert_eq(y[1].qs[j], 0);
}

Test(quant, q8_0_nan_restarts_amax_and_wraps) {
    float x[32] = { 100.0f, NAN, 1.0f };        /* amax ends as 1, not 100 */
    lc_block_q8_0 y;
    lc_q8_0_quantize_ref(x, &y, 32);
    cr_assert_eq(y.d, lc_q_f32_to_f16(1.0f / 127.0f));
    cr_assert_eq(y.qs[0], -100);                /* roundf(100*127) = 12700, low byte 0x9c */
    cr_assert_eq(y.qs[1], 0);
    cr_assert_eq(y.qs[2], 127);
}

Test(quant, infinity_gives_infinite_scale_and_zero_levels) {
    float x[32];
    fill_normal(x, 32, 3);
    x[9] = -INFINITY;
    lc_block_q8_0 y8;
    lc_q8_0_quantize_ref(x, &y8, 32);
    cr_assert_eq(y8.d, 0x7c00);                   /* d = inf, id = 1/inf = 0 */
    for (int j = 0; j < 32; j++)
        cr_assert_eq(y8.qs[j], 0);
    lc_block_q4_0 y4;
    lc_q4_0_quantize_ref(x, &y4, 32);
    cr_assert_eq(y4.d, 0x7c00);                   /* -inf / -8 */
    cr_assert_eq(y4.qs[9] & 0x0f, 0);             /* NaN (inf * 0) casts to 0 */
    cr_assert_eq(y4.qs[0] & 0x0f, 8);
}

Test(quant, k_types_zero_block) {
    float x[LC_QK_K] = {0};
    lc_block_q6_K y6;
    memset(&y6, 0x55, sizeof y6);
    lc_q6_K_quantize_ref(x, &y6, LC_QK_K);
    const uint8_t zero[sizeof y6] = {0};
    cr_assert(memcmp(&y6, zero, sizeof y6) == 0, "all-zero Q6_K block is all-zero bytes");
    lc_block_q4_K y4;
    lc_q4_K_quantize_ref(x, &y4, LC_QK_K);
    cr_assert_eq(y4.d, 0);
    cr_assert_eq(y4.dmin, 0);
    float back[LC_QK_K];
    lc_q4_K_dequantize_ref(&y4, back, LC_QK_K);
    for (int j = 0; j < LC_QK_K; j++)
        cr_assert_eq(back[j], 0.0f);
    /* Q2_K, Q3_K, Q5_K: zero scales, so every value decodes to +-0. Q3_K's all-zero
     * groups keep level 0 (q - 4 = -4, times a zero scale), as ggml's make_q3_quants. */
    for (size_t i = 0; i < NTYPES; i++) {
        if (lc_dtype_get(types[i])->block_size != LC_QK_K)
            continue;
        uint8_t q[256];
        memset(q, 0x55, sizeof q);
        lc_qk_quantize(&lc_qk_ref, types[i])(x, q, LC_QK_K);
        lc_qk_dequantize(&lc_qk_ref, types[i])(q, back, LC_QK_K);
        for (int j = 0; j < LC_QK_K; j++)
            cr_assert_eq(back[j], 0.0f, "%s", lc_dtype_name(types[i]));
    }
    lc_block_q3_K y3;
    lc_q3_K_quantize_ref(x, &y3, LC_QK_K);
    const lc_block_q3_K z3 = {0};
    cr_assert(memcmp(&y3, &z3, sizeof y3) == 0, "all-zero Q3_K block is all-zero bytes");
}

/* All-equal blocks: the K types' min/scale fits see max == min (Q2_K, Q4_K, Q5_K) or a
 * perfect one-level fit (Q3_K, Q6_K). A positive constant c in Q2_K: min is clamped to 0,
 * so every level is 3 and the scale c/3 comes back through binary16 rounding. */
Test(quant, k_types_all_equal_blocks) {
    float x[LC_QK_K], back[LC_QK_K];
    uint8_t q[256];
    for (int j = 0; j < LC_QK_K; j++)
        x[j] = 0.75f;
    for (size_t i = 0; i < NTYPES; i++) {
        if (lc_dtype_get(types[i])->block_size != LC_QK_K)
            continue;
        lc_qk_quantize(&lc_qk_ref, types[i])(x, q, LC_QK_K);
        lc_qk_dequantize(&lc_qk_ref, types[i])(q, back, LC_QK_K);
        for (int j = 1; j < LC_QK_K; j++)
            cr_assert_eq(back[j], back[0], "%s: all-equal in, all-equal out",
                         lc_dtype_name(types[i]));
        cr_assert(fabsf(back[0] - 0.75f) < 0.75f * 0x1p-6f, "%s: %a", lc_dtype_name(types[i]),
                  back[0]);
    }
    lc_block_q2_K y2;
    lc_q2_K_quantize_ref(x, &y2, LC_QK_K);
    for (int j = 0; j < LC_QK_K / 4; j++)
        cr_assert_eq(y2.qs[j], 0xff, "every Q2_K level is 3");
    for (int j = 0; j < LC_QK_K / 16; j++)
        cr_assert_eq(y2.scales[j], 0x0f, "scale 15, min 0");
    cr_assert_eq(y2.d, lc_q_f32_to_f16(0.25f / 15.f));
    cr_assert_eq(y2.dmin, 0);
}

/* Q3_K's layout, from a hand-made block: sub-block s has scale s + 20 (stored biased by
 * 32 in 6 bits), d = 1, and level (j % 8) for element j, so x = (s + 20 - 32) * (j%8 - 4). */
Test(quant, q3_K_layout) {
    lc_block_q3_K b;
    memset(&b, 0, sizeof b);
    b.d = 0x3c00;
    for (int s = 0; s < 16; s++) {
        const int v = s + 20;
        if (s < 8)
            b.scales[s] |= (uint8_t)(v & 0xf);
        else
            b.scales[s - 8] |= (uint8_t)((v & 0xf) << 4);
        b.scales[8 + s % 4] |= (uint8_t)((v >> 4) << (2 * (s / 4)));
    }
    for (int j = 0; j < LC_QK_K; j++) {
        const int q = j % 8;
        if (q & 4)
            b.hmask[j % 32] |= (uint8_t)(1u << (j / 32));
        b.qs[(j / 128) * 32 + j % 32] |= (uint8_t)((q & 3) << (2 * ((j % 128) / 32)));
    }
    float y[LC_QK_K];
    lc_q3_K_dequantize_ref(&b, y, LC_QK_K);
    for (int j = 0; j < LC_QK_K; j++)
        cr_assert_eq(y[j], (float)((j / 16 + 20 - 32) * (j % 8 - 4)), "x[%d] = %g", j, y[j]);
}

Test(quant, f16_round_trips_every_non_nan_half) {
    for (uint32_t h = 0; h < 0x10000; h++) {
        if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff))
            continue;
        const float f = lc_q_f16_to_f32((uint16_t)h);
        cr_assert_eq(lc_q_f32_to_f16(f), h, "0x%04x -> %a", h, f);
    }
}

Test(quant, f16_rounds_to_nearest_even) {
    cr_assert_eq(lc_q_f32_to_f16(1.0f + 0x1p-11f), 0x3c00);          /* tie: to even */
    cr_assert_eq(lc_q_f32_to_f16(1.0f + 3 * 0x1p-11f), 0x3c02);      /* tie: up to even */
    cr_assert_eq(lc_q_f32_to_f16(1.0f + 0x1p-11f + 0x1p-20f), 0x3c01);
    cr_assert_eq(lc_q_f32_to_f16(65519.0f), 0x7bff);
    cr_assert_eq(lc_q_f32_to_f16(65520.0f), 0x7c00);                 /* tie: to infinity */
    cr_assert_eq(lc_q_f32_to_f16(-1e30f), 0xfc00);
    cr_assert_eq(lc_q_f32_to_f16(0x1p-25f), 0x0000);                 /* tie: to zero */
    cr_assert_eq(lc_q_f32_to_f16(0x1.000002p-25f), 0x0001);
    cr_assert_eq(lc_q_f32_to_f16(3 * 0x1p-25f), 0x0002);             /* tie: to even */
    cr_assert_eq(lc_q_f32_to_f16(0x1.ffcp-15f), 0x0400);             /* carry to normal */
    cr_assert_eq(lc_q_f32_to_f16(-0.0f), 0x8000);
    cr_assert_eq(lc_q_scale_f16(NAN), 0x7e00);
    cr_assert_eq(lc_q_scale_f16(-NAN), 0xfe00);
    uint32_t payload = 0x7f802001;                                   /* signalling, payload */
    float snan;
    memcpy(&snan, &payload, sizeof snan);
    cr_assert_eq(lc_q_scale_f16(snan), 0x7e00);
}

Test(quant, float_casts_match_x86) {
    cr_assert_eq(lc_q_trunc_i8(-1.9f), -1);
    cr_assert_eq(lc_q_trunc_i8(178.0f), -78);    /* low byte, as cvttss2si + movb */
    cr_assert_eq(lc_q_trunc_i8(NAN), 0);
    cr_assert_eq(lc_q_trunc_i8(INFINITY), 0);
    cr_assert_eq(lc_q_trunc_u8(33.7f), 33);
    cr_assert_eq(lc_q_trunc_u8(-1.0f), 255);
    cr_assert_eq(lc_q_trunc_i32(3e9f), INT32_MIN);
}

Test(quant, dispatch_table) {
    cr_assert_not_null(lc_qkernels_best());     /* which one: test_quant_variants.c */
    const lc_qkernels *k = lc_qkernels_get("ref");
    cr_assert_eq(k, &lc_qk_ref);
    cr_assert_str_eq(k->name, "ref");
    cr_assert_null(lc_qkernels_get("no-such-variant"));
    cr_assert_null(lc_qkernels_get(NULL));
    cr_assert_eq(lc_qk_quantize(k, LC_DT_Q8_0), lc_q8_0_quantize_ref);
    cr_assert_eq(lc_qk_dequantize(k, LC_DT_Q6_K), lc_q6_K_dequantize_ref);
    cr_assert_null(lc_qk_quantize(k, LC_DT_F32));
    cr_assert_null(lc_qk_quantize(k, LC_DT_COUNT));
    cr_assert_null(lc_qk_dequantize(k, (lc_dtype)-3));
    cr_assert_null(lc_qk_quantize(k, LC_DT_IQ2_XXS));     /* dequantize-only */
    cr_assert_eq(lc_qk_dequantize(k, LC_DT_IQ2_XXS), lc_iq2_xxs_dequantize_ref);
    const lc_qkernels empty = { .name = "empty" };   /* NULL entries fall back to ref */
    cr_assert_eq(lc_qk_quantize(&empty, LC_DT_Q4_K), lc_q4_K_quantize_ref);
    cr_assert_eq(lc_qk_dequantize(&empty, LC_DT_MXFP4), lc_mxfp4_dequantize_ref);
    cr_assert_null(lc_qk_quantize(&empty, LC_DT_MXFP4));
}

Test(quant, quantize_rows_matches_kernel) {
    enum { R = 3, C = 512 };
    static float x[R * C], y[R * C], back[R * C];
    fill_normal(x, R * C, 4);
    static uint8_t got[R * C * 2], want[R * C * 2];   /* Q8_0 needs 34/32 bytes per float */
    lc_error err = {0};
    for (size_t i = 0; i < NTYPES; i++) {
        const lc_dtype t = types[i];
        const size_t rb = C / lc_dtype_get(t)->block_size * lc_dtype_get(t)->type_size;
        cr_assert_eq(lc_quantize_rows(t, x, got, R, C, &err), LC_OK);
        for (int r = 0; r < R; r++)
            lc_qk_quantize(&lc_qk_ref, t)(x + r * C, want + r * rb, C);
        cr_assert(memcmp(got, want, R * rb) == 0, "%s", lc_dtype_name(t));
        cr_assert_eq(lc_dequantize_rows(t, got, back, R, C, &err), LC_OK);
        lc_qk_dequantize(&lc_qk_ref, t)(want, y, R * C);
        cr_assert(memcmp(back, y, sizeof y) == 0, "%s", lc_dtype_name(t));
    }
    for (size_t i = 0; i < sizeof want; i++)
        want[i] = (uint8_t)(i * 131 + 7);
    for (size_t i = 0; i < NDQ; i++) {      /* dequantize-only: rows of any bytes */
        const lc_dtype t = dq_types[i];
        cr_assert_eq(lc_dequantize_rows(t, want, back, R, C, &err), LC_OK, "%s",
                     lc_dtype_name(t));
        lc_qk_dequantize(&lc_qk_ref, t)(want, y, R * C);
        cr_assert(memcmp(back, y, sizeof y) == 0, "%s", lc_dtype_name(t));
    }
    cr_assert_eq(err.code, LC_OK);
}

/* The row entry: without an importance matrix it is the block kernel (whatever variant
 * is best), a type that ignores one gives the same bytes with it, and a type that uses
 * one gives the reference's weighted rows from every variant. */
Test(quant, quantize_rows_imatrix_contract) {
    enum { R = 2, C = 512 };
    static float x[R * C], im[C];
    fill_normal(x, R * C, 9);
    for (int j = 0; j < C; j++)
        im[j] = (float)(j % 7) * 0.25f;
    static uint8_t got[R * C * 2], want[R * C * 2];
    lc_error err = {0};
    for (int t = 0; t < LC_DT_COUNT; t++) {
        const lc_imatrix_use use = lc_quant_imatrix_use((lc_dtype)t);
        cr_assert_eq(use != LC_IMATRIX_NONE, lc_quant_writable((lc_dtype)t), "%s",
                     lc_dtype_name((lc_dtype)t));
        if (lc_quant_supported((lc_dtype)t))
            cr_assert(lc_quant_writable((lc_dtype)t), "%s", lc_dtype_name((lc_dtype)t));
    }
    cr_assert_eq(lc_quant_imatrix_use(LC_DT_Q8_0), LC_IMATRIX_IGNORES);
    cr_assert_eq(lc_quant_imatrix_use(LC_DT_Q4_K), LC_IMATRIX_USES);
    cr_assert_eq(lc_quant_imatrix_use(LC_DT_F16), LC_IMATRIX_NONE);
    for (size_t i = 0; i < NTYPES; i++) {
        const lc_dtype t = types[i];
        const size_t rb = C / lc_dtype_get(t)->block_size * lc_dtype_get(t)->type_size;
        cr_assert_eq(lc_quantize_rows_imatrix(t, x, got, R, C, NULL, &err), LC_OK);
        lc_qk_quantize(&lc_qk_ref, t)(x, want, R * C);
        cr_assert(memcmp(got, want, R * rb) == 0, "%s without imatrix", lc_dtype_name(t));
        cr_assert_eq(lc_quantize_rows_imatrix(t, x, got, R, C, im, &err), LC_OK);
        lc_qk_ref.quantize_rows[t](x, want, R, C, im);
        cr_assert(memcmp(got, want, R * rb) == 0, "%s with imatrix", lc_dtype_name(t));
        lc_qk_quantize(&lc_qk_ref, t)(x, want, R * C);
        const bool same = memcmp(got, want, R * rb) == 0;
        cr_assert_eq(same, lc_quant_imatrix_use(t) == LC_IMATRIX_IGNORES, "%s",
                     lc_dtype_name(t));
    }
    cr_assert_eq(err.code, LC_OK);
}

/* Weights that overflow the weighted sums (1e22 times a row of 1e22: infinite weights, a
 * NaN scale) leave a group its first fit's levels, 3s and 4s off the grid's map: the
 * index once read past the map (fuzz_rows found it). Such a group gets entry 0, so an
 * IQ2_XXS block is its NaN scale and zeros. */
Test(quant, grid_iquants_survive_overflowing_weights) {
    enum { C = 256 };
    static float x[C], im[C], y[C];
    for (int j = 0; j < C; j++)
        x[j] = im[j] = 1e22f;
    static uint8_t q[C * 2];
    lc_error err = {0};
    const lc_dtype ts[] = { LC_DT_IQ2_XXS, LC_DT_IQ2_XS, LC_DT_IQ2_S, LC_DT_IQ3_XXS,
                            LC_DT_IQ3_S,   LC_DT_IQ1_S,  LC_DT_IQ1_M };
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) {
        cr_assert_eq(lc_quantize_rows_imatrix(ts[i], x, q, 1, C, im, &err), LC_OK, "%s",
                     lc_dtype_name(ts[i]));
        cr_assert_eq(lc_dequantize_rows(ts[i], q, y, 1, C, &err), LC_OK);
    }
    cr_assert_eq(lc_quantize_rows_imatrix(LC_DT_IQ2_XXS, x, q, 1, C, im, &err), LC_OK);
    /* d is an fp16 NaN; which one is the CPU's default NaN (x86: sign set, 0xfe00;
     * AArch64: 0x7e00), so only the class is asserted. */
    unsigned d = q[0] | q[1] << 8;
    cr_assert((d & 0x7c00) == 0x7c00 && (d & 0x03ff) != 0, "d = 0x%04x is not an fp16 NaN", d);
    for (size_t b = 2; b < sizeof(lc_block_iq2_xxs); b++)
        cr_assert_eq(q[b], 0, "byte %zu", b);
}

Test(quant, quantize_rows_errors) {
    float x[64] = {0};
    uint8_t y[256];
    memset(y, 0xaa, sizeof y);
    lc_error err = {0};
    cr_assert_eq(lc_quantize_rows(LC_DT_Q8_0, x, y, 1, 33, &err), LC_E_ARG);
    cr_assert_eq(err.offset, LC_NO_OFFSET);
    cr_assert_eq(y[0], 0xaa, "nothing written on error");
    lc_error e2 = {0};
    cr_assert_eq(lc_quantize_rows(LC_DT_Q4_K, x, y, 1, 64, &e2), LC_E_ARG);
    lc_error e3 = {0};
    cr_assert_eq(lc_quantize_rows(LC_DT_F16, x, y, 1, 64, &e3), LC_E_UNSUPPORTED);
    lc_error e4 = {0};
    cr_assert_eq(lc_quantize_rows(LC_DT_NVFP4, x, y, 1, 64, &e4), LC_E_UNSUPPORTED);
    cr_assert(strstr(e4.msg, "no quantizer for dtype NVFP4"), "%s", e4.msg);
    cr_assert_eq(y[0], 0xaa);
    lc_error e4b = {0};
    cr_assert_eq(lc_dequantize_rows(LC_DT_IQ2_XXS, y, x, 1, 0, &e4b), LC_OK);
    cr_assert_eq(lc_dequantize_rows(LC_DT_F16, y, x, 1, 64, &e4b), LC_E_UNSUPPORTED);
    cr_assert(strstr(e4b.msg, "no dequantizer for dtype F16"), "%s", e4b.msg);
    lc_error e5 = {0};
    cr_assert_eq(lc_quantize_rows(LC_DT_Q8_0, x, y, SIZE_MAX / 2, 64, &e5), LC_E_OVERFLOW);
    lc_error e6 = {0};
    cr_assert_eq(lc_dequantize_rows(LC_DT_Q5_1, y, x, 1, 48, &e6), LC_E_ARG);
    lc_error e7 = {0};
    cr_assert_eq(lc_quantize_rows(LC_DT_Q8_0, x, y, 0, 64, &e7), LC_OK);
    cr_assert_eq(y[0], 0xaa);
}
