/* Unit tests for libconvert/convert_x86.c: the SIMD rows give the scalar rows' bits for
 * every bf16 and f16 pattern, a sweep of f32 patterns (every exponent, the rounding
 * ties, NaN payloads), and rows whose NaNs and tails fall at every position of a group.
 * The scalar rows themselves are checked against numpy and ml_dtypes in
 * tests/integration/test_convert.py. Skipped where the CPU has no AVX2 + F16C. */
#include <criterion/criterion.h>
#include <string.h>

#include "libconvert/convert.h"
#include "libconvert/convert_impl.h"

static void need_simd(void) {
    lc_convert_use_simd(true);
    if (!lc_convert_simd_active())
        cr_skip_test("no SIMD rows on this CPU");
}

/* Converts n elements both ways and compares the bytes; returns the first index that
 * differs or n. */
static size_t both_ways(lc_dtype from, const void *in, lc_dtype to, size_t n) {
    static uint8_t a[8 << 20], b[8 << 20];
    const size_t ts = lc_dtype_get(to)->type_size;
    cr_assert(n * ts <= sizeof a);
    lc_convert_use_simd(true);
    cr_assert_eq(lc_convert(from, in, to, a, n, NULL), LC_OK);
    lc_convert_use_simd(false);
    cr_assert_eq(lc_convert(from, in, to, b, n, NULL), LC_OK);
    lc_convert_use_simd(true);
    for (size_t i = 0; i < n; i++)
        if (memcmp(a + i * ts, b + i * ts, ts) != 0)
            return i;
    return n;
}

Test(convert_simd, every_16_bit_pattern) {
    need_simd();
    static uint16_t in[65536];
    for (uint32_t i = 0; i < 65536; i++)
        in[i] = (uint16_t)i;
    static const struct { lc_dtype from, to; } pairs[] = {
        { LC_DT_BF16, LC_DT_F16 }, { LC_DT_BF16, LC_DT_F32 }, { LC_DT_F16, LC_DT_F32 },
    };
    for (size_t p = 0; p < sizeof pairs / sizeof *pairs; p++) {
        const size_t at = both_ways(pairs[p].from, in, pairs[p].to, 65536);
        cr_assert_eq(at, 65536, "%s -> %s differs at pattern %#zx", lc_dtype_name(pairs[p].from),
                     lc_dtype_name(pairs[p].to), at);
    }
}

/* Every 255th f32 pattern (odd stride: all mantissa residues), plus each exponent's
 * f16 rounding ties and their neighbours, plus NaNs. */
Test(convert_simd, f32_to_f16_sweep) {
    need_simd();
    static uint32_t in[1 << 20];
    size_t n = 0;
    uint64_t u = 0;
    while (u < (1ull << 32)) {
        for (n = 0; n < (1u << 20) && u < (1ull << 32); u += 255)
            in[n++] = (uint32_t)u;
        const size_t at = both_ways(LC_DT_F32, in, LC_DT_F16, n);
        cr_assert_eq(at, n, "f32 %#x differs", at < n ? in[at] : 0);
    }
    n = 0;
    for (uint32_t e = 0; e < 256; e++)
        for (uint32_t s = 0; s < 2; s++)
            for (uint32_t m = 0x0fff; m <= 0x1001; m++)   /* below, at and above a tie */
                for (uint32_t hi = 0; hi < 4; hi++)
                    in[n++] = s << 31 | e << 23 | hi << 21 | m | (hi & 1) << 13;
    const size_t at = both_ways(LC_DT_F32, in, LC_DT_F16, n);
    cr_assert_eq(at, n, "f32 %#x differs", at < n ? in[at] : 0);
}

/* A NaN in each position of a group, in rows of every length up to 40: the SIMD row
 * stops before the NaN's group, the scalar code does that group, the tail is right. */
Test(convert_simd, nan_positions_and_tails) {
    need_simd();
    static const uint16_t bf_nan[] = { 0x7fc0, 0xffc1, 0x7f81 }, h_nan[] = { 0x7e00, 0xfc01,
                                                                              0x7d00 };
    static const uint32_t f_nan[] = { 0x7fc00000, 0xffa00000, 0x7f800001 };
    for (size_t len = 0; len <= 40; len++)
        for (size_t pos = 0; pos <= len; pos++)
            for (size_t k = 0; k < 3; k++) {
                uint16_t b[40], h[40];
                uint32_t f[40];
                for (size_t i = 0; i < len; i++) {
                    b[i] = (uint16_t)(0x3c00 + 37 * i);        /* ordinary numbers */
                    h[i] = (uint16_t)(0x3c00 + 37 * i);
                    f[i] = 0x3f800000u + 0x12345u * (uint32_t)i;
                }
                if (pos < len) {
                    b[pos] = bf_nan[k];
                    h[pos] = h_nan[k];
                    f[pos] = f_nan[k];
                }
                cr_assert_eq(both_ways(LC_DT_BF16, b, LC_DT_F16, len), len, "bf16 %zu/%zu", pos, len);
                cr_assert_eq(both_ways(LC_DT_F16, h, LC_DT_F32, len), len, "f16 %zu/%zu", pos, len);
                cr_assert_eq(both_ways(LC_DT_F32, f, LC_DT_F16, len), len, "f32 %zu/%zu", pos, len);
                cr_assert_eq(both_ways(LC_DT_BF16, b, LC_DT_F32, len), len, "bf16>f32 %zu/%zu", pos, len);
            }
}

Test(convert_simd, switch_off_is_honoured) {
    lc_convert_use_simd(false);
    cr_assert_not(lc_convert_simd_active());
    lc_convert_use_simd(true);
}
