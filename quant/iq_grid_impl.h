/* quant/iq_grid_impl.h: private to quant/. The row quantizers' search internals that the
 * vector variants share (the searches' function types, the row entries split at them;
 * IQ4_NL/IQ4_XS's and the weighted K/legacy types' scale tries at the end), and the
 * search tables the IQ quantizers need
 * besides the codebooks: for each grid, its entries as levels, a map from every index a
 * quantizer can form (its levels packed `bits` bits each) to the grid entry with those
 * levels, and, for an index that is no entry, the list of entries nearest to it.
 *
 * They are computed once, at the first use of a grid, from the codebooks of
 * quant/iq_tables.h (generated from gguf-py) by ggml's rule (iq2xs_init_impl,
 * iq3xs_init_impl): an entry's level l at a position is the rank of its magnitude among
 * the grid's magnitudes, its point is 2l + 1; the neighbours of an index off the grid are
 * the entries at the `nwant` smallest squared distances from its point, ordered by
 * distance, then entry (ggml sorts the pairs with qsort on that total order, so its
 * order is unique). Nothing is typed by hand.
 *
 * Layout, ggml's: map[i] >= 0 is the entry at index i; map[i] < 0 means
 * neighbours[-map[i] - 1] holds the count n of i's neighbours, then the n entries. */
#ifndef LC_QUANT_IQ_GRID_IMPL_H
#define LC_QUANT_IQ_GRID_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "libconvert/error.h"

typedef enum lc_iqg_id {
    LC_IQG_IQ2_XXS = 0,     /* 256 x 8, levels 0..2, 2 bits, 2 distances */
    LC_IQG_IQ2_XS,          /* 512 x 8, 2 distances */
    LC_IQG_IQ2_S,           /* 1024 x 8, 1 distance */
    LC_IQG_IQ1,             /* IQ1_S and IQ1_M: 2048 x 8, 3 distances */
    LC_IQG_IQ3_XXS,         /* 256 x 4, levels 0..7, 3 bits, 2 distances */
    LC_IQG_IQ3_S,           /* 512 x 4, 3 distances */
    LC_IQG_COUNT
} lc_iqg_id;

typedef struct lc_iq_grid lc_iq_grid;

/* The neighbour search, the loop the grid quantizers spend their time in: of the list
 * nb (nb[0] entries, then the entries), the entry of least distance
 *   d2 = the sum over i = 0..dim-1, in that order, of w[i] * (scale * lut[l_i] - x[i])^2
 * (l_i the entry's levels; lut: 8 values by level, 2l + 1 for the IQ2/IQ3 searches, IQ1's
 * shifted levels for IQ1), each multiply and add a separate IEEE operation in the
 * reference's order (diff, w * diff, then * diff, then the add); the first of strictly
 * least d2 in list order, as the reference compares (d2 < best, from FLT_MAX: a NaN or
 * a distance of FLT_MAX or more is never picked), -1 when there is none. A vector variant
 * computes one neighbour per lane with the same operations, keeps each lane's first
 * least, and takes the least value's lowest position: the same entry, always. */
typedef int (*lc_iq_best_fn)(const lc_iq_grid *g, const uint16_t *nb, const float *lut,
                             const float *x, const float *w, float scale);

/* IQ1_S's and IQ1_M's split search (quant/ref_iq1.c): of n sorted magnitudes given as
 * prefix sums, every split (i1 <= i2) into levels -1, 0, 1 (shifted by IQ1's +-delta) is
 * scored, in order (i1, then i2, then the shift or IQ1_M's four shift pairs k), and the
 * first strictly best kept: `sp` in and out (best_score, scale, i1, i2, k). IQ1_S: sumx,
 * sumw (n + 1 sums); IQ1_M: px, pw, two halves of n + 1 sums each (stride n + 1). A
 * vector variant scores a vector of i2 at once with the reference's operations and, only
 * when some lane beats the best so far, walks those lanes as the reference does: the
 * best changes nowhere else, so the result is the reference's. */
typedef struct lc_iq1_split {
    float best_score, scale;
    int i1, i2, k;
} lc_iq1_split;
typedef void (*lc_iq1_split_fn)(int n, const float *sx, const float *sw, lc_iq1_split *sp);

/* IQ1's shifted levels: -1, 0, 1 plus (x_p) or minus (x_m) delta. */
#define LC_IQ1_DELTA 0.125f

/* The searches a row entry runs: the reference's (lc_iq_ops_ref) or a variant's. */
typedef struct lc_iq_ops {
    lc_iq_best_fn   best;
    lc_iq1_split_fn split_s, split_m;
} lc_iq_ops;

struct lc_iq_grid {
    int             ngrid;      /* entries */
    int             dim;        /* values per entry: 8 or 4 */
    int             bits;       /* bits per level in an index: 2 (dim 8) or 3 (dim 4) */
    const int8_t   *point;      /* ngrid * dim: 2 * level + 1 */
    const int32_t  *index;      /* ngrid: the entry's levels packed `bits` bits each */
    const int32_t  *map;        /* indices below 1 << (dim * bits) */
    const uint16_t *neighbours;
    const lc_iq_ops *ops;       /* NULL in the shared grid; a row entry's copy carries
                                 * its searches (lc_<stem>_quantize_rows_with) */
};

/* The scalar searches (quant/iq_search.c) and their table. */
int lc_iq_best_ref(const lc_iq_grid *g, const uint16_t *nb, const float *lut, const float *x,
                   const float *w, float scale);
void lc_iq1s_split_ref(int n, const float *sumx, const float *sumw, lc_iq1_split *sp);
void lc_iq1m_split_ref(int n, const float *px, const float *pw, lc_iq1_split *sp);
extern const lc_iq_ops lc_iq_ops_ref;

/* The 2l + 1 of levels 0..7: the lut of the IQ2 and IQ3 searches. */
extern const float lc_iq_odd_lut[8];

/* The grid row entries with the searches `ops` (the references pass &lc_iq_ops_ref; a
 * variant its own): the same bytes from any searches that pick the same results. */
#define LC_IQ_ROWS_WITH(X)                                                        \
    X(IQ2_XXS, iq2_xxs) X(IQ2_XS, iq2_xs) X(IQ2_S, iq2_s) X(IQ3_XXS, iq3_xxs)    \
    X(IQ3_S, iq3_s) X(IQ1_S, iq1_s) X(IQ1_M, iq1_m)
#define LC_IQ_ROWS_WITH_DECLARE(T, stem)                                                     \
    void lc_##stem##_quantize_rows_with(const lc_iq_ops *ops, const float *restrict x,      \
                                        void *restrict y, size_t nrows, size_t n_per_row, \
                                        const float *restrict imatrix);
/* The types whose variants' row entries are quant/<isa>/iq4_tries.c's (below). */
#define LC_IQ4_ROWS(X) X(IQ4_NL, iq4_nl) X(IQ4_XS, iq4_xs)

LC_IQ_ROWS_WITH(LC_IQ_ROWS_WITH_DECLARE)
#undef LC_IQ_ROWS_WITH_DECLARE

/* A variant's row entry lc_<stem>_quantize_rows_<suffix>: the reference's quantizer with
 * the variant's searches `ops` (the variant folders' iq_search.c). */
#define LC_IQ_ROWS_VARIANT(T, stem, suffix, ops)                                              \
    void lc_##stem##_quantize_rows_##suffix(const float *restrict x, void *restrict y,      \
                                            size_t nrows, size_t n_per_row,                 \
                                            const float *restrict imatrix) {                \
        lc_##stem##_quantize_rows_with(ops, x, y, nrows, n_per_row, imatrix);              \
    }

/* Grid `id`, built at the first call (thread-safe); NULL when its tables could not be
 * allocated (then every later call says NULL too). */
const lc_iq_grid *lc_iq_grid_get(lc_iqg_id id);

/* lc_iq_grid_get, as an error: LC_E_NOMEM when the tables cannot be built. */
lc_code lc_iq_grid_ready(lc_iqg_id id, lc_error *err);

/* IQ4_NL's and IQ4_XS's scale tries (quant/ref_iq4.c): for one block of 32 values xb
 * with weights `weight` and signed extreme max, try t = 0..14 (itry = t - 7) gets
 * id = (itry + kvalues[0]) / max, and entry 15 (the first fit) id = 1 / (-max /
 * kvalues[0]); every value its nearest level (ggml's best_index_int8: the lower on a tie,
 * NaN the top) of id * xb[j], and sumqx[t], sumq2[t] the sums over j = 0..31 in order of
 * w*q*x and w*q*q. The caller picks among them in order. A vector variant runs one try
 * per lane with the same operations: the same sums, bit for bit. */
enum { LC_IQ4_NTRY = 15 };
typedef void (*lc_iq4_tries_fn)(const float *xb, const float *weight, float max,
                                float *sumqx, float *sumq2);
void lc_iq4_tries_ref(const float *xb, const float *weight, float max, float *sumqx,
                      float *sumq2);
void lc_iq4_nl_quantize_rows_with(lc_iq4_tries_fn tries, const float *restrict x,
                                  void *restrict y, size_t nrows, size_t n_per_row,
                                  const float *restrict imatrix);
void lc_iq4_xs_quantize_rows_with(lc_iq4_tries_fn tries, const float *restrict x,
                                  void *restrict y, size_t nrows, size_t n_per_row,
                                  const float *restrict imatrix);

/* ---- the weighted K searches' tries (quant/ref_w.c), split out for vector variants ----
 * min: make_qkx3_quants' tries is0 .. is0+count-1 (count <= batch) at the current
 * min: iscale = (-0.9 + 0.05*is + nmax) / (max - min), levels clamp(nearest_int(iscale *
 * (x - min)), 0, nmax), then D, this_scale, this_min (0 and sum_xl/sum_l2 where it came
 * out positive) and mad, each as the reference computes it (mad only meaningful where
 * D > 0). sym: make_qx_quants' (rmse_type 1) 18 tries is = -9..-1, 1..9, in that order:
 * iscale = -(nmax + 0.1*is) / max, levels clamp(nearest_int(iscale*x), -nmax, nmax-1),
 * sumlx and suml2. ref_w.c picks among them in order, as the reference loop does; a
 * vector variant computes one try per lane with the same operations, so the same bits. */
enum { LC_W_BATCH = 16, LC_W_SYM_NTRY = 18 };
typedef struct lc_w_tries {
    int batch;          /* min's count per call, <= LC_W_BATCH: the reference 1 (a taken
                         * try wastes the rest of a batch), a variant its lanes */
    void (*min)(int n, int nmax, const float *x, const float *w, float min, float max,
                float sum_w, float sum_x, int is0, int count, float *D, float *scale,
                float *tmin, float *mad);
    void (*sym)(int n, int nmax, const float *x, const float *qw, float max, float *sumlx,
                float *suml2);
} lc_w_tries;
extern const lc_w_tries lc_w_tries_ref;
#define LC_W_ROWS(X)                                                                        \
    X(Q4_0, q4_0) X(Q4_1, q4_1) X(Q5_0, q5_0) X(Q5_1, q5_1) X(Q2_K, q2_K) X(Q3_K, q3_K)     \
    X(Q4_K, q4_K) X(Q5_K, q5_K) X(Q6_K, q6_K)
#define LC_W_ROWS_WITH_DECLARE(T, stem)                                                     \
    void lc_##stem##_quantize_rows_with(const lc_w_tries *tries, const float *restrict x,   \
                                        void *restrict y, size_t nrows, size_t n_per_row,   \
                                        const float *restrict imatrix);
LC_W_ROWS(LC_W_ROWS_WITH_DECLARE)
#undef LC_W_ROWS_WITH_DECLARE

#endif
