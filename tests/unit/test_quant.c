/* Unit tests for quant/: block sizes against the dtype table, known blocks, round-trip
 * error bounds, the tail and non-finite policies, binary16 conversion, dispatch and
 * lc_quantize_rows. Bit identity with ggml is tested in tests/integration/test_quant.py. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "libconvert/dtype.h"
#include "quant/blocks.h"
#include "quant/quant.h"
#include "quant/quant_impl.h"

static const lc_dtype types[] = { LC_DT_Q8_0, LC_DT_Q4_0, LC_DT_Q4_1, LC_DT_Q5_0,
                                  LC_DT_Q5_1, LC_DT_Q4_K, LC_DT_Q6_K };
#define NTYPES (sizeof types / sizeof types[0])

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
        { LC_DT_Q4_K, sizeof(lc_block_q4_K), LC_QK_K },
        { LC_DT_Q6_K, sizeof(lc_block_q6_K), LC_QK_K },
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const lc_dtype_info *info = lc_dtype_get(want[i].t);
        cr_assert_eq(info->type_size, want[i].size, "%s bytes", info->name);
        cr_assert_eq(info->block_size, want[i].block, "%s block", info->name);
        cr_assert(lc_quant_supported(want[i].t), "%s", info->name);
    }
    cr_assert_not(lc_quant_supported(LC_DT_F16));
    cr_assert_not(lc_quant_supported(LC_DT_Q2_K));
    cr_assert_not(lc_quant_supported((lc_dtype)-1));
    cr_assert_not(lc_quant_supported(LC_DT_COUNT));
}

/* quant/types.h is the one list: the reference table, lc_quant_supported() and the
 * file types derive from it. A type added there must be added to this file's tests too. */
Test(quant, type_list_is_the_tested_list) {
    static const lc_dtype listed[] = { LC_QUANT_TYPES(LC_QUANT_DTYPE) };
    cr_assert_eq(sizeof listed / sizeof listed[0], NTYPES, "quant/types.h vs types[] here");
    for (size_t i = 0; i < NTYPES; i++)
        cr_assert_eq(listed[i], types[i], "%s", lc_dtype_name(listed[i]));
    for (int t = 0; t < LC_DT_COUNT; t++) {
        bool in = false;
        for (size_t i = 0; i < NTYPES; i++)
            in = in || types[i] == (lc_dtype)t;
        cr_assert_eq(lc_quant_supported((lc_dtype)t), in, "%s", lc_dtype_name((lc_dtype)t));
        cr_assert_eq(lc_qk_ref.quantize[t] != NULL, in, "%s", lc_dtype_name((lc_dtype)t));
        cr_assert_eq(lc_qk_ref.dequantize[t] != NULL, in, "%s", lc_dtype_name((lc_dtype)t));
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
        /* measured: Q8_0 .0054, Q4_0 .086, Q4_1 .079, Q5_0 .042, Q5_1 .039, Q4_K .072, Q6_K .017 */
        const double limit[] = { 0.006, 0.095, 0.085, 0.046, 0.042, 0.078, 0.019 };
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
    const lc_qkernels empty = { .name = "empty" };   /* NULL entries fall back to ref */
    cr_assert_eq(lc_qk_quantize(&empty, LC_DT_Q4_K), lc_q4_K_quantize_ref);
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
    cr_assert_eq(err.code, LC_OK);
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
    cr_assert_eq(lc_quantize_rows(LC_DT_Q2_K, x, y, 1, 256, &e4), LC_E_UNSUPPORTED);
    lc_error e5 = {0};
    cr_assert_eq(lc_quantize_rows(LC_DT_Q8_0, x, y, SIZE_MAX / 2, 64, &e5), LC_E_OVERFLOW);
    lc_error e6 = {0};
    cr_assert_eq(lc_dequantize_rows(LC_DT_Q5_1, y, x, 1, 48, &e6), LC_E_ARG);
    lc_error e7 = {0};
    cr_assert_eq(lc_quantize_rows(LC_DT_Q8_0, x, y, 0, 64, &e7), LC_OK);
    cr_assert_eq(y[0], 0xaa);
}
