/* Unit tests for the vector variants' row entries (quantize_rows: the grid i-quants'
 * searches, quant/<isa>/iq_search.c; IQ4_NL's and IQ4_XS's scale tries,
 * quant/<isa>/iq4_tries.c; the K and legacy types' weighted tries, quant/<isa>/w_tries.c):
 * every variant this build and CPU offer
 * (avx2, avx512, neon under qemu) must write exactly the reference's bytes, with and
 * without an importance vector, on rows chosen to break a vector search: random rows at
 * many scales, zeros and signed zeros, exact ties, subnormals, huge values, all-equal
 * sub-blocks, many equal values (IQ1's sort), NaN and infinities, with importance
 * vectors that are positive, spread over decades, partly or wholly zero, or huge. A
 * variant that is not built or not supported here is skipped, not passed silently. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "libconvert/dtype.h"
#include "quant/quant.h"
#include "quant/quant_impl.h"

static const lc_dtype grid_types[] = { LC_DT_IQ2_XXS, LC_DT_IQ2_XS, LC_DT_IQ2_S,
                                       LC_DT_IQ3_XXS, LC_DT_IQ3_S,  LC_DT_IQ1_S,
                                       LC_DT_IQ1_M,   LC_DT_IQ4_NL, LC_DT_IQ4_XS,
                                       LC_DT_Q4_0,    LC_DT_Q4_1,   LC_DT_Q5_0,
                                       LC_DT_Q5_1,    LC_DT_Q2_K,   LC_DT_Q3_K,
                                       LC_DT_Q4_K,    LC_DT_Q5_K,   LC_DT_Q6_K };
#define NGRID (sizeof grid_types / sizeof grid_types[0])

static int variants(const lc_qkernels **out) {
    static const char *const names[] = { "avx2", "avx512", "neon" };
    int n = 0;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if ((out[n] = lc_qkernels_get(names[i])) != NULL)
            n++;
    return n;
}

static uint32_t rng_next(uint32_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 17;
    *s ^= *s << 5;
    return *s;
}
static float uniform(uint32_t *s) { return (float)(rng_next(s) >> 8) / 8388608.0f - 1.0f; }
static float normal(uint32_t *s) {
    float a = 0;
    for (int k = 0; k < 12; k++)
        a += uniform(s) * 0.5f;
    return a;
}
static float from_bits(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

enum { NKIND = 15, NIM = 6 };

/* Block kind `kind` of 256 values. */
static void fill_block(float *b, int kind, uint32_t *s) {
    const float scale = ldexpf(1.0f, (int)(rng_next(s) % 41) - 20);
    for (int j = 0; j < 256; j++) {
        float v = normal(s) * scale;
        switch (kind) {
        case 0: break;
        case 1: v = 0; break;                                           /* zeros */
        case 2: if (rng_next(s) % 3 == 0) v = rng_next(s) & 1 ? 0.0f : -0.0f; break;
        case 3: v = ((j / 16) & 1 ? -0.75f : 1.5f) * scale; break;      /* equal sub-blocks */
        case 4: v = 0.3f; break;                                        /* all equal */
        case 5: v = (float)((int)(rng_next(s) % 5) - 2); break;         /* many equal */
        case 6: v = (float)((int)(rng_next(s) % 33) - 16) * 0.5f * scale; break; /* ties */
        case 7: v = from_bits(0x7e000000u + (rng_next(s) & 0xffffffu)) * (j & 1 ? 1 : -1);
            break;                                                      /* huge */
        case 8: v = from_bits(rng_next(s) & 0x807fffffu); break;        /* subnormal */
        case 9: if (rng_next(s) % 61 == 0) v = rng_next(s) & 1 ? INFINITY : -INFINITY; break;
        case 10: if (rng_next(s) % 97 == 0) v = NAN; break;
        case 11: v = (j % 16 == 3 ? 1e4f : 1e-3f) * normal(s); break;   /* outliers */
        case 12: v = normal(s) * 1e-12f; break;                         /* near the eps */
        case 13: v = (float)(int)(normal(s) * 8) / 8; break;            /* bf16-like grid */
        default: v = from_bits(rng_next(s)); break;                     /* any bits */
        }
        b[j] = v;
    }
}

/* Importance vector kind `kind` of n columns; NULL for "none". */
static const float *fill_im(float *im, size_t n, int kind, uint32_t *s) {
    for (size_t j = 0; j < n; j++) {
        float v;
        switch (kind) {
        case 0: return NULL;
        case 1: v = 0.5f + uniform(s); break;                            /* positive */
        case 2: v = ldexpf(1.0f, (int)(rng_next(s) % 40) - 20); break;  /* decades */
        case 3: v = rng_next(s) % 4 ? 1.0f + uniform(s) : 0.0f; break;  /* some zero */
        case 4: v = 0; break;                                           /* all zero */
        default: v = j % 7 == 0 ? 1e30f : 1.0f; break;                  /* huge */
        }
        im[j] = v;
    }
    return im;
}

/* Every grid type, every importance kind (none where the type runs without one): each
 * variant's row entry against the reference's, rows of `cols`, `nblocks` blocks. */
static void check(uint32_t seed, size_t nblocks, size_t cols) {
    const lc_qkernels *ks[3];
    const int nk = variants(ks);
    if (nk == 0)
        cr_skip_test("no kernel variant besides ref in this build or CPU");
    const size_t n = nblocks * 256, rows = n / cols;
    float *x = malloc(n * sizeof *x), *im = malloc(cols * sizeof *im);
    uint8_t *want = malloc(n), *got = malloc(n);
    cr_assert(x && im && want && got);
    uint32_t s = seed;
    for (size_t b = 0; b < nblocks; b++)
        fill_block(x + 256 * b, (int)(b % NKIND), &s);
    size_t compared = 0;
    for (size_t t = 0; t < NGRID; t++) {
        const lc_dtype ty = grid_types[t];
        cr_assert_eq(lc_quant_prepare(ty, NULL), LC_OK);
        const lc_dtype_info *info = lc_dtype_get(ty);
        const size_t rb = cols / info->block_size * info->type_size;
        for (int k = 0; k < NIM; k++) {
            const float *w = fill_im(im, cols, k, &s);
            if (!w && lc_quant_imatrix_use(ty) == LC_IMATRIX_REQUIRES)
                continue;
            lc_qk_ref.quantize_rows[ty](x, want, rows, cols, w);
            for (int v = 0; v < nk; v++) {
                cr_assert_not_null(ks[v]->quantize_rows[ty], "%s has no %s row entry",
                                   ks[v]->name, lc_dtype_name(ty));
                memset(got, 0xa5, rows * rb + 1);
                ks[v]->quantize_rows[ty](x, got, rows, cols, w);
                for (size_t r = 0; r < rows; r++)
                    for (size_t i = 0; i < rb; i++)
                        cr_assert_eq(got[r * rb + i], want[r * rb + i],
                                     "%s %s importance kind %d: row %zu byte %zu (block "
                                     "kind %zu)", ks[v]->name, lc_dtype_name(ty), k, r, i,
                                     (r * cols + i / info->type_size * info->block_size) /
                                         256 % NKIND);
                cr_assert_eq(got[rows * rb], 0xa5, "%s %s wrote past the rows", ks[v]->name,
                             lc_dtype_name(ty));
                compared += rows * cols;
            }
        }
    }
    cr_assert_gt(compared, 0u);
    free(x);
    free(im);
    free(want);
    free(got);
}

/* Every block kind in every importance kind, rows of one block and of three. */
Test(quant_rows_variants, grid_types_edge_rows) {
    check(0x9e3779b9u, 2 * NKIND * 3, 256);
    check(0x7f4a7c15u, NKIND * 3, 768);
}

/* Random rows (LC_QUANT_ROWS_TEST_BLOCKS blocks per type and importance kind, default
 * 480: ~120 k values, millions with a larger setting). */
Test(quant_rows_variants, grid_types_many_rows, .timeout = 600) {
    const char *env = getenv("LC_QUANT_ROWS_TEST_BLOCKS");
    size_t nb = env ? strtoul(env, NULL, 10) : 480;
    nb = nb / 16 * 16 + 16;
    check(0x2545f491u, nb, 4096);
}
