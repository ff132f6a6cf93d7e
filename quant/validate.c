/* quant/validate.c: ggml_validate_row_data, and a lazy source that applies it (see
 * validate.h). */
#include "quant/validate.h"

#include <inttypes.h>
#include <string.h>

#include "libconvert/alloc.h"
#include "libconvert/bytes.h"

/* Where a block keeps its scales (ggml-common.h's block_* structs). */
enum { S_NONE = 0, S_F16, S_F16_PAIR, S_F32, S_E8M0, S_IQ1_M, S_REFUSED };

static const struct { lc_dtype t; uint8_t kind, at; } SCALES[] = {
    { LC_DT_Q4_0, S_F16, 0 },       { LC_DT_Q4_1, S_F16_PAIR, 0 },  /* d, m */
    { LC_DT_Q5_0, S_F16, 0 },       { LC_DT_Q5_1, S_F16_PAIR, 0 },
    { LC_DT_Q8_0, S_F16, 0 },       { LC_DT_Q8_1, S_REFUSED, 0 },
    { LC_DT_Q2_K, S_F16_PAIR, 80 }, /* scales[16], qs[64], d, dmin */
    { LC_DT_Q3_K, S_F16, 108 },     /* hmask[32], qs[64], scales[12], d */
    { LC_DT_Q4_K, S_F16_PAIR, 0 },  { LC_DT_Q5_K, S_F16_PAIR, 0 },
    { LC_DT_Q6_K, S_F16, 208 },     /* ql[128], qh[64], scales[16], d */
    { LC_DT_Q8_K, S_F32, 0 },
    { LC_DT_IQ2_XXS, S_F16, 0 },    { LC_DT_IQ2_XS, S_F16, 0 },     { LC_DT_IQ3_XXS, S_F16, 0 },
    { LC_DT_IQ1_S, S_F16, 0 },      { LC_DT_IQ4_NL, S_F16, 0 },     { LC_DT_IQ3_S, S_F16, 0 },
    { LC_DT_IQ2_S, S_F16, 0 },      { LC_DT_IQ4_XS, S_F16, 0 },
    { LC_DT_IQ1_M, S_IQ1_M, 48 },   /* qs[32], qh[16], scales[8]: the scale's four nibbles */
    { LC_DT_TQ1_0, S_F16, 52 },     /* qs[48], qh[4], d */
    { LC_DT_TQ2_0, S_F16, 64 },     /* qs[64], d */
    { LC_DT_MXFP4, S_E8M0, 0 },
};

static bool bad_f16(uint16_t h, const char **what, const char *nan, const char *inf) {
    if ((h & 0x7c00u) != 0x7c00u)
        return false;
    *what = (h & 0x03ffu) ? nan : inf;
    return true;
}

/* Plain floats: the exponent all ones. Groups of 64 are tested without a branch per
 * element, so the common (clean) case runs at memory speed. */
#define CHECK_PLAIN(NAME, T, LOAD, EXP, MANT)                                               \
    static uint64_t NAME(const uint8_t *p, uint64_t n, const char **what) {                 \
        for (uint64_t g = 0; g < n; g += 64) {                                              \
            const uint64_t end = n - g < 64 ? n : g + 64;                                   \
            unsigned any = 0;                                                               \
            for (uint64_t i = g; i < end; i++)                                              \
                any |= (LOAD(p + i * sizeof(T)) & (EXP)) == (EXP);                          \
            if (!any)                                                                       \
                continue;                                                                   \
            for (uint64_t i = g; i < end; i++) {                                            \
                const T u = LOAD(p + i * sizeof(T));                                        \
                if ((u & (EXP)) == (EXP)) {                                                 \
                    *what = (u & (MANT)) ? "NaN" : "infinity";                              \
                    return i;                                                               \
                }                                                                           \
            }                                                                               \
        }                                                                                   \
        return UINT64_MAX;                                                                  \
    }
CHECK_PLAIN(check_f32, uint32_t, lc_load_le32, 0x7f800000u, 0x007fffffu)
CHECK_PLAIN(check_f16, uint16_t, lc_load_le16, 0x7c00u, 0x03ffu)
CHECK_PLAIN(check_bf16, uint16_t, lc_load_le16, 0x7f80u, 0x007fu)
CHECK_PLAIN(check_f64, uint64_t, lc_load_le64, UINT64_C(0x7ff0000000000000),
            UINT64_C(0x000fffffffffffff))

uint64_t lc_validate_data(lc_dtype t, const void *data, uint64_t n, const char **what) {
    const uint8_t *p = data;
    switch (t) {
    case LC_DT_F32: return check_f32(p, n, what);
    case LC_DT_F16: return check_f16(p, n, what);
    case LC_DT_BF16: return check_bf16(p, n, what);
    case LC_DT_F64: return check_f64(p, n, what);
    case LC_DT_I8: case LC_DT_I16: case LC_DT_I32: case LC_DT_I64:
        return UINT64_MAX;
    default:
        break;
    }
    const uint64_t size = lc_dtype_get(t)->type_size;
    for (size_t k = 0; k < sizeof SCALES / sizeof *SCALES; k++) {
        if (SCALES[k].t != t)
            continue;
        const uint8_t at = SCALES[k].at;
        for (uint64_t i = 0; i < n; i++) {
            const uint8_t *b = p + i * size + at;
            switch (SCALES[k].kind) {
            case S_F16:
            case S_F16_PAIR:            /* d, then m (or dmin) right after it */
                if (bad_f16(lc_load_le16(b), what, "a NaN scale", "an infinite scale") ||
                    (SCALES[k].kind == S_F16_PAIR &&
                     bad_f16(lc_load_le16(b + 2), what, "a NaN scale", "an infinite scale")))
                    return i;
                break;
            case S_F32:
                if ((lc_load_le32(b) & 0x7f800000u) == 0x7f800000u) {
                    *what = "a scale that is not finite";
                    return i;
                }
                break;
            case S_E8M0:
                if (b[0] == 0xff) {
                    *what = "an invalid exponent 0xff";
                    return i;
                }
                break;
            case S_IQ1_M: {
                const uint16_t h = (uint16_t)((lc_load_le16(b) >> 12) |
                                              ((lc_load_le16(b + 2) >> 8) & 0x00f0u) |
                                              ((lc_load_le16(b + 4) >> 4) & 0x0f00u) |
                                              (lc_load_le16(b + 6) & 0xf000u));
                if (bad_f16(h, what, "a NaN scale", "an infinite scale"))
                    return i;
                break;
            }
            default:
                *what = "a type ggml does not accept in a model file";
                return 0;
            }
        }
        return UINT64_MAX;
    }
    *what = "a type ggml does not accept in a model file";
    return n ? 0 : UINT64_MAX;
}

/* ---- the view ---- */

typedef struct vview {
    const lc_tensor *src;
    uint64_t unit;      /* bytes per element or block */
    uint64_t per_unit;  /* elements per unit */
    uint64_t ncols;     /* elements per row */
} vview;

/* Checks n units at p, unit `first` of the tensor. */
static lc_code check(const vview *v, const lc_tensor *t, const uint8_t *p, uint64_t first,
                     uint64_t n, lc_error *err) {
    const char *what = "";
    const uint64_t k = lc_validate_data(t->dtype, p, n, &what);
    if (k == UINT64_MAX)
        return LC_OK;
    const uint64_t e = (first + k) * v->per_unit;
    const uint64_t at = v->src->file_offset == LC_NO_OFFSET ? LC_NO_OFFSET :
                        v->src->file_offset + (first + k) * v->unit;
    if (v->per_unit == 1)
        lc_fail(err, LC_E_MALFORMED, at, "row %" PRIu64 ", column %" PRIu64 " holds %s",
                e / v->ncols, e % v->ncols, what);
    else
        lc_fail(err, LC_E_MALFORMED, at, "row %" PRIu64 ", the %s block at column %" PRIu64
                " has %s", e / v->ncols, lc_dtype_name(t->dtype), e % v->ncols, what);
    lc_err_context(err, NULL, t->name);
    return LC_E_MALFORMED;
}

/* Reads unit u whole into buf and checks it; buf holds at least v->unit bytes. */
static lc_code check_unit(const vview *v, const lc_tensor *t, uint64_t u, uint8_t *buf,
                          lc_error *err) {
    LC_TRY(lc_tensor_read(v->src, u * v->unit, buf, (size_t)v->unit, err));
    return check(v, t, buf, u, 1, err);
}

static lc_code vview_read(void *ctx, const lc_tensor *t, uint64_t off, void *dst, size_t len,
                          lc_error *err) {
    const vview *v = ctx;
    LC_TRY(lc_tensor_read(v->src, off, dst, len, err));
    if (len == 0)
        return LC_OK;
    uint8_t one[512];           /* one element or block (the largest, Q8_K, is 292 bytes) */
    const uint64_t u0 = off / v->unit, u1 = (off + len - 1) / v->unit;
    uint64_t a = u0, b = u1 + 1;    /* the units read whole into dst: [a, b) */
    if (off % v->unit) {            /* the range starts inside a unit */
        LC_TRY(check_unit(v, t, u0, one, err));
        a = u0 + 1;
    }
    if ((off + len) % v->unit && u1 >= a) {     /* ... or ends inside one */
        LC_TRY(check_unit(v, t, u1, one, err));
        b = u1;
    }
    if (b > a)
        LC_TRY(check(v, t, (const uint8_t *)dst + (a * v->unit - off), a, b - a, err));
    return LC_OK;
}

static void vview_free(void *ctx) { lc_free(ctx); }

static const lc_source_ops VVIEW_OPS = { vview_read, vview_free, NULL };

lc_code lc_validate_view(lc_tensor *dst, const lc_tensor *src, lc_error *err) {
    if (dst->dtype != src->dtype || dst->nbytes != src->nbytes)
        return lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "tensor %.80s: a checking view needs "
                       "its source's dtype and size", dst->name);
    const lc_dtype_info *info = lc_dtype_get(src->dtype);
    if (info->type_size == 0 || info->type_size > 512)
        return lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "tensor %.80s: no checks for dtype %s",
                       dst->name, info->name);
    vview *v = lc_calloc(1, sizeof *v);
    if (!v)
        return lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory");
    v->src = src;
    v->unit = info->type_size;
    v->per_unit = info->block_size;
    v->ncols = src->ndim ? src->shape[src->ndim - 1] : 1;
    if (v->ncols == 0)
        v->ncols = 1;
    dst->data = NULL;
    dst->ops = &VVIEW_OPS;
    dst->ctx = v;
    dst->file_offset = LC_NO_OFFSET;
    return LC_OK;
}
