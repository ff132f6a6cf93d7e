/* libconvert/convert.c: row conversions between plain dtypes, and the lazy cast.
 *
 * Element layouts (all little-endian):
 *
 *   F64   |s|e:11|m:52|          bias 1023
 *   F32   |s|e:8 |m:23|          bias 127
 *   BF16  |s|e:8 |m:7 |          bias 127   (the top half of an F32)
 *   F16   |s|e:5 |m:10|          bias 15    max 65504, subnormal step 2^-24
 *   F8_E5M2 |s|e:5|m:2|          bias 15    (the top byte of an F16), has inf
 *   F8_E4M3 |s|e:4|m:3|          bias 7     "FN": no inf, s.1111.111 is NaN, max 448
 *   F8_E4M3FNUZ, F8_E5M2FNUZ     as E4M3 / E5M2 with bias 8 / 16, no inf, no -0:
 *                                1.0000.000 (0x80) is the one NaN; max 240 / 57344
 *   F8_E8M0 |e:8|                bias 127, 2^(e-127) from 2^-127, 0xff NaN (read only)
 *   BOOL  one byte, 0 or 1; I8..I64 two's complement, U8..U64 unsigned
 *
 * Which reference each pair follows (the tests compare with it bit for bit):
 * pairs within {F16, F32, F64} follow numpy; pairs with BF16 or F8 follow ml_dtypes,
 * which converts through F32 (so F64 -> BF16/F8 and int -> BF16/F8 round twice, as it
 * does) and turns a NaN headed for F16 into sign|0x7e00. Ints go to floats through F32
 * too, except F64, which C converts directly; both round once for every int -> F16.
 *
 * Speed: the common float pairs run in fixed blocks of BLK elements through local
 * arrays, so that gcc's -O2 vectoriser (the "very cheap" model: known trip count, no
 * aliasing checks) turns the branch-free scalar code in convert.h into SIMD. */
#include "libconvert/convert.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "libconvert/alloc.h"
#include "libconvert/convert_impl.h"

#define BLK 32

/* ---- host-order loads and stores of little-endian elements ---- */

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define LE16(x) __builtin_bswap16(x)
#define LE32(x) __builtin_bswap32(x)
#define LE64(x) __builtin_bswap64(x)
#else
#define LE16(x) (x)
#define LE32(x) (x)
#define LE64(x) (x)
#endif

static inline uint16_t ld16(const uint8_t *p) { uint16_t v; memcpy(&v, p, 2); return LE16(v); }
static inline uint32_t ld32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return LE32(v); }
static inline uint64_t ld64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return LE64(v); }
static inline void st16(uint8_t *p, uint16_t v) { v = LE16(v); memcpy(p, &v, 2); }
static inline void st32(uint8_t *p, uint32_t v) { v = LE32(v); memcpy(p, &v, 4); }
static inline void st64(uint8_t *p, uint64_t v) { v = LE64(v); memcpy(p, &v, 8); }

static inline double bits_f64(uint64_t u) { double d; memcpy(&d, &u, 8); return d; }
static inline uint64_t f64_bits(double d) { uint64_t u; memcpy(&u, &d, 8); return u; }

/* ---- scalars not inlined in the header ---- */

/* binary32 -> an 8-bit float with M mantissa bits and exponent bias B; `maxcode` is
 * the largest finite magnitude code, `ovf` what overflow and infinity become. */
static inline uint8_t f32_to_f8(float f, int M, int B, uint32_t maxcode, uint32_t ovf,
                                uint32_t nan) {
    const uint32_t x = lc_f32_to_bits(f);
    const uint32_t sign = (x >> 24) & 0x80u;
    const uint32_t a = x & 0x7fffffffu;
    uint32_t h;
    if (a > 0x7f800000u) {
        h = nan;
    } else if (a < (uint32_t)(127 + 1 - B) << 23) {
        /* Below the smallest normal: C's ulp is one f8 subnormal step, 2^(1-B-M), so
         * the FPU's addition rounds to nearest even for us (the result may be the
         * smallest normal, whose code follows the subnormals). */
        const float c = lc_bits_to_f32((uint32_t)(127 + 1 - B - M + 23) << 23);
        h = lc_f32_to_bits(lc_bits_to_f32(a) + c) - lc_f32_to_bits(c);
    } else {
        const int s = 23 - M;
        const uint32_t m = a - ((uint32_t)(127 - B) << 23);
        h = (m + (1u << (s - 1)) - 1u + ((m >> s) & 1u)) >> s;
        if (a == 0x7f800000u || h > maxcode)
            h = ovf;
    }
    return (uint8_t)(sign | h);
}

uint8_t lc_f32_to_f8e4m3(float f) { return f32_to_f8(f, 3, 7, 0x7e, 0x7f, 0x7f); }
uint8_t lc_f32_to_f8e5m2(float f) { return f32_to_f8(f, 2, 15, 0x7b, 0x7c, 0x7e); }

/* The FNUZ types: the magnitude as above (0x80 for NaN and overflow), then the sign,
 * except on a zero, which has no negative. */
static inline uint8_t f32_to_f8fnuz(float f, int M, int B) {
    const uint32_t x = lc_f32_to_bits(f);
    const uint8_t h = f32_to_f8(lc_bits_to_f32(x & 0x7fffffffu), M, B, 0x7f, 0x80, 0x80);
    return h == 0x80u || h == 0 ? h : (uint8_t)(((x >> 24) & 0x80u) | h);
}
uint8_t lc_f32_to_f8e4m3fnuz(float f) { return f32_to_f8fnuz(f, 3, 8); }
uint8_t lc_f32_to_f8e5m2fnuz(float f) { return f32_to_f8fnuz(f, 2, 16); }

/* binary64 -> binary16 in one rounding, numpy's rule (npy_doublebits_to_halfbits):
 * a NaN keeps its top 10 payload bits, and becomes 0x7c01 if those are all zero. */
static uint16_t f64_to_f16(double d) {
    const uint64_t x = f64_bits(d);
    const uint16_t sign = (uint16_t)((x >> 48) & 0x8000u);
    const uint64_t a = x & 0x7fffffffffffffffull;
    uint64_t h;
    if (a > 0x7ff0000000000000ull) {
        h = 0x7c00u | ((a >> 42) & 0x3ffu);
        h |= h == 0x7c00u;
    } else if (a >= 0x40f0000000000000ull) {               /* >= 65536 or inf */
        h = 0x7c00u;
    } else if (a < 0x3f10000000000000ull) {                /* below 2^-14 */
        /* Scale so that one subnormal step is 1 (exact: a power of two), then round
         * to an integer by the 2^52 trick in the default rounding mode. */
        const double v = bits_f64(a) * 0x1p24;
        h = (uint64_t)((v + 0x1p52) - 0x1p52);
    } else {
        const uint64_t m = a - ((uint64_t)(1023 - 15) << 52);
        h = (m + (1ull << 41) - 1u + ((m >> 42) & 1u)) >> 42;
    }
    return (uint16_t)(sign | h);
}

/* binary16 -> binary64, exact; NaN payloads move up unchanged (numpy). */
static double f16_to_f64(uint16_t h) {
    if ((h & 0x7c00u) == 0x7c00u && (h & 0x3ffu))
        return bits_f64((uint64_t)(h & 0x8000u) << 48 | 0x7ff0000000000000ull |
                        (uint64_t)(h & 0x3ffu) << 42);
    return (double)lc_f16_to_f32(h);
}

/* ml_dtypes' way to F16 from BF16 and F8: through F32, NaN -> sign|0x7e00. 32 bits
 * wide for the vectoriser, like lc_convert_f32_to_f16_wide. */
static inline uint32_t f32_to_f16_md(float f) {
    const uint32_t x = lc_f32_to_bits(f);
    const uint32_t nan = ((x >> 16) & 0x8000u) | 0x7e00u;
    const uint32_t h = lc_convert_f32_to_f16_wide(f);
    const uint32_t m = -(uint32_t)((x & 0x7fffffffu) > 0x7f800000u);
    return (nan & m) | (h & ~m);                        /* masks: see lc_f32_to_f16 */
}

/* ---- classification ---- */

enum kind { K_NONE, K_BOOL, K_INT, K_FLOAT };

static enum kind kind_of(lc_dtype t) {
    switch (t) {
    case LC_DT_BOOL:
        return K_BOOL;
    case LC_DT_U8: case LC_DT_I8: case LC_DT_I16: case LC_DT_U16: case LC_DT_I32:
    case LC_DT_U32: case LC_DT_I64: case LC_DT_U64:
        return K_INT;
    case LC_DT_F8_E5M2: case LC_DT_F8_E4M3: case LC_DT_F8_E8M0: case LC_DT_F8_E4M3FNUZ:
    case LC_DT_F8_E5M2FNUZ: case LC_DT_F16: case LC_DT_BF16: case LC_DT_F32: case LC_DT_F64:
        return K_FLOAT;
    default:
        return K_NONE;
    }
}

bool lc_convert_supported(lc_dtype from, lc_dtype to) {
    const enum kind a = kind_of(from), b = kind_of(to);
    if (a == K_NONE || b == K_NONE || (to == LC_DT_F8_E8M0 && from != to))
        return false;
    return !(a == K_FLOAT && b == K_INT);
}

/* Three facts per float format: significant bits (implicit bit included), the binary
 * exponent of its largest finite value, and that of its smallest subnormal. */
static int float_digits(lc_dtype t) {
    switch (t) {
    case LC_DT_F8_E8M0: return 1;
    case LC_DT_F8_E5M2: case LC_DT_F8_E5M2FNUZ: return 3;
    case LC_DT_F8_E4M3: case LC_DT_F8_E4M3FNUZ: return 4;
    case LC_DT_BF16: return 8;
    case LC_DT_F16: return 11;
    case LC_DT_F32: return 24;
    default: return 53;
    }
}
static int float_emax(lc_dtype t) {
    switch (t) {
    case LC_DT_F8_E4M3FNUZ: return 7;
    case LC_DT_F8_E4M3: return 8;
    case LC_DT_F8_E5M2: case LC_DT_F8_E5M2FNUZ: case LC_DT_F16: return 15;
    case LC_DT_F8_E8M0: case LC_DT_BF16: case LC_DT_F32: return 127;
    default: return 1023;
    }
}
static int float_emin_sub(lc_dtype t) {
    switch (t) {
    case LC_DT_F8_E4M3: return -9;
    case LC_DT_F8_E4M3FNUZ: return -10;
    case LC_DT_F8_E5M2: return -16;
    case LC_DT_F8_E5M2FNUZ: return -17;
    case LC_DT_F8_E8M0: return -127;
    case LC_DT_F16: return -24;
    case LC_DT_BF16: return -133;
    case LC_DT_F32: return -149;
    default: return -1074;
    }
}

/* Whether a float type has infinities. */
static bool has_inf(lc_dtype t) {
    return t != LC_DT_F8_E4M3 && t != LC_DT_F8_E4M3FNUZ && t != LC_DT_F8_E5M2FNUZ &&
           t != LC_DT_F8_E8M0;
}

bool lc_convert_is_lossless(lc_dtype from, lc_dtype to) {
    const enum kind a = kind_of(from), b = kind_of(to);
    if (a == K_NONE || b == K_NONE)
        return false;
    if (from == to || a == K_BOOL)
        return true;
    if (b == K_BOOL)
        return false;
    const lc_dtype_info *fi = lc_dtype_get(from), *ti = lc_dtype_get(to);
    const int fbits = (int)fi->type_size * 8 - (fi->is_signed ? 1 : 0);  /* value bits */
    if (a == K_INT && b == K_INT) {
        if (fi->is_signed && !ti->is_signed)
            return false;
        return fbits <= (int)ti->type_size * 8 - (ti->is_signed ? 1 : 0);
    }
    if (a == K_INT) /* every int up to 2^fbits must be exact: needs fbits digits */
        return fbits <= float_digits(to) && fbits <= float_emax(to);
    if (b == K_INT)
        return false;
    /* Float to float: every finite value fits when the precision, the top and the
     * bottom of the range all do; infinities and NaN exist wherever the source has
     * them except in E4M3 and the FNUZ types, which have no infinity (E5M2's inf ->
     * E4M3 is not lossless, but E5M2 -> E4M3 already fails the range test; E5M2 ->
     * E5M2FNUZ does not, hence the second line). */
    const bool inf_lost = has_inf(from) && !has_inf(to);
    return !inf_lost && float_digits(from) <= float_digits(to) &&
           float_emax(from) <= float_emax(to) && float_emin_sub(from) >= float_emin_sub(to);
}

/* ---- the fast float rows ---- */

static void row_f32_f16(const uint8_t *s, uint8_t *d, size_t n) {
    size_t i = 0;
    for (; i + BLK <= n; i += BLK) {
        uint32_t x[BLK], w[BLK];
        uint16_t y[BLK];
        memcpy(x, s + 4 * i, sizeof x);
        for (int k = 0; k < BLK; k++)
            w[k] = lc_convert_f32_to_f16_wide(lc_bits_to_f32(LE32(x[k])));
        for (int k = 0; k < BLK; k++)
            y[k] = LE16((uint16_t)w[k]);
        memcpy(d + 2 * i, y, sizeof y);
    }
    for (; i < n; i++)
        st16(d + 2 * i, lc_f32_to_f16(lc_bits_to_f32(ld32(s + 4 * i))));
}

static void row_f16_f32(const uint8_t *s, uint8_t *d, size_t n) {
    size_t i = 0;
    for (; i + BLK <= n; i += BLK) {
        uint16_t x[BLK];
        uint32_t y[BLK];
        memcpy(x, s + 2 * i, sizeof x);
        for (int k = 0; k < BLK; k++)
            y[k] = LE32(lc_f32_to_bits(lc_f16_to_f32(LE16(x[k]))));
        memcpy(d + 4 * i, y, sizeof y);
    }
    for (; i < n; i++)
        st32(d + 4 * i, lc_f32_to_bits(lc_f16_to_f32(ld16(s + 2 * i))));
}

static void row_f32_bf16(const uint8_t *s, uint8_t *d, size_t n) {
    size_t i = 0;
    for (; i + BLK <= n; i += BLK) {
        uint32_t x[BLK];
        uint16_t y[BLK];
        memcpy(x, s + 4 * i, sizeof x);
        for (int k = 0; k < BLK; k++)
            y[k] = LE16(lc_f32_to_bf16(lc_bits_to_f32(LE32(x[k]))));
        memcpy(d + 2 * i, y, sizeof y);
    }
    for (; i < n; i++)
        st16(d + 2 * i, lc_f32_to_bf16(lc_bits_to_f32(ld32(s + 4 * i))));
}

static void row_bf16_f32(const uint8_t *s, uint8_t *d, size_t n) {
    size_t i = 0;
    for (; i + BLK <= n; i += BLK) {
        uint16_t x[BLK];
        uint32_t y[BLK];
        memcpy(x, s + 2 * i, sizeof x);
        for (int k = 0; k < BLK; k++)
            y[k] = LE32((uint32_t)LE16(x[k]) << 16);
        memcpy(d + 4 * i, y, sizeof y);
    }
    for (; i < n; i++)
        st32(d + 4 * i, (uint32_t)ld16(s + 2 * i) << 16);
}

static void row_bf16_f16(const uint8_t *s, uint8_t *d, size_t n) {
    size_t i = 0;
    for (; i + BLK <= n; i += BLK) {
        uint16_t x[BLK], y[BLK];
        uint32_t w[BLK];
        memcpy(x, s + 2 * i, sizeof x);
        for (int k = 0; k < BLK; k++)
            w[k] = f32_to_f16_md(lc_bf16_to_f32(LE16(x[k])));
        for (int k = 0; k < BLK; k++)
            y[k] = LE16((uint16_t)w[k]);
        memcpy(d + 2 * i, y, sizeof y);
    }
    for (; i < n; i++)
        st16(d + 2 * i, (uint16_t)f32_to_f16_md(lc_bf16_to_f32(ld16(s + 2 * i))));
}

static void row_f16_bf16(const uint8_t *s, uint8_t *d, size_t n) {
    size_t i = 0;
    for (; i + BLK <= n; i += BLK) {
        uint16_t x[BLK], y[BLK];
        memcpy(x, s + 2 * i, sizeof x);
        for (int k = 0; k < BLK; k++)
            y[k] = LE16(lc_f32_to_bf16(lc_f16_to_f32(LE16(x[k]))));
        memcpy(d + 2 * i, y, sizeof y);
    }
    for (; i < n; i++)
        st16(d + 2 * i, lc_f32_to_bf16(lc_f16_to_f32(ld16(s + 2 * i))));
}

/* ---- SIMD rows, chosen once ---- */

static bool g_simd_ok, g_simd_off;
static pthread_once_t g_simd_once = PTHREAD_ONCE_INIT;

static void simd_probe(void) {
#if LC_CONVERT_X86
    g_simd_ok = lc_convert_x86_usable();
#endif
}

void lc_convert_use_simd(bool on) { g_simd_off = !on; }

bool lc_convert_simd_active(void) {
    pthread_once(&g_simd_once, simd_probe);
    return g_simd_ok && !g_simd_off;
}

static lc_convert_simd_fn simd_row(lc_dtype from, lc_dtype to) {
    if (!lc_convert_simd_active())
        return NULL;
#if LC_CONVERT_X86
    if (from == LC_DT_BF16 && to == LC_DT_F16) return lc_convert_x86_bf16_f16;
    if (from == LC_DT_F32 && to == LC_DT_F16) return lc_convert_x86_f32_f16;
    if (from == LC_DT_F16 && to == LC_DT_F32) return lc_convert_x86_f16_f32;
    if (from == LC_DT_BF16 && to == LC_DT_F32) return lc_convert_x86_bf16_f32;
#endif
    (void)from;
    (void)to;
    return NULL;
}

/* Runs `fast` and gives the groups it leaves (a NaN, the tail) to the scalar row. */
static void row_simd(lc_convert_simd_fn fast, void (*row)(const uint8_t *, uint8_t *, size_t),
                     const uint8_t *s, size_t fs, uint8_t *d, size_t ts, size_t n) {
    size_t i = 0;
    while (i < n) {
        i += fast(s + i * fs, d + i * ts, n - i);
        const size_t k = n - i < 8 ? n - i : 8;
        row(s + i * fs, d + i * ts, k);
        i += k;
    }
}

/* ---- the general element converters ---- */

/* Any float but F64 -> F32, exact. */
static float ld_float(lc_dtype t, const uint8_t *p) {
    switch (t) {
    case LC_DT_F8_E5M2: return lc_f8e5m2_to_f32(p[0]);
    case LC_DT_F8_E4M3: return lc_f8e4m3_to_f32(p[0]);
    case LC_DT_F8_E4M3FNUZ: return lc_f8e4m3fnuz_to_f32(p[0]);
    case LC_DT_F8_E5M2FNUZ: return lc_f8e5m2fnuz_to_f32(p[0]);
    case LC_DT_F8_E8M0: return lc_f8e8m0_to_f32(p[0]);
    case LC_DT_F16: return lc_f16_to_f32(ld16(p));
    case LC_DT_BF16: return lc_bf16_to_f32(ld16(p));
    default: return lc_bits_to_f32(ld32(p));
    }
}

/* F32 -> any float; `md` says the source is an ml_dtypes type (BF16 or F8), whose
 * NaN reaches F16 as sign|0x7e00. */
static void st_float(lc_dtype t, uint8_t *p, float f, bool md) {
    switch (t) {
    case LC_DT_F8_E5M2: p[0] = lc_f32_to_f8e5m2(f); break;
    case LC_DT_F8_E4M3: p[0] = lc_f32_to_f8e4m3(f); break;
    case LC_DT_F8_E4M3FNUZ: p[0] = lc_f32_to_f8e4m3fnuz(f); break;
    case LC_DT_F8_E5M2FNUZ: p[0] = lc_f32_to_f8e5m2fnuz(f); break;
    case LC_DT_F16: st16(p, md ? (uint16_t)f32_to_f16_md(f) : lc_f32_to_f16(f)); break;
    case LC_DT_BF16: st16(p, lc_f32_to_bf16(f)); break;
    case LC_DT_F32: st32(p, lc_f32_to_bits(f)); break;
    default: st64(p, f64_bits((double)f)); break;
    }
}

static void cvt_float(lc_dtype from, const uint8_t *s, lc_dtype to, uint8_t *d) {
    if (from == LC_DT_F64) {
        const double v = bits_f64(ld64(s));
        if (to == LC_DT_F16)
            st16(d, f64_to_f16(v));
        else
            st_float(to, d, (float)v, false);   /* F32, and BF16/F8 through F32 */
    } else if (from == LC_DT_F16 && to == LC_DT_F64) {
        st64(d, f64_bits(f16_to_f64(ld16(s))));
    } else {
        st_float(to, d, ld_float(from, s), from != LC_DT_F16 && from != LC_DT_F32);
    }
}

/* An integer as its low 64 bits plus whether it is negative. */
typedef struct { uint64_t u; bool neg; } ival;

/* An integer type's facts, looked up once per row rather than once per element. */
typedef struct itype {
    unsigned size;
    bool     sign, is_bool;
    uint64_t max;          /* largest value */
} itype;

static itype itype_of(lc_dtype t) {
    const lc_dtype_info *d = lc_dtype_get(t);
    itype it = { d->type_size, d->is_signed, t == LC_DT_BOOL, 1 };
    if (!it.is_bool)
        it.max = it.size == 8 ? (it.sign ? (uint64_t)INT64_MAX : UINT64_MAX)
                              : (UINT64_C(1) << (8 * it.size - it.sign)) - 1;
    return it;
}

static inline ival ld_int(const itype *it, const uint8_t *p) {
    ival v = { 0, false };
    switch (it->size) {
    case 1: v.u = it->sign ? (uint64_t)(int64_t)(int8_t)p[0] : p[0]; break;
    case 2: v.u = it->sign ? (uint64_t)(int64_t)(int16_t)ld16(p) : ld16(p); break;
    case 4: v.u = it->sign ? (uint64_t)(int64_t)(int32_t)ld32(p) : ld32(p); break;
    default: v.u = ld64(p); break;
    }
    if (it->is_bool)
        v.u = v.u != 0;
    v.neg = it->sign && (int64_t)v.u < 0;
    return v;
}

/* Stores v into an integer of type `it`; false when it does not fit. */
static inline bool st_int(const itype *it, uint8_t *p, ival v) {
    if (it->is_bool) {
        p[0] = v.u != 0;
        return true;
    }
    if (v.neg ? !it->sign || (int64_t)v.u < -(int64_t)it->max - 1 : v.u > it->max)
        return false;
    switch (it->size) {
    case 1: p[0] = (uint8_t)v.u; break;
    case 2: st16(p, (uint16_t)v.u); break;
    case 4: st32(p, (uint32_t)v.u); break;
    default: st64(p, v.u); break;
    }
    return true;
}

static void int_to_float(lc_dtype to, uint8_t *p, ival v) {
    if (to == LC_DT_F64)
        st64(p, f64_bits(v.neg ? (double)(int64_t)v.u : (double)v.u));
    else
        st_float(to, p, v.neg ? (float)(int64_t)v.u : (float)v.u, false);
}

static bool float_nonzero(lc_dtype t, const uint8_t *p) {
    if (t == LC_DT_F64)
        return bits_f64(ld64(p)) != 0.0;
    const float f = ld_float(t, p);
    return f != 0.0f || f != f;   /* NaN is true, as in numpy */
}

/* The conversion itself. LC_E_OVERFLOW with *bad = the element's index, or
 * LC_E_UNSUPPORTED; no message, so that callers can word it with their own offsets. */
static lc_code convert_raw(lc_dtype from, const uint8_t *s, lc_dtype to, uint8_t *d, size_t n,
                           size_t *bad) {
    if (!lc_convert_supported(from, to))
        return LC_E_UNSUPPORTED;
    const size_t fs = lc_dtype_get(from)->type_size, ts = lc_dtype_get(to)->type_size;
    if (from == to) {
        if (n && s != d)
            memmove(d, s, n * fs);
        return LC_OK;
    }
    const enum kind a = kind_of(from), b = kind_of(to);
    if (a == K_FLOAT && b == K_FLOAT) {
        void (*row)(const uint8_t *, uint8_t *, size_t) = NULL;
        if (from == LC_DT_F32 && to == LC_DT_F16) row = row_f32_f16;
        else if (from == LC_DT_F16 && to == LC_DT_F32) row = row_f16_f32;
        else if (from == LC_DT_F32 && to == LC_DT_BF16) row = row_f32_bf16;
        else if (from == LC_DT_BF16 && to == LC_DT_F32) row = row_bf16_f32;
        else if (from == LC_DT_BF16 && to == LC_DT_F16) row = row_bf16_f16;
        else if (from == LC_DT_F16 && to == LC_DT_BF16) row = row_f16_bf16;
        const lc_convert_simd_fn fast = row ? simd_row(from, to) : NULL;
        if (fast) {
            row_simd(fast, row, s, fs, d, ts, n);
        } else if (row) {
            row(s, d, n);
        } else {
            for (size_t i = 0; i < n; i++)
                cvt_float(from, s + i * fs, to, d + i * ts);
        }
        return LC_OK;
    }
    if (a == K_FLOAT) {                       /* float -> bool */
        for (size_t i = 0; i < n; i++)
            d[i] = float_nonzero(from, s + i * fs);
        return LC_OK;
    }
    const itype fi = itype_of(from), ti = itype_of(to);   /* bool or int -> anything */
    if (b == K_FLOAT) {
        for (size_t i = 0; i < n; i++)
            int_to_float(to, d + i * ts, ld_int(&fi, s + i * fs));
        return LC_OK;
    }
    for (size_t i = 0; i < n; i++) {
        if (!st_int(&ti, d + i * ts, ld_int(&fi, s + i * fs))) {
            *bad = i;
            return LC_E_OVERFLOW;
        }
    }
    return LC_OK;
}

/* Words the failure of convert_raw; `base` is the index of element 0 and `off0` the
 * byte offset of element 0 in the file (LC_NO_OFFSET when unknown). */
static lc_code convert_fail(lc_code rc, lc_dtype from, const uint8_t *s, lc_dtype to,
                            size_t bad, uint64_t base, uint64_t off0, lc_error *err) {
    if (rc == LC_E_UNSUPPORTED)
        return lc_fail(err, rc, LC_NO_OFFSET, "no conversion from %s to %s",
                       lc_dtype_name(from), lc_dtype_name(to));
    const size_t fs = lc_dtype_get(from)->type_size;
    const itype fi = itype_of(from);
    const ival v = ld_int(&fi, s + bad * fs);
    char num[24];
    if (v.neg)
        snprintf(num, sizeof num, "%" PRId64, (int64_t)v.u);
    else
        snprintf(num, sizeof num, "%" PRIu64, v.u);
    return lc_fail(err, rc, off0 == LC_NO_OFFSET ? LC_NO_OFFSET : off0 + bad * fs,
                   "element %" PRIu64 " (%s) does not fit %s", base + bad, num,
                   lc_dtype_name(to));
}

lc_code lc_convert(lc_dtype from, const void *src, lc_dtype to, void *dst, size_t n,
                   lc_error *err) {
    size_t bad = 0;
    const lc_code rc = convert_raw(from, src, to, dst, n, &bad);
    if (rc == LC_OK)
        return rc;
    return convert_fail(rc, from, src, to, bad, 0, 0, err);
}

/* ---- the cast transform ---- */

/* The old tensor, kept whole: its source's read receives it as `t`, so it must still
 * see the old dtype, shape and nbytes. The name is our own copy. */
typedef struct cast_ctx {
    lc_tensor old;
} cast_ctx;

static void cast_free(void *p) {
    cast_ctx *c = p;
    if (!c)
        return;
    if (c->old.ops && c->old.ops->free)
        c->old.ops->free(c->old.ctx);
    lc_free(c->old.name);
    lc_free(c);
}

/* Elements per step when the old data must be read through its source first: big
 * enough that a source doing one syscall per read costs little, small enough to stay
 * in cache between the read and the conversion. Concurrent reads share nothing. */
#define CAST_CHUNK ((size_t)32768)

/* Converts `count` whole elements starting at element `e` into out. */
static lc_code cast_elems(const cast_ctx *c, lc_dtype to, uint64_t e, uint64_t count,
                          uint8_t *out, lc_error *err) {
    const lc_tensor *o = &c->old;
    const size_t fs = lc_dtype_get(o->dtype)->type_size, ts = lc_dtype_get(to)->type_size;
    uint8_t small[64], *buf = NULL;
    if (!o->data && count) {
        const size_t step = count < CAST_CHUNK ? (size_t)count : CAST_CHUNK;
        if (step * fs <= sizeof small)
            buf = small;
        else if (!(buf = lc_malloc(step * fs)))
            return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory for %zu elements",
                           step);
    }
    lc_code rc = LC_OK;
    while (count > 0) {
        const size_t k = count < CAST_CHUNK ? (size_t)count : CAST_CHUNK;
        const uint8_t *s;
        if (o->data) {
            s = o->data + e * fs;
        } else {
            if ((rc = lc_tensor_read(o, e * fs, buf, k * fs, err)) != LC_OK)
                break;
            s = buf;
        }
        size_t bad = 0;
        if ((rc = convert_raw(o->dtype, s, to, out, k, &bad)) != LC_OK) {
            /* the old tensor's bytes in its file, when it came straight from one */
            const uint64_t at = o->file_offset == LC_NO_OFFSET ? LC_NO_OFFSET
                                                               : o->file_offset + e * fs;
            convert_fail(rc, o->dtype, s, to, bad, e, at, err);
            lc_err_context(err, NULL, o->name);
            break;
        }
        e += k;
        count -= k;
        out += k * ts;
    }
    if (buf != small)
        lc_free(buf);
    return rc;
}

static lc_code cast_read(void *ctx, const lc_tensor *t, uint64_t off, void *dst, size_t len,
                         lc_error *err) {
    const cast_ctx *c = ctx;
    const uint64_t ts = lc_dtype_get(t->dtype)->type_size;
    uint8_t *out = dst;
    uint64_t e = off / ts;
    const size_t skip = (size_t)(off % ts);
    uint8_t one[8];
    if (skip) {                                  /* the tail of a partial first element */
        LC_TRY(cast_elems(c, t->dtype, e, 1, one, err));
        const size_t k = len < ts - skip ? len : (size_t)(ts - skip);
        memcpy(out, one + skip, k);
        out += k;
        len -= k;
        e++;
    }
    const uint64_t whole = len / ts;
    LC_TRY(cast_elems(c, t->dtype, e, whole, out, err));
    out += whole * ts;
    len -= (size_t)(whole * ts);
    if (len) {                                   /* the head of a partial last element */
        LC_TRY(cast_elems(c, t->dtype, e + whole, 1, one, err));
        memcpy(out, one, len);
    }
    return LC_OK;
}

static const lc_source_ops g_cast_ops = { cast_read, cast_free };

lc_code lc_tensor_cast(lc_tensor *t, lc_dtype to, lc_error *err) {
    if (t->dtype == to)
        return LC_OK;
    if (!lc_convert_supported(t->dtype, to)) {
        lc_fail(err, LC_E_UNSUPPORTED, LC_NO_OFFSET, "no conversion from %s to %s",
                lc_dtype_name(t->dtype), lc_dtype_name(to));
        lc_err_context(err, NULL, t->name);
        return LC_E_UNSUPPORTED;
    }
    uint64_t nbytes;
    lc_code rc = lc_shape_nbytes(to, t->ndim, t->shape, &nbytes, err);
    if (rc != LC_OK) {
        lc_err_context(err, NULL, t->name);
        return rc;
    }
    cast_ctx *c = lc_calloc(1, sizeof *c);
    char *name = t->name ? lc_strdup(t->name) : NULL;
    if (!c || (t->name && !name)) {
        lc_free(c);
        lc_free(name);
        lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory casting a tensor");
        lc_err_context(err, NULL, t->name);
        return LC_E_NOMEM;
    }
    c->old = *t;
    c->old.name = name;
    t->dtype = to;
    t->nbytes = nbytes;
    t->data = NULL;
    t->ops = &g_cast_ops;
    t->ctx = c;
    t->file_offset = LC_NO_OFFSET;
    return LC_OK;
}

static bool is_float_tensor(const lc_tensor *t) { return kind_of(t->dtype) == K_FLOAT; }

lc_code lc_model_cast(lc_model *m, lc_dtype to, bool (*want)(const lc_tensor *),
                      lc_error *err) {
    if (!want)
        want = is_float_tensor;
    const size_t n = lc_model_tensor_count(m);
    for (size_t i = 0; i < n; i++) {          /* refuse before changing anything */
        const lc_tensor *t = lc_model_tensor(m, i);
        if (want(t) && t->dtype != to && !lc_convert_supported(t->dtype, to)) {
            lc_fail(err, LC_E_UNSUPPORTED, LC_NO_OFFSET, "no conversion from %s to %s",
                    lc_dtype_name(t->dtype), lc_dtype_name(to));
            lc_err_context(err, NULL, t->name);
            return LC_E_UNSUPPORTED;
        }
    }
    for (size_t i = 0; i < n; i++) {
        lc_tensor *t = lc_model_tensor(m, i);
        if (want(t))
            LC_TRY(lc_tensor_cast(t, to, err));
    }
    return LC_OK;
}
