/* Unit tests for libconvert/convert: scalar edge values, row codes and offsets, the
 * lossless table, and the lazy cast (partial reads, zero size, lazy inner sources,
 * errors from inside, out of memory). The bit-for-bit sweeps against numpy and
 * ml_dtypes live in tests/integration/test_convert.py. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "libconvert/alloc.h"
#include "libconvert/bytes.h"
#include "libconvert/convert.h"
#include "libconvert/model.h"

static float fb(uint32_t u) { return lc_bits_to_f32(u); }
static uint32_t bf(float f) { return lc_f32_to_bits(f); }

/* ---- scalars ---- */

Test(convert, f32_to_f16_edges) {
    static const struct { uint32_t in; uint16_t out; } cases[] = {
        { 0x00000000, 0x0000 }, { 0x80000000, 0x8000 },           /* +-0 */
        { 0x3f800000, 0x3c00 }, { 0xc0000000, 0xc000 },           /* 1, -2 */
        { 0x477fe000, 0x7bff }, /* 65504, max */
        { 0x477fefff, 0x7bff }, /* just below the tie to infinity */
        { 0x477ff000, 0x7c00 }, /* 65520: tie, 0x7bff is odd -> up -> inf */
        { 0x7f7fffff, 0x7c00 }, { 0x7f800000, 0x7c00 }, { 0xff800000, 0xfc00 },
        { 0x33800000, 0x0001 }, /* 2^-24, smallest subnormal */
        { 0x33000000, 0x0000 }, /* 2^-25: tie between 0 and 2^-24 -> even, 0 */
        { 0x33000001, 0x0001 }, /* just above the tie */
        { 0x33c00000, 0x0002 }, /* 1.5 * 2^-24: tie -> even, 2 */
        { 0x34200000, 0x0002 }, /* 2.5 * 2^-24: tie -> even, 2 */
        { 0x387fc000, 0x03ff }, /* largest subnormal */
        { 0x387fe000, 0x0400 }, /* rounds up into the smallest normal */
        { 0x38800000, 0x0400 }, /* 2^-14 */
        { 0x3f801000, 0x3c00 }, /* 1 + 2^-11: tie, even -> 1 */
        { 0x3f803000, 0x3c02 }, /* 1 + 3*2^-11: tie, odd -> up */
        { 0x00000001, 0x0000 }, { 0x80000001, 0x8000 },           /* f32 denormals */
        { 0x7fc00000, 0x7e00 }, { 0xffc00000, 0xfe00 },           /* quiet NaN */
        { 0x7f800001, 0x7c01 }, /* payload below the kept bits: stays a NaN */
        { 0x7fa00000, 0x7d00 }, /* signalling NaN: payload kept, not quieted (numpy) */
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        cr_assert_eq(lc_f32_to_f16(fb(cases[i].in)), cases[i].out, "%#x -> %#x, want %#x",
                     cases[i].in, lc_f32_to_f16(fb(cases[i].in)), cases[i].out);
}

Test(convert, f16_to_f32_every_pattern_round_trips) {
    for (uint32_t h = 0; h < 0x10000; h++) {
        const float f = lc_f16_to_f32((uint16_t)h);
        cr_assert_eq(lc_f32_to_f16(f), h, "%#x", h);
    }
    cr_assert_eq(bf(lc_f16_to_f32(0x0001)), 0x33800000);        /* 2^-24 */
    cr_assert_eq(bf(lc_f16_to_f32(0x83ff)), 0xb87fc000);        /* -largest subnormal */
    cr_assert_eq(bf(lc_f16_to_f32(0x7c00)), 0x7f800000);
    cr_assert_eq(bf(lc_f16_to_f32(0xfd23)), 0xffa46000);        /* payload shifted up */
}

Test(convert, bf16_edges) {
    cr_assert_eq(lc_f32_to_bf16(fb(0x3f808000)), 0x3f80);       /* tie, even: down */
    cr_assert_eq(lc_f32_to_bf16(fb(0x3f818000)), 0x3f82);       /* tie, odd: up */
    cr_assert_eq(lc_f32_to_bf16(fb(0x3f808001)), 0x3f81);
    cr_assert_eq(lc_f32_to_bf16(fb(0x7f7fffff)), 0x7f80);       /* max rounds to inf */
    cr_assert_eq(lc_f32_to_bf16(fb(0xff800000)), 0xff80);
    cr_assert_eq(lc_f32_to_bf16(fb(0x00008000)), 0x0000);       /* denormal tie -> 0 */
    cr_assert_eq(lc_f32_to_bf16(fb(0x00018000)), 0x0002);
    cr_assert_eq(lc_f32_to_bf16(fb(0x7f800001)), 0x7fc0);       /* NaN: canonical, sign */
    cr_assert_eq(lc_f32_to_bf16(fb(0xffffffff)), 0xffc0);
    for (uint32_t b = 0; b < 0x10000; b++)
        if ((b & 0x7fff) <= 0x7f80)
            cr_assert_eq(lc_f32_to_bf16(lc_bf16_to_f32((uint16_t)b)), b, "%#x", b);
}

Test(convert, f8_edges) {
    cr_assert_eq(lc_f8e4m3_to_f32(0x7e), 448.0f);
    cr_assert_eq(lc_f8e4m3_to_f32(0x01), 0x1p-9f);
    cr_assert_eq(lc_f8e4m3_to_f32(0x08), 0x1p-6f);
    cr_assert_eq(bf(lc_f8e4m3_to_f32(0xff)), 0xffc00000);
    cr_assert_eq(lc_f8e4m3_to_f32(0x78), 256.0f);           /* not inf in the FN variant */
    cr_assert_eq(lc_f8e5m2_to_f32(0x7b), 57344.0f);
    cr_assert(isinf(lc_f8e5m2_to_f32(0xfc)) && lc_f8e5m2_to_f32(0xfc) < 0);
    cr_assert_eq(bf(lc_f8e5m2_to_f32(0x7d)), 0x7fc00000);
    cr_assert_eq(lc_f8e5m2_to_f32(0x01), 0x1p-16f);
    cr_assert_eq(lc_f32_to_f8e4m3(464.0f), 0x7e);           /* tie at the top: even */
    cr_assert_eq(lc_f32_to_f8e4m3(465.0f), 0x7f);           /* past it: NaN */
    cr_assert_eq(lc_f32_to_f8e4m3(-INFINITY), 0xff);
    cr_assert_eq(lc_f32_to_f8e4m3(0x1p-10f), 0x00);         /* tie with 0: even */
    cr_assert_eq(lc_f32_to_f8e4m3(0x1.8p-10f), 0x01);
    cr_assert_eq(lc_f32_to_f8e5m2(61440.0f), 0x7c);         /* tie, odd: up to inf */
    cr_assert_eq(lc_f32_to_f8e5m2(NAN), 0x7e);
    for (uint32_t v = 0; v < 256; v++) {                     /* every non-NaN round trips */
        if ((v & 0x7f) != 0x7f)
            cr_assert_eq(lc_f32_to_f8e4m3(lc_f8e4m3_to_f32((uint8_t)v)), v, "%#x", v);
        if ((v & 0x7f) <= 0x7c)
            cr_assert_eq(lc_f32_to_f8e5m2(lc_f8e5m2_to_f32((uint8_t)v)), v, "%#x", v);
    }
}

/* ---- rows ---- */

Test(convert, rows_odd_lengths_and_unaligned) {
    /* 67 elements: two vector blocks and a scalar tail, at an odd address. */
    uint8_t src[4 * 67 + 1], dst[2 * 67 + 1], back[4 * 67 + 1];
    for (int i = 0; i < 67; i++)
        lc_store_le32(src + 1 + 4 * i, bf((float)(i - 33) * 0.37f));
    cr_assert_eq(lc_convert(LC_DT_F32, src + 1, LC_DT_F16, dst + 1, 67, NULL), LC_OK);
    for (int i = 0; i < 67; i++)
        cr_assert_eq(lc_load_le16(dst + 1 + 2 * i),
                     lc_f32_to_f16((float)(i - 33) * 0.37f), "%d", i);
    cr_assert_eq(lc_convert(LC_DT_F16, dst + 1, LC_DT_F32, back + 1, 67, NULL), LC_OK);
    for (int i = 0; i < 67; i++)
        cr_assert_eq(lc_load_le32(back + 1 + 4 * i),
                     bf(lc_f16_to_f32(lc_load_le16(dst + 1 + 2 * i))), "%d", i);
    cr_assert_eq(lc_convert(LC_DT_F32, src, LC_DT_F16, dst, 0, NULL), LC_OK);
}

Test(convert, int_overflow_names_index_and_offset) {
    static const uint8_t i16[] = { 0x01, 0x00, 0xff, 0x7f, 0x80, 0x00, 0x00, 0x01 };
    uint8_t out[16];
    lc_error err = {0};
    /* 1, 32767, 128, 256 -> I8: element 1 does not fit */
    cr_assert_eq(lc_convert(LC_DT_I16, i16, LC_DT_I8, out, 4, &err), LC_E_OVERFLOW);
    cr_assert_eq(err.offset, 2);
    cr_assert_str_eq(err.msg, "element 1 (32767) does not fit I8");
    cr_assert_eq(out[0], 1);                               /* the elements before it */
    memset(&err, 0, sizeof err);
    static const uint8_t neg[] = { 0x05, 0xfb };           /* I8 5, -5 */
    cr_assert_eq(lc_convert(LC_DT_I8, neg, LC_DT_U64, out, 2, &err), LC_E_OVERFLOW);
    cr_assert_eq(err.offset, 1);
    cr_assert_str_eq(err.msg, "element 1 (-5) does not fit U64");
    memset(&err, 0, sizeof err);
    static const uint8_t big[] = { 0, 0, 0, 0, 0, 0, 0, 0x80 }; /* U64 2^63 */
    cr_assert_eq(lc_convert(LC_DT_U64, big, LC_DT_I64, out, 1, &err), LC_E_OVERFLOW);
    cr_assert_eq(err.offset, 0);
    uint8_t wide[8];
    cr_assert_eq(lc_convert(LC_DT_I8, neg, LC_DT_I32, wide, 2, NULL), LC_OK);
    cr_assert_eq(lc_load_le32(wide + 4), 0xfffffffbu);
    cr_assert_eq(lc_convert(LC_DT_I16, i16, LC_DT_BOOL, out, 4, NULL), LC_OK);
    cr_assert_eq(memcmp(out, "\1\1\1\1", 4), 0);
}

Test(convert, unsupported_pairs) {
    uint8_t b[8] = {0};
    lc_error err = {0};
    cr_assert_eq(lc_convert(LC_DT_F32, b, LC_DT_I32, b, 1, &err), LC_E_UNSUPPORTED);
    cr_assert_eq(err.offset, LC_NO_OFFSET);
    cr_assert_eq(lc_convert(LC_DT_Q8_0, b, LC_DT_F32, b, 1, NULL), LC_E_UNSUPPORTED);
    cr_assert_eq(lc_convert(LC_DT_F32, b, LC_DT_INVALID, b, 1, NULL), LC_E_UNSUPPORTED);
    cr_assert(lc_convert_supported(LC_DT_I64, LC_DT_F8_E4M3));
    cr_assert(lc_convert_supported(LC_DT_F64, LC_DT_BOOL));
    cr_assert_not(lc_convert_supported(LC_DT_BF16, LC_DT_U8));
}

/* The 8-bit float types ml_dtypes also has (tests/integration/test_convert.py compares
 * every conversion with it): what "lossless" claims for them holds on all 256 codes
 * (there and back again, bit for bit but for NaN payloads), and nothing converts into
 * E8M0. */
Test(convert, f8_lossless_claims_hold_on_every_code) {
    static const lc_dtype f8[] = { LC_DT_F8_E4M3, LC_DT_F8_E5M2, LC_DT_F8_E4M3FNUZ,
                                   LC_DT_F8_E5M2FNUZ };
    static const lc_dtype wide[] = { LC_DT_F8_E4M3, LC_DT_F8_E5M2, LC_DT_F8_E4M3FNUZ,
                                     LC_DT_F8_E5M2FNUZ, LC_DT_F16, LC_DT_BF16, LC_DT_F32,
                                     LC_DT_F64 };
    uint8_t codes[256], back[256], mid[256 * 8];
    for (int v = 0; v < 256; v++)
        codes[v] = (uint8_t)v;
    int claimed = 0;
    for (size_t i = 0; i < sizeof f8 / sizeof f8[0]; i++)
        for (size_t j = 0; j < sizeof wide / sizeof wide[0]; j++) {
            if (f8[i] == wide[j] || !lc_convert_is_lossless(f8[i], wide[j]))
                continue;
            claimed++;
            cr_assert_eq(lc_convert(f8[i], codes, wide[j], mid, 256, NULL), LC_OK);
            cr_assert_eq(lc_convert(wide[j], mid, f8[i], back, 256, NULL), LC_OK);
            float a[256], b[256];
            cr_assert_eq(lc_convert(f8[i], codes, LC_DT_F32, a, 256, NULL), LC_OK);
            cr_assert_eq(lc_convert(f8[i], back, LC_DT_F32, b, 256, NULL), LC_OK);
            for (int v = 0; v < 256; v++)   /* a NaN stays NaN (its payload may not) */
                cr_assert(isnan(a[v]) ? isnan(b[v]) : back[v] == v, "%s -> %s -> %s: %#x",
                          lc_dtype_name(f8[i]), lc_dtype_name(wide[j]), lc_dtype_name(f8[i]),
                          v);
        }
    cr_assert_eq(claimed, 16, "%d", claimed);   /* each into F16, BF16, F32 and F64 */
    cr_assert_not(lc_convert_is_lossless(LC_DT_F8_E4M3FNUZ, LC_DT_F8_E4M3));  /* 2^-10 */
    cr_assert_not(lc_convert_is_lossless(LC_DT_F8_E5M2, LC_DT_F8_E5M2FNUZ));   /* inf */
    cr_assert_not(lc_convert_is_lossless(LC_DT_F8_E4M3, LC_DT_F8_E4M3FNUZ));   /* 448 */
    /* E8M0: 2^-127 .. 2^127 and NaN, exact in F32 and BF16, not in F16. */
    cr_assert(lc_convert_is_lossless(LC_DT_F8_E8M0, LC_DT_F32));
    cr_assert(lc_convert_is_lossless(LC_DT_F8_E8M0, LC_DT_BF16));
    cr_assert_not(lc_convert_is_lossless(LC_DT_F8_E8M0, LC_DT_F16));
    float f[256];
    cr_assert_eq(lc_convert(LC_DT_F8_E8M0, codes, LC_DT_F32, f, 256, NULL), LC_OK);
    for (int v = 0; v < 255; v++)
        cr_assert_eq(f[v], ldexpf(1.0f, v - 127), "%d", v);
    cr_assert(isnan(f[255]));
    for (int t = LC_DT_BOOL; t <= LC_DT_U64; t++)
        cr_assert_not(lc_convert_supported((lc_dtype)t, LC_DT_F8_E8M0) && t != LC_DT_F8_E8M0,
                      "%s", lc_dtype_name((lc_dtype)t));
}

Test(convert, lossless_table) {
    cr_assert(lc_convert_is_lossless(LC_DT_F16, LC_DT_F32));
    cr_assert(lc_convert_is_lossless(LC_DT_BF16, LC_DT_F32));
    cr_assert(lc_convert_is_lossless(LC_DT_F8_E4M3, LC_DT_F16));
    cr_assert(lc_convert_is_lossless(LC_DT_F8_E5M2, LC_DT_BF16));
    cr_assert(lc_convert_is_lossless(LC_DT_U8, LC_DT_BF16));
    cr_assert(lc_convert_is_lossless(LC_DT_I16, LC_DT_F32));
    cr_assert(lc_convert_is_lossless(LC_DT_U32, LC_DT_I64));
    cr_assert(lc_convert_is_lossless(LC_DT_BOOL, LC_DT_F8_E5M2));
    cr_assert(lc_convert_is_lossless(LC_DT_F32, LC_DT_F32));
    cr_assert_not(lc_convert_is_lossless(LC_DT_F16, LC_DT_BF16));
    cr_assert_not(lc_convert_is_lossless(LC_DT_BF16, LC_DT_F16));
    cr_assert_not(lc_convert_is_lossless(LC_DT_F8_E5M2, LC_DT_F8_E4M3));
    cr_assert_not(lc_convert_is_lossless(LC_DT_F8_E4M3, LC_DT_F8_E5M2));
    cr_assert_not(lc_convert_is_lossless(LC_DT_I8, LC_DT_U64));
    cr_assert_not(lc_convert_is_lossless(LC_DT_U16, LC_DT_F16));
    cr_assert_not(lc_convert_is_lossless(LC_DT_I32, LC_DT_F32));
    cr_assert_not(lc_convert_is_lossless(LC_DT_I64, LC_DT_F64));
    cr_assert_not(lc_convert_is_lossless(LC_DT_F32, LC_DT_BOOL));
    cr_assert_not(lc_convert_is_lossless(LC_DT_F32, LC_DT_I64));
    cr_assert_not(lc_convert_is_lossless(LC_DT_Q8_0, LC_DT_F32));
    /* Lossless claims hold for every F16, BF16 and F8 pattern. */
    static const lc_dtype narrow[] = { LC_DT_F16, LC_DT_BF16, LC_DT_F8_E4M3, LC_DT_F8_E5M2 };
    static const lc_dtype wide[] = { LC_DT_F16, LC_DT_BF16, LC_DT_F8_E4M3, LC_DT_F8_E5M2,
                                     LC_DT_F32, LC_DT_F64 };
    for (size_t a = 0; a < 4; a++)
        for (size_t b = 0; b < 6; b++) {
            if (narrow[a] == wide[b] || !lc_convert_is_lossless(narrow[a], wide[b]))
                continue;
            const size_t n = lc_dtype_get(narrow[a])->type_size == 1 ? 256 : 65536;
            static uint8_t in[2 * 65536], mid[8 * 65536], out[2 * 65536];
            for (size_t i = 0; i < n; i++)
                lc_store_le16(in + 2 * i, (uint16_t)i);
            if (n == 256)
                for (size_t i = 0; i < n; i++)
                    in[i] = (uint8_t)i;
            cr_assert_eq(lc_convert(narrow[a], in, wide[b], mid, n, NULL), LC_OK);
            cr_assert_eq(lc_convert(wide[b], mid, narrow[a], out, n, NULL), LC_OK);
            const size_t sz = lc_dtype_get(narrow[a])->type_size;
            for (size_t i = 0; i < n; i++) {
                float x, y;
                uint8_t one[8];
                lc_convert(narrow[a], in + i * sz, LC_DT_F32, one, 1, NULL);
                x = fb(lc_load_le32(one));
                lc_convert(narrow[a], out + i * sz, LC_DT_F32, one, 1, NULL);
                y = fb(lc_load_le32(one));
                cr_assert((isnan(x) && isnan(y)) || bf(x) == bf(y), "%s->%s %#zx",
                          lc_dtype_name(narrow[a]), lc_dtype_name(wide[b]), i);
            }
        }
}

/* ---- the cast ---- */

/* A lazy source that serves bytes from a buffer, counts its reads and frees, and can
 * be told to fail; it checks that it is handed the tensor as it was before the cast. */
typedef struct fake_src {
    const uint8_t *bytes;
    lc_dtype dtype;
    uint64_t nbytes;
    int reads, *frees;
    bool fail;
} fake_src;

static lc_code fake_read(void *ctx, const lc_tensor *t, uint64_t off, void *dst, size_t len,
                         lc_error *err) {
    fake_src *s = ctx;
    cr_assert_eq(t->dtype, s->dtype);
    cr_assert_eq(t->nbytes, s->nbytes);
    s->reads++;
    if (s->fail)
        return lc_fail(err, LC_E_IO, 1234, "fake read failed");
    memcpy(dst, s->bytes + off, len);
    return LC_OK;
}
static void fake_free(void *ctx) { (*((fake_src *)ctx)->frees)++; }
static const lc_source_ops g_fake_ops = { fake_read, fake_free };

/* 50 F32 values and their F16 bytes, for reads at every offset and length. */
static void make_f32(uint8_t *f32, uint8_t *f16, int n) {
    for (int i = 0; i < n; i++) {
        const float v = (float)(i * i) * 0.1f - 7.0f;
        lc_store_le32(f32 + 4 * i, bf(v));
        lc_store_le16(f16 + 2 * i, lc_f32_to_f16(v));
    }
}

static void check_every_range(lc_tensor *t, const uint8_t *want) {
    uint8_t got[256];
    for (uint64_t off = 0; off <= t->nbytes; off++)
        for (uint64_t len = 0; off + len <= t->nbytes; len++) {
            memset(got, 0xaa, sizeof got);
            cr_assert_eq(lc_tensor_read(t, off, got, (size_t)len, NULL), LC_OK);
            cr_assert_eq(memcmp(got, want + off, (size_t)len), 0, "off %d len %d", (int)off,
                         (int)len);
            cr_assert_eq(got[len], 0xaa, "wrote past the range");
        }
}

Test(cast, partial_ranges_from_a_view) {
    uint8_t f32[4 * 50], f16[2 * 50];
    make_f32(f32, f16, 50);
    lc_model *m = lc_model_new();
    lc_tensor *t;
    uint64_t shape[2] = { 5, 10 };
    cr_assert_eq(lc_model_add_tensor(m, "w", LC_DT_F32, 2, shape, &t, NULL), LC_OK);
    t->data = f32;
    t->file_offset = 100;
    cr_assert_eq(lc_tensor_cast(t, LC_DT_F16, NULL), LC_OK);
    cr_assert_eq(t->dtype, LC_DT_F16);
    cr_assert_eq(t->nbytes, 100);
    cr_assert_eq(t->shape[0], 5);
    cr_assert_eq(t->shape[1], 10);
    cr_assert_null(t->data);
    cr_assert_eq(t->file_offset, LC_NO_OFFSET);
    check_every_range(t, f16);
    /* casting back (a cast of a cast) gives the F16 values widened */
    uint8_t wide[4 * 50];
    cr_assert_eq(lc_convert(LC_DT_F16, f16, LC_DT_F32, wide, 50, NULL), LC_OK);
    cr_assert_eq(lc_tensor_cast(t, LC_DT_F32, NULL), LC_OK);
    check_every_range(t, wide);
    lc_model_free(m);
}

Test(cast, lazy_source_moves_and_is_freed_once) {
    uint8_t f32[4 * 50], f16[2 * 50];
    make_f32(f32, f16, 50);
    int frees = 0;
    fake_src src = { f16, LC_DT_F16, 100, 0, &frees, false };
    lc_model *m = lc_model_new();
    lc_tensor *t;
    uint64_t shape[1] = { 50 };
    cr_assert_eq(lc_model_add_tensor(m, "lazy", LC_DT_F16, 1, shape, &t, NULL), LC_OK);
    t->ops = &g_fake_ops;
    t->ctx = &src;
    cr_assert_eq(lc_tensor_cast(t, LC_DT_F32, NULL), LC_OK);
    cr_assert_eq(t->nbytes, 200);
    uint8_t wide[4 * 50];
    cr_assert_eq(lc_convert(LC_DT_F16, f16, LC_DT_F32, wide, 50, NULL), LC_OK);
    check_every_range(t, wide);
    cr_assert(src.reads > 0);
    cr_assert_eq(frees, 0);
    /* an error inside the old source comes out unchanged */
    src.fail = true;
    lc_error err = {0};
    uint8_t b[8];
    cr_assert_eq(lc_tensor_read(t, 3, b, 6, &err), LC_E_IO);
    cr_assert_eq(err.offset, 1234);
    lc_model_free(m);
    cr_assert_eq(frees, 1);
}

Test(cast, int_overflow_reports_file_offset) {
    static const uint8_t i32[] = { 1, 0, 0, 0, 0, 1, 0, 0, 2, 0, 0, 0 };  /* 1, 256, 2 */
    lc_model *m = lc_model_new();
    lc_tensor *t;
    uint64_t shape[1] = { 3 };
    cr_assert_eq(lc_model_add_tensor(m, "ids", LC_DT_I32, 1, shape, &t, NULL), LC_OK);
    t->data = i32;
    t->file_offset = 0x40;
    cr_assert_eq(lc_tensor_cast(t, LC_DT_U8, NULL), LC_OK);
    uint8_t b[3];
    cr_assert_eq(lc_tensor_read(t, 0, b, 1, NULL), LC_OK);
    cr_assert_eq(b[0], 1);
    cr_assert_eq(lc_tensor_read(t, 2, b, 1, NULL), LC_OK);
    cr_assert_eq(b[0], 2);
    lc_error err = {0};
    cr_assert_eq(lc_tensor_read(t, 0, b, 3, &err), LC_E_OVERFLOW);
    cr_assert_eq(err.offset, 0x44);                 /* element 1 in the source file */
    cr_assert_str_eq(err.where, "ids");
    cr_assert_str_eq(err.msg, "element 1 (256) does not fit U8");
    lc_model_free(m);
}

Test(cast, zero_size_and_scalar) {
    lc_model *m = lc_model_new();
    lc_tensor *z, *s;
    uint64_t shape[2] = { 4, 0 };
    cr_assert_eq(lc_model_add_tensor(m, "empty", LC_DT_BF16, 2, shape, &z, NULL), LC_OK);
    cr_assert_eq(lc_tensor_cast(z, LC_DT_F32, NULL), LC_OK);  /* no data source at all */
    cr_assert_eq(z->nbytes, 0);
    cr_assert_eq(z->shape[0], 4);
    uint8_t b[4];
    cr_assert_eq(lc_tensor_read(z, 0, b, 0, NULL), LC_OK);
    cr_assert_eq(lc_tensor_read(z, 0, b, 1, NULL), LC_E_ARG);
    static const uint8_t one[2] = { 0x80, 0x3f };            /* BF16 1.0 */
    cr_assert_eq(lc_model_add_tensor(m, "s", LC_DT_BF16, 0, NULL, &s, NULL), LC_OK);
    s->data = one;
    cr_assert_eq(lc_tensor_cast(s, LC_DT_F64, NULL), LC_OK);
    uint8_t d[8];
    cr_assert_eq(lc_tensor_read(s, 0, d, 8, NULL), LC_OK);
    cr_assert_eq(lc_load_le64(d), 0x3ff0000000000000ull);
    lc_model_free(m);
}

Test(cast, refusals_leave_the_tensor_alone) {
    lc_model *m = lc_model_new();
    lc_tensor *t;
    static const uint8_t f[4] = {0};
    cr_assert_eq(lc_model_add_tensor(m, "x", LC_DT_F32, 0, NULL, &t, NULL), LC_OK);
    t->data = f;
    lc_error err = {0};
    cr_assert_eq(lc_tensor_cast(t, LC_DT_I32, &err), LC_E_UNSUPPORTED);
    cr_assert_str_eq(err.where, "x");
    cr_assert_eq(t->dtype, LC_DT_F32);
    cr_assert_eq(t->data, f);
    cr_assert_eq(lc_tensor_cast(t, LC_DT_F32, NULL), LC_OK);   /* same type: nothing */
    cr_assert_eq(t->data, f);
    lc_model_free(m);
}

Test(cast, out_of_memory_leaves_the_tensor_alone) {
    lc_model *m = lc_model_new();
    lc_tensor *t;
    static const uint8_t f[4] = { 0, 0, 0x80, 0x3f };
    cr_assert_eq(lc_model_add_tensor(m, "x", LC_DT_F32, 0, NULL, &t, NULL), LC_OK);
    t->data = f;
    for (long nth = 1; nth <= 2; nth++) {            /* the context, then the name copy */
        lc_error err = {0};
        lc_alloc_fail_after(nth);
        lc_code rc = lc_tensor_cast(t, LC_DT_F16, &err);
        lc_alloc_fail_after(0);
        cr_assert_eq(rc, LC_E_NOMEM, "allocation %ld", nth);
        cr_assert_eq(err.offset, LC_NO_OFFSET);
        cr_assert_str_eq(err.where, "x");
        cr_assert_eq(t->dtype, LC_DT_F32);
        cr_assert_eq(t->data, f);
        cr_assert_null(t->ops);
    }
    cr_assert_eq(lc_tensor_cast(t, LC_DT_F16, NULL), LC_OK);
    uint8_t h[2];
    cr_assert_eq(lc_tensor_read(t, 0, h, 2, NULL), LC_OK);
    cr_assert_eq(lc_load_le16(h), 0x3c00);
    lc_model_free(m);
}

static bool only_w(const lc_tensor *t) { return strcmp(t->name, "w") == 0; }

Test(cast, model_cast_floats_or_wanted) {
    lc_model *m = lc_model_new();
    lc_tensor *a, *b, *c;
    static const uint8_t bytes[8] = {0};
    uint64_t shape[1] = { 2 };
    cr_assert_eq(lc_model_add_tensor(m, "w", LC_DT_F32, 1, shape, &a, NULL), LC_OK);
    cr_assert_eq(lc_model_add_tensor(m, "ids", LC_DT_I32, 1, shape, &b, NULL), LC_OK);
    cr_assert_eq(lc_model_add_tensor(m, "n", LC_DT_BF16, 1, shape, &c, NULL), LC_OK);
    a->data = b->data = c->data = bytes;
    cr_assert_eq(lc_model_cast(m, LC_DT_F16, only_w, NULL), LC_OK);
    cr_assert_eq(a->dtype, LC_DT_F16);
    cr_assert_eq(c->dtype, LC_DT_BF16);
    cr_assert_eq(lc_model_cast(m, LC_DT_F32, NULL, NULL), LC_OK);   /* every float */
    cr_assert_eq(a->dtype, LC_DT_F32);
    cr_assert_eq(b->dtype, LC_DT_I32);
    cr_assert_eq(c->dtype, LC_DT_F32);
    cr_assert_eq(c->nbytes, 8);
    /* a refused pair changes nothing, even in tensors before it */
    lc_error err = {0};
    cr_assert_eq(lc_model_cast(m, LC_DT_U8, NULL, &err), LC_E_UNSUPPORTED);
    cr_assert_str_eq(err.where, "w");
    cr_assert_eq(a->dtype, LC_DT_F32);
    lc_model_free(m);
}
