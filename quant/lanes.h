/* quant/lanes.h: private to quant/ and its ISA folders. The K-quant quantizers (Q2_K,
 * Q3_K, Q4_K, Q5_K, Q6_K) written once over LC_LANES-wide vectors, for every ISA folder
 * to compile with its own flags.
 *
 * Why lanes: the K types' scale searches (quant/ref_k.c) are long sequences of dependent
 * float operations per sub-block, and identity with the reference depends on the order
 * and rounding of every one of them; a reduction across the elements of one sub-block
 * would reorder the sums. So vectors run ACROSS sub-blocks: lane r runs the reference's
 * scalar sequence for sub-block r, the same operations in the same order, each correctly
 * rounded (no fused multiply-add: every folder is built with -ffp-contract=off and the
 * vocabulary has no fused operation). Per-lane branches of the reference become masks: a
 * lane that the reference would leave early or not update is computed anyway and its
 * result discarded by lv_sel, so every lane ends with the state the scalar code would
 * have. Decisions made once per super-block (its largest scale, the packing of the
 * scales) stay scalar, copied from the reference.
 *
 * What it costs: a lane does the reference's operations, so the speed-up over the
 * reference is about the lane count times how much better the vector units keep busy
 * (8 lanes per AVX2 instruction gave 8-10x, 16 per AVX-512 instruction 14-18x, for Q4_K,
 * Q5_K, Q2_K and Q6_K). Two exact shortcuts: levels are rounded with one instruction
 * where bounds on the values prove it equal to ggml's bit trick (lanes_mode), and the
 * levels of the best fit are recomputed once instead of copied at every improvement.
 * Each candidate's sums are chains of dependent additions, so two groups run side by
 * side (Q2_K, Q4_K, Q5_K, Q6_K) to give the vector units independent work. Q3_K's fit
 * is a different shape (passes until nothing moves, usually one): its first two passes
 * run four groups side by side, and its later passes only the lanes still moving,
 * gathered from a batch of groups (lanes_q3_fit).
 *
 * A group is LC_LANES sub-blocks: LC_LANES/8 super-blocks of Q4_K or Q5_K (8 sub-blocks
 * of 32), LC_LANES/16 of Q2_K, Q3_K or Q6_K (16 sub-blocks of 16). The rows of a group
 * are contiguous in x, so lv_transpose_in turns them into one vector per element index.
 * A row length that leaves a partial group is padded with zeros in a copy. A group
 * holding a NaN goes to the reference: every NaN the lanes themselves create is the CPU's
 * one default NaN, but an input NaN's payload could meet another's in an add or multiply
 * whose operand order the compiler chose for the reference; what comes out then is not
 * the arithmetic's to say.
 *
 * The includer first includes its folder's lanes.h, which defines LC_LANES, LC_LANES_ALIGN,
 * the types lc_lv (LC_LANES floats), lc_li (int32) and lc_lm (masks), and these
 * operations, each lane by lane:
 *   lv_load lv_store lv_set1  lv_add lv_sub lv_mul lv_div lv_sqrt lv_abs lv_neg
 *   lv_round (to nearest even)  lv_min(a,b) = a<b?a:b  lv_max(a,b) = a>b?a:b
 *   lv_lt lv_gt lv_eq (C's <, >, ==)  lv_ne (C's !=)  lv_isnan
 *   lm_and lm_or lm_andnot(a,b) = !a&&b  lm_none lm_any lm_all
 *   lv_sel(m,a,b) = m?a:b   li_set1 li_load li_store li_add li_clamp li_sel li_to_lv
 *   lv_nearest (ggml's nearest_int, bit for bit)
 *   lv_transpose_in(x, len, xt): xt[i*LC_LANES + r] = x[r*len + i]   (len 16 or 32)
 *   li_transpose_out_u8(lt, len, out): out[r*len + i] = lt[i*LC_LANES + r] (values 0..255)
 * Every function here is static inline: a file that uses one type keeps no copy of the
 * other. The kernels never allocate; their scratch is on the stack (a few KiB, up to about
 * 90 KiB for Q3_K's batch of AVX-512 groups). */
#ifndef LC_QUANT_LANES_H
#define LC_QUANT_LANES_H

#ifndef LC_LANES
#error "include the ISA folder's lanes.h before quant/lanes.h"
#endif

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "quant/blocks.h"
#include "quant/quant.h"
#include "quant/quant_impl.h"

#define LC_LANES_EPS 1e-15f   /* ggml's GROUP_MAX_EPS */

/* For the small steps of a loop whose state must stay in registers across calls: the
 * compiler's size limits would otherwise leave them out of line, the state in memory. */
#define LANES_INLINE static inline __attribute__((always_inline))

/* True when any of the `count` floats at xt (a multiple of LC_LANES) is NaN. */
static inline bool lanes_any_nan(const float *xt, int count) {
    lc_lm nan = lm_none();
    for (int i = 0; i < count; i += LC_LANES)
        nan = lm_or(nan, lv_isnan(lv_load(xt + i)));
    return lm_any(nan);
}

/* ---- Q4_K ---- */

enum { LANES_Q4K_SB = LC_LANES / 8 };   /* super-blocks per group */

/* How lanes_level rounds, chosen once per candidate scale by lanes_mode. */
enum {
    LANES_EXACT = 0,    /* ggml's bit trick, its clamp and a conversion: right for any v */
    LANES_ROUND = 1,    /* |v| < 2^21 in every lane that matters: round to nearest even */
    LANES_LO = 2,       /* with LANES_ROUND: some v may round below lo, so clamp there */
    LANES_HI = 4,       /* with LANES_ROUND: some v may round above hi, so clamp there */
};

/* clamp(nearest_int(v), lo, hi) as a float on every lane, ggml's level rounding. Below
 * 2^21 in magnitude nearest_int is rounding to nearest even, so with LANES_ROUND one
 * round does what the bit trick and a conversion do, and a clamp that no lane can reach
 * is left out. (A -0 from the round, for v in (-0.5, -0], stays -0 where it used to
 * become +0: it only ever meets sums that start at +0, products that are squared, and
 * +-0 in an addition whose result is then squared, so no value downstream changes.) */
static inline lc_lv lanes_level(lc_lv v, int lo, int hi, int mode) {
    if (mode == LANES_EXACT)
        return li_to_lv(li_clamp(lv_nearest(v), lo, hi));
    lc_lv r = lv_round(v);
    if (mode & LANES_LO)
        r = lv_max(r, lv_set1((float)lo));
    if (mode & LANES_HI)
        r = lv_min(r, lv_set1((float)hi));
    return r;
}

/* The cheapest mode of lanes_level that is exact for v = iscale*(x - min) over every
 * element x of every lane outside `skip`, given each lane's smallest and largest element
 * xlo, xhi: a rounded difference and a rounded product are monotonic, so every v lies
 * between iscale*(xlo - min) and iscale*(xhi - min), rounded the same way. A bound that
 * is NaN or reaches 2^21 gives LANES_EXACT; a clamp is kept when a bound reaches within
 * half a step of it (a tie may round either way). */
static inline int lanes_mode(lc_lv iscale, lc_lv xlo, lc_lv xhi, lc_lv min, lc_lm skip, int lo,
                             int hi) {
    const lc_lv limit = lv_set1(2097152.0f), nlimit = lv_set1(-2097152.0f);
    const lc_lv a = lv_mul(iscale, lv_sub(xlo, min)), b = lv_mul(iscale, lv_sub(xhi, min));
    const lc_lm active = lm_andnot(skip, lv_eq(limit, limit));
    const lc_lm ok = lm_and(lm_and(lv_gt(a, nlimit), lv_lt(a, limit)),
                            lm_and(lv_gt(b, nlimit), lv_lt(b, limit)));
    if (lm_any(lm_andnot(ok, active)))
        return LANES_EXACT;
    const lc_lv vmin = lv_min(a, b), vmax = lv_max(a, b);          /* neither is NaN */
    int mode = LANES_ROUND;
    if (lm_any(lm_andnot(lv_gt(vmin, lv_set1((float)lo - 0.5f)), active)))
        mode |= LANES_LO;
    if (lm_any(lm_andnot(lv_lt(vmax, lv_set1((float)hi + 0.5f)), active)))
        mode |= LANES_HI;
    return mode;
}

/* Calls `call(mode)` with `mode` a constant, so that each mode gets its own copy of the
 * loop it runs. */
#define LANES_BY_MODE(mode, call)                                                          \
    do {                                                                                   \
        switch (mode) {                                                                    \
        case LANES_ROUND: call(LANES_ROUND); break;                                        \
        case LANES_ROUND | LANES_LO: call(LANES_ROUND | LANES_LO); break;                  \
        case LANES_ROUND | LANES_HI: call(LANES_ROUND | LANES_HI); break;                  \
        case LANES_ROUND | LANES_LO | LANES_HI: call(LANES_ROUND | LANES_LO | LANES_HI); break; \
        default: call(LANES_EXACT); break;                                                 \
        }                                                                                  \
    } while (0)

/* ggml's make_qkx2_quants(n, nmax, x, w, L, &the_min, Laux, rmin, 0.1, nstep, use_mad)
 * on every lane (quant/ref_k.c fit_scale_min): Q2_K (16, 3, -0.5, 15, mad), Q4_K (32, 15,
 * -1, 20), Q5_K (32, 31, -0.5, 15), for two groups of lanes at once.
 *
 * Why two: each candidate's sums and error are chains of dependent additions, one per
 * group, too short of independent work to keep the vector units busy; two groups'
 * chains interleave. The hot loops keep both groups' values in locals (registers); the
 * per-group state below is touched once per candidate.
 *
 * The levels are not copied on every improvement: a lane remembers the inverse scale and
 * the min it was at when it improved, and the levels are recomputed from those once at
 * the end (the same operations on the same values: the same levels). */
typedef struct {
    const float *xt, *wt;                       /* n vectors of elements and weights */
    float *laux;                                /* scratch: n vectors of levels */
    lc_lv lo, hi;                               /* each lane's element range */
    lc_lv min, max, sum_w, sum_x, flat_min;
    lc_lm flat;                                 /* max == min: scale 0, levels 0 */
    lc_lv iscale, scale, best_error, best_iscale, best_lmin;
} lanes_qkx2;

/* The reference's start on every lane of q: range, sums of w and w*x, the first scale. */
static inline void lanes_qkx2_start(lanes_qkx2 *q, int n, int nmax) {
    const lc_lv zero = lv_set1(0.0f);
    const lc_lv x0 = lv_load(q->xt), w0 = lv_load(q->wt);
    lc_lv min = x0, max = x0, sum_w = w0, sum_x = lv_mul(w0, x0);
    for (int i = 1; i < n; i++) {
        const lc_lv x = lv_load(q->xt + i * LC_LANES), w = lv_load(q->wt + i * LC_LANES);
        min = lv_min(x, min);                    /* if (x < min) min = x */
        max = lv_max(x, max);                    /* if (x > max) max = x */
        sum_w = lv_add(sum_w, w);
        sum_x = lv_add(sum_x, lv_mul(w, x));
    }
    q->lo = min, q->hi = max;
    q->sum_w = sum_w, q->sum_x = sum_x;
    q->min = lv_sel(lv_gt(min, zero), zero, min);
    q->max = max;
    q->flat = lv_eq(max, q->min);
    q->flat_min = q->min;
    q->iscale = lv_div(lv_set1((float)nmax), lv_sub(max, q->min));
    q->scale = lv_div(lv_set1(1.0f), q->iscale);
}

/* The lanes_level mode for iscale on both groups: the more general of the two (a clamp
 * that no value reaches changes nothing; LANES_EXACT is right for any value). */
static inline int lanes_qkx2_mode(const lanes_qkx2 *a, lc_lv ia, const lanes_qkx2 *b,
                                  lc_lv ib, int nmax) {
    const int ma = lanes_mode(ia, a->lo, a->hi, a->min, a->flat, 0, nmax);
    const int mb = lanes_mode(ib, b->lo, b->hi, b->min, b->flat, 0, nmax);
    return ma == LANES_EXACT || mb == LANES_EXACT ? LANES_EXACT : ma | mb;
}

/* Element i of one candidate's sums for the levels of (iscale, min), stored to laux. */
LANES_INLINE void lanes_qkx2_sum_step(const lanes_qkx2 *q, int i, int nmax, int mode,
                                      lc_lv iscale, lc_lv min, lc_lv *s_l, lc_lv *s_l2,
                                      lc_lv *s_xl) {
    const lc_lv x = lv_load(q->xt + i * LC_LANES), w = lv_load(q->wt + i * LC_LANES);
    const lc_lv l = lanes_level(lv_mul(iscale, lv_sub(x, min)), 0, nmax, mode);
    lv_store(q->laux + i * LC_LANES, l);
    const lc_lv wl = lv_mul(w, l);               /* w*l*l is (w*l)*l, w*l*x is (w*l)*x */
    *s_l = lv_add(*s_l, wl);
    *s_l2 = lv_add(*s_l2, lv_mul(wl, l));
    *s_xl = lv_add(*s_xl, lv_mul(wl, x));
}

/* One candidate's three sums on both groups, in the reference's order: s[0..2] for a,
 * s[3..5] for b (sum_l, sum_l2, sum_xl). */
LANES_INLINE void lanes_qkx2_sums(const lanes_qkx2 *a, lc_lv ia, const lanes_qkx2 *b,
                                  lc_lv ib, int n, int nmax, int mode, lc_lv *s) {
    const lc_lv zero = lv_set1(0.0f), amin = a->min, bmin = b->min;
    lc_lv al = zero, al2 = zero, axl = zero, bl = zero, bl2 = zero, bxl = zero;
    for (int i = 0; i < n; i++) {
        lanes_qkx2_sum_step(a, i, nmax, mode, ia, amin, &al, &al2, &axl);
        lanes_qkx2_sum_step(b, i, nmax, mode, ib, bmin, &bl, &bl2, &bxl);
    }
    s[0] = al, s[1] = al2, s[2] = axl, s[3] = bl, s[4] = bl2, s[5] = bxl;
}

/* Element i of the weighted error sum of w*e, e = diff^2 or |diff| (use_mad), diff =
 * scale*l + min - x, l from laux (or from (iscale, min) when computed). */
LANES_INLINE void lanes_qkx2_error_step(const lanes_qkx2 *q, int i, int nmax, bool use_mad,
                                        bool computed, int mode, lc_lv iscale, lc_lv scale,
                                        lc_lv min, lc_lv *err) {
    const lc_lv x = lv_load(q->xt + i * LC_LANES), w = lv_load(q->wt + i * LC_LANES);
    const lc_lv l = computed ? lanes_level(lv_mul(iscale, lv_sub(x, min)), 0, nmax, mode)
                             : lv_load(q->laux + i * LC_LANES);
    const lc_lv diff = lv_sub(lv_add(lv_mul(scale, l), min), x);
    *err = lv_add(*err, lv_mul(w, use_mad ? lv_abs(diff) : lv_mul(diff, diff)));
}

/* The error sums of both groups for (iscale, scale, min) each: e[0] for a, e[1] for b. */
LANES_INLINE void lanes_qkx2_errors(const lanes_qkx2 *a, const lanes_qkx2 *b, int n,
                                    int nmax, bool use_mad, bool computed, int mode,
                                    const lc_lv *ia, const lc_lv *sa, const lc_lv *ma,
                                    lc_lv *e) {
    const lc_lv ia0 = ia[0], sa0 = sa[0], ma0 = ma[0], ia1 = ia[1], sa1 = sa[1], ma1 = ma[1];
    lc_lv ea = lv_set1(0.0f), eb = ea;
    for (int i = 0; i < n; i++) {
        lanes_qkx2_error_step(a, i, nmax, use_mad, computed, mode, ia0, sa0, ma0, &ea);
        lanes_qkx2_error_step(b, i, nmax, use_mad, computed, mode, ia1, sa1, ma1, &eb);
    }
    e[0] = ea, e[1] = eb;
}

/* The least-squares scale and min of one candidate's sums (the reference's D > 0 case,
 * the min capped at 0); returns the lanes where D > 0. */
static inline lc_lm lanes_qkx2_solve(const lanes_qkx2 *q, const lc_lv *s, lc_lv *this_scale,
                                     lc_lv *this_min) {
    const lc_lv zero = lv_set1(0.0f), sum_l = s[0], sum_l2 = s[1], sum_xl = s[2];
    const lc_lv D = lv_sub(lv_mul(q->sum_w, sum_l2), lv_mul(sum_l, sum_l));
    lc_lv sc = lv_div(lv_sub(lv_mul(q->sum_w, sum_xl), lv_mul(q->sum_x, sum_l)), D);
    lc_lv mn = lv_div(lv_sub(lv_mul(sum_l2, q->sum_x), lv_mul(sum_l, sum_xl)), D);
    const lc_lm above = lv_gt(mn, zero);
    *this_scale = lv_sel(above, lv_div(sum_xl, sum_l2), sc);
    *this_min = lv_sel(above, zero, mn);
    return lm_andnot(q->flat, lv_gt(D, zero));
}

/* A candidate's outcome on every lane of q: where D > 0 and its error is below the best,
 * it becomes the best and its min the min of the next candidates. */
static inline void lanes_qkx2_update(lanes_qkx2 *q, lc_lm pos, lc_lv iscale, lc_lv this_scale,
                                     lc_lv this_min, lc_lv cur_error) {
    const lc_lm better = lm_and(pos, lv_lt(cur_error, q->best_error));
    q->best_error = lv_sel(better, cur_error, q->best_error);
    q->scale = lv_sel(better, this_scale, q->scale);
    q->best_iscale = lv_sel(better, iscale, q->best_iscale);
    q->best_lmin = lv_sel(better, q->min, q->best_lmin);   /* the min these levels used */
    q->min = lv_sel(better, this_min, q->min);
}

/* The fit's result on every lane of q: -min into *the_min; returns the scale. */
static inline lc_lv lanes_qkx2_result(const lanes_qkx2 *q, lc_lv *the_min) {
    *the_min = lv_neg(lv_sel(q->flat, q->flat_min, q->min));
    return lv_sel(q->flat, lv_set1(0.0f), q->scale);
}

/* The levels of q's best fit for element i. Only a lane whose stored scale comes out 0
 * keeps them (the others are re-quantized), so the callers ask only when one does. */
static inline lc_li lanes_qkx2_level(const lanes_qkx2 *q, int i, int nmax) {
    const lc_lv x = lv_load(q->xt + i * LC_LANES);
    const lc_li l = li_clamp(lv_nearest(lv_mul(q->best_iscale, lv_sub(x, q->best_lmin))), 0, nmax);
    return li_sel(q->flat, li_set1(0), l);
}

/* The whole search on the two groups a and b (xt, wt and laux set). Called with constant
 * arguments, so that each type gets its own copy. */
LANES_INLINE void lanes_fit_qkx2(lanes_qkx2 *a, lanes_qkx2 *b, int n, int nmax, float rmin,
                                 int nstep, bool use_mad) {
    const float rdelta = 0.1f;
    lanes_qkx2_start(a, n, nmax);
    lanes_qkx2_start(b, n, nmax);
    {
        const lc_lv ia[2] = { a->iscale, b->iscale }, sa[2] = { a->scale, b->scale };
        const lc_lv ma[2] = { a->min, b->min };
        lc_lv e[2];
#define ERROR0(m) lanes_qkx2_errors(a, b, n, nmax, use_mad, true, m, ia, sa, ma, e)
        LANES_BY_MODE(lanes_qkx2_mode(a, a->iscale, b, b->iscale, nmax), ERROR0);
#undef ERROR0
        a->best_error = e[0], b->best_error = e[1];
    }
    a->best_iscale = a->iscale, a->best_lmin = a->min;
    b->best_iscale = b->iscale, b->best_lmin = b->min;
    for (int is = 0; is <= nstep; is++) {
        const lc_lv num = lv_set1(rmin + rdelta * (float)is + (float)nmax);
        const lc_lv ia[2] = { lv_div(num, lv_sub(a->max, a->min)),
                              lv_div(num, lv_sub(b->max, b->min)) };
        lc_lv s[6];
#define SUMS(m) lanes_qkx2_sums(a, ia[0], b, ia[1], n, nmax, m, s)
        LANES_BY_MODE(lanes_qkx2_mode(a, ia[0], b, ia[1], nmax), SUMS);
#undef SUMS
        lc_lv sc[2], mn[2], e[2];
        const lc_lm pa = lanes_qkx2_solve(a, s, &sc[0], &mn[0]);
        const lc_lm pb = lanes_qkx2_solve(b, s + 3, &sc[1], &mn[1]);
        if (!lm_any(lm_or(pa, pb)))
            continue;
        lanes_qkx2_errors(a, b, n, nmax, use_mad, false, LANES_EXACT, ia, sc, mn, e);
        lanes_qkx2_update(a, pa, ia[0], sc[0], mn[0], e[0]);
        lanes_qkx2_update(b, pb, ia[1], sc[1], mn[1], e[1]);
    }
}

/* Sub-block j's 6-bit scale and min from the packed 12 bytes (quant/ref_k.c). */
static inline void lanes_scale_min_k4(int j, const uint8_t *q, uint8_t *sc, uint8_t *mn) {
    if (j < 4) {
        *sc = q[j] & 63;
        *mn = q[j + 4] & 63;
    } else {
        *sc = (uint8_t)((q[j + 4] & 0x0f) | (q[j - 4] >> 6) << 4);
        *mn = (uint8_t)((q[j + 4] >> 4) | (q[j] >> 6) << 4);
    }
}

/* Where a Q4_K or Q5_K block keeps its d, dmin and packed scales. */
typedef struct {
    uint16_t *d, *dmin;
    uint8_t *scales;                             /* LC_K_SCALE_SIZE bytes */
} lanes_k4_head;

/* One super-block's scalar middle, copied from quant/ref_k.c quantize_k4_scales: the
 * eight fitted scales and mins become d, dmin and the packed 6-bit scales; d_l[j] and
 * dm_l[j] get the effective scale and min of sub-block j that the levels are re-fitted
 * against. */
static inline void lanes_k4_scales(const float *scales, const float *mins, lanes_k4_head y,
                                   float *d_l, float *dm_l) {
    float max_scale = 0, max_min = 0;
    for (int j = 0; j < 8; j++) {
        if (scales[j] > max_scale) max_scale = scales[j];
        if (mins[j] > max_min) max_min = mins[j];
    }
    const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
    const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
    memset(y.scales, 0, LC_K_SCALE_SIZE);
    uint8_t sc[8], mn[8];      /* the 6-bit values as packed: d_l without unpacking them */
    for (int j = 0; j < 8; j++) {
        uint8_t ls = (uint8_t)lc_q_nearest_int(inv_scale * scales[j]);  /* the low byte */
        uint8_t lm = (uint8_t)lc_q_nearest_int(inv_min * mins[j]);
        ls = ls > 63 ? 63 : ls;
        lm = lm > 63 ? 63 : lm;
        sc[j] = ls, mn[j] = lm;
        if (j < 4) {
            y.scales[j] = ls;
            y.scales[j + 4] = lm;
        } else {
            y.scales[j + 4] = (uint8_t)((ls & 0x0f) | (lm & 0x0f) << 4);
            y.scales[j - 4] |= (uint8_t)((ls >> 4) << 6);
            y.scales[j] |= (uint8_t)((lm >> 4) << 6);
        }
    }
    *y.d = lc_q_scale_f16(max_scale / 63.f);
    *y.dmin = lc_q_scale_f16(max_min / 63.f);
    const float d = lc_q_f16_to_f32(*y.d), dmin = lc_q_f16_to_f32(*y.dmin);
    for (int j = 0; j < 8; j++) {
        d_l[j] = d * sc[j];
        dm_l[j] = dmin * mn[j];
    }
}

/* One group's elements transposed into xt and its weights (av_x = sqrt(sum x^2 / 32),
 * w = av_x + |x|) into wt; false when x holds a NaN. */
static inline bool lanes_k4_prepare(const float *x, float *xt, float *wt) {
    lv_transpose_in(x, 32, xt);
    if (lanes_any_nan(xt, 32 * LC_LANES))
        return false;
    lc_lv sum_x2 = lv_set1(0.0f);
    for (int i = 0; i < 32; i++) {
        const lc_lv v = lv_load(xt + i * LC_LANES);
        sum_x2 = lv_add(sum_x2, lv_mul(v, v));
    }
    const lc_lv av_x = lv_sqrt(lv_div(sum_x2, lv_set1(32.0f)));
    for (int i = 0; i < 32; i++)
        lv_store(wt + i * LC_LANES, lv_add(av_x, lv_abs(lv_load(xt + i * LC_LANES))));
    return true;
}

/* One group's fitted scales and mins into its LANES_Q4K_SB heads, and its levels, re-
 * quantized against the scales as stored, into L (256 per super-block, element order);
 * where the stored scale is 0 the lane keeps its fitted levels, as in ggml. */
static inline void lanes_k4_finish(const lanes_qkx2 *q, int nmax, const lanes_k4_head *heads,
                                   uint8_t *L) {
    LC_LANES_ALIGN float scales[LC_LANES], mins[LC_LANES], d_l[LC_LANES], dm_l[LC_LANES];
    LC_LANES_ALIGN int32_t lev[32 * LC_LANES];
    lc_lv the_min;
    lv_store(scales, lanes_qkx2_result(q, &the_min));
    lv_store(mins, the_min);
    for (int g = 0; g < LANES_Q4K_SB; g++)
        lanes_k4_scales(scales + 8 * g, mins + 8 * g, heads[g], d_l + 8 * g, dm_l + 8 * g);
    const lc_lv d = lv_load(d_l), dm = lv_load(dm_l);
    const lc_lm keep = lv_eq(d, lv_set1(0.0f));
    const bool any_keep = lm_any(keep);
    for (int i = 0; i < 32; i++) {
        const lc_lv v = lv_load(q->xt + i * LC_LANES);
        lc_li l = li_clamp(lv_nearest(lv_div(lv_add(v, dm), d)), 0, nmax);
        if (any_keep)
            l = li_sel(keep, lanes_qkx2_level(q, i, nmax), l);
        li_store(lev + i * LC_LANES, l);
    }
    li_transpose_out_u8(lev, 32, L);
}

enum { LANES_K4_PAIR = 2 * LANES_Q4K_SB };   /* super-blocks per pair of groups */

/* Q4_K and Q5_K (levels 0..nmax, search constants rmin and nstep) for LANES_K4_PAIR whole
 * super-blocks from x, two groups: heads[g] gets super-block g's d, dmin and scales,
 * L[256*g ..] its 256 levels in element order. False, with nothing written, when x holds
 * a NaN. */
static inline bool lanes_k4_group(const float *x, int nmax, float rmin, int nstep,
                                  const lanes_k4_head *heads, uint8_t *L) {
    LC_LANES_ALIGN float xt[2][32 * LC_LANES], wt[2][32 * LC_LANES], laux[2][32 * LC_LANES];
    for (int h = 0; h < 2; h++)
        if (!lanes_k4_prepare(x + (size_t)h * LANES_Q4K_SB * LC_QK_K, xt[h], wt[h]))
            return false;
    lanes_qkx2 a = { .xt = xt[0], .wt = wt[0], .laux = laux[0] };
    lanes_qkx2 b = { .xt = xt[1], .wt = wt[1], .laux = laux[1] };
    lanes_fit_qkx2(&a, &b, 32, nmax, rmin, nstep, false);
    lanes_k4_finish(&a, nmax, heads, L);
    lanes_k4_finish(&b, nmax, heads + LANES_Q4K_SB, L + 256 * LANES_Q4K_SB);
    return true;
}

/* LANES_K4_PAIR whole super-blocks of Q4_K; false, with nothing written, on a NaN. */
static inline bool lanes_q4_K_group(const float *x, lc_block_q4_K *y) {
    uint8_t L[256 * LANES_K4_PAIR];
    lanes_k4_head heads[LANES_K4_PAIR];
    for (int g = 0; g < LANES_K4_PAIR; g++)
        heads[g] = (lanes_k4_head){ &y[g].d, &y[g].dmin, y[g].scales };
    if (!lanes_k4_group(x, 15, -1.0f, 20, heads, L))
        return false;
    for (int g = 0; g < LANES_K4_PAIR; g++) {
        const uint8_t *Lg = L + 256 * g;
        lc_block_q4_K *blk = &y[g];
        for (int j = 0; j < 4; j++)              /* element l in the low nibble, l+32 high */
            for (int l = 0; l < 32; l++)
                blk->qs[32 * j + l] = (uint8_t)(Lg[64 * j + l] | Lg[64 * j + l + 32] << 4);
    }
    return true;
}

/* LANES_K4_PAIR whole super-blocks of Q5_K; false, with nothing written, on a NaN. */
static inline bool lanes_q5_K_group(const float *x, lc_block_q5_K *y) {
    uint8_t L[256 * LANES_K4_PAIR];
    lanes_k4_head heads[LANES_K4_PAIR];
    for (int g = 0; g < LANES_K4_PAIR; g++)
        heads[g] = (lanes_k4_head){ &y[g].d, &y[g].dmin, y[g].scales };
    if (!lanes_k4_group(x, 31, -0.5f, 15, heads, L))
        return false;
    for (int g = 0; g < LANES_K4_PAIR; g++) {
        const uint8_t *Lg = L + 256 * g;
        lc_block_q5_K *blk = &y[g];
        memset(blk->qh, 0, sizeof blk->qh);
        /* Levels are 0..31: bit 4 of element 64j + l goes to bit 2j of qh[l], of element
         * 64j + 32 + l to bit 2j+1; the low four bits pair up as in Q4_K. */
        for (int j = 0; j < 4; j++) {
            for (int l = 0; l < 32; l++) {
                const uint8_t l1 = Lg[64 * j + l], l2 = Lg[64 * j + l + 32];
                blk->qs[32 * j + l] = (uint8_t)((l1 & 0x0f) | (uint8_t)(l2 << 4));
                blk->qh[l] |= (uint8_t)(((l1 >> 4) << (2 * j)) | ((l2 >> 4) << (2 * j + 1)));
            }
        }
    }
    return true;
}

/* Asks for the next group's super-blocks (at most `left`, up to `sb`) to be brought into
 * the cache while this group computes: a group reads whole pages, and the hardware's
 * prefetch stops at each page's end. */
static inline void lanes_prefetch(const float *next, size_t left, size_t sb) {
    const size_t bytes = (left < sb ? left : sb) * LC_QK_K * sizeof(float);
    for (size_t off = 0; off < bytes; off += 64)
        __builtin_prefetch((const char *)next + off);
}

/* The whole-row loop for a type whose groups hold SB super-blocks of type T: groups of
 * SB, a zero-padded copy for the last partial group, the reference for a group holding
 * a NaN. */
#define LANES_ROW_LOOP(T, SB, group, ref)                                                  \
    do {                                                                                   \
        T *y = vy;                                                                         \
        const size_t nsb = n / LC_QK_K;                                                    \
        for (size_t b = 0; b < nsb; b += (SB)) {                                           \
            const size_t k = nsb - b < (SB) ? nsb - b : (SB);                              \
            if (k == (SB)) {                                                               \
                lanes_prefetch(x + (b + (SB)) * LC_QK_K, nsb - b - k, (SB));               \
                if (!group(x + b * LC_QK_K, &y[b]))                                        \
                    ref(x + b * LC_QK_K, &y[b], k * LC_QK_K);                              \
                continue;                                                                  \
            }                                                                              \
            float pad[(SB) * LC_QK_K];                                                     \
            T out[SB];                                                                     \
            memcpy(pad, x + b * LC_QK_K, k * LC_QK_K * sizeof *pad);                       \
            memset(pad + k * LC_QK_K, 0, ((SB) - k) * LC_QK_K * sizeof *pad);              \
            if (group(pad, out))                                                           \
                memcpy(&y[b], out, k * sizeof *out);                                       \
            else                                                                           \
                ref(x + b * LC_QK_K, &y[b], k * LC_QK_K);                                  \
        }                                                                                  \
    } while (0)

static inline void lanes_q4_K_quantize(const float *restrict x, void *restrict vy, size_t n) {
    LANES_ROW_LOOP(lc_block_q4_K, LANES_K4_PAIR, lanes_q4_K_group, lc_q4_K_quantize_ref);
}

static inline void lanes_q5_K_quantize(const float *restrict x, void *restrict vy, size_t n) {
    LANES_ROW_LOOP(lc_block_q5_K, LANES_K4_PAIR, lanes_q5_K_group, lc_q5_K_quantize_ref);
}

/* ---- Q2_K ---- */

enum { LANES_Q2K_SB = LC_LANES / 16 };   /* super-blocks per group: 16 sub-blocks of 16 */

/* One super-block's scalar middle, copied from lc_q2_K_quantize_ref: the sixteen fitted
 * scales and mins become 4-bit scales and mins under d and dmin; d_l[j] and dm_l[j] get
 * the effective scale and min of sub-block j that the levels are re-fitted against. */
static inline void lanes_q2_K_scales(const float *scales, const float *mins, lc_block_q2_K *y,
                                     float *d_l, float *dm_l) {
    const float q4scale = 15.f;
    float max_scale = 0, max_min = 0;
    for (int j = 0; j < 16; j++) {
        if (scales[j] > max_scale) max_scale = scales[j];
        if (mins[j] > max_min) max_min = mins[j];
    }
    if (max_scale > 0) {
        const float iscale = q4scale / max_scale;
        for (int j = 0; j < 16; j++)             /* the low byte, as gcc stores an int */
            y->scales[j] = (uint8_t)((unsigned)lc_q_nearest_int(iscale * scales[j]) & 0xffu);
        y->d = lc_q_scale_f16(max_scale / q4scale);
    } else {
        memset(y->scales, 0, sizeof y->scales);
        y->d = lc_q_scale_f16(0.f);
    }
    if (max_min > 0) {
        const float iscale = q4scale / max_min;
        for (int j = 0; j < 16; j++)             /* ggml: scales[j] |= (l << 4) */
            y->scales[j] |= (uint8_t)(((unsigned)lc_q_nearest_int(iscale * mins[j]) << 4) & 0xffu);
        y->dmin = lc_q_scale_f16(max_min / q4scale);
    } else {
        y->dmin = lc_q_scale_f16(0.f);
    }
    const float d = lc_q_f16_to_f32(y->d), dmin = lc_q_f16_to_f32(y->dmin);
    for (int j = 0; j < 16; j++) {
        d_l[j] = d * (y->scales[j] & 0xf);
        dm_l[j] = dmin * (y->scales[j] >> 4);
    }
}

/* One group of Q2_K from a finished fit: its LANES_Q2K_SB blocks' scales, and the levels
 * re-quantized against the scales as stored (a zero stored scale keeps the fit), packed. */
static inline void lanes_q2_K_finish(const lanes_qkx2 *q, lc_block_q2_K *y) {
    LC_LANES_ALIGN float scales[LC_LANES], mins[LC_LANES], d_l[LC_LANES], dm_l[LC_LANES];
    LC_LANES_ALIGN int32_t lev[16 * LC_LANES];
    uint8_t L[LC_LANES * 16];
    lc_lv the_min;
    lv_store(scales, lanes_qkx2_result(q, &the_min));
    lv_store(mins, the_min);
    for (int g = 0; g < LANES_Q2K_SB; g++)
        lanes_q2_K_scales(scales + 16 * g, mins + 16 * g, &y[g], d_l + 16 * g, dm_l + 16 * g);
    const lc_lv d = lv_load(d_l), dm = lv_load(dm_l);
    const lc_lm keep = lv_eq(d, lv_set1(0.0f));
    const bool any_keep = lm_any(keep);
    for (int i = 0; i < 16; i++) {
        const lc_lv v = lv_load(q->xt + i * LC_LANES);
        lc_li l = li_clamp(lv_nearest(lv_div(lv_add(v, dm), d)), 0, 3);
        if (any_keep)
            l = li_sel(keep, lanes_qkx2_level(q, i, 3), l);
        li_store(lev + i * LC_LANES, l);
    }
    li_transpose_out_u8(lev, 16, L);
    for (int g = 0; g < LANES_Q2K_SB; g++) {
        const uint8_t *Lg = L + 256 * g;
        lc_block_q2_K *blk = &y[g];
        for (int h = 0; h < 2; h++)          /* four levels 32 apart per byte */
            for (int l = 0; l < 32; l++)
                blk->qs[32 * h + l] = (uint8_t)(Lg[128 * h + l] | Lg[128 * h + l + 32] << 2 |
                                                Lg[128 * h + l + 64] << 4 |
                                                Lg[128 * h + l + 96] << 6);
    }
}

enum { LANES_Q2K_PAIR = 2 * LANES_Q2K_SB };   /* super-blocks per pair of groups */

/* LANES_Q2K_PAIR whole super-blocks of Q2_K, two groups: weights |x|,
 * make_qkx2_quants(16, 3, ..., -0.5, 0.1, 15, mean absolute error) per sub-block; false,
 * with nothing written, when x holds a NaN. */
static inline bool lanes_q2_K_group(const float *x, lc_block_q2_K *y) {
    LC_LANES_ALIGN float xt[2][16 * LC_LANES], wt[2][16 * LC_LANES], laux[2][16 * LC_LANES];
    for (int h = 0; h < 2; h++) {
        lv_transpose_in(x + (size_t)h * LANES_Q2K_SB * LC_QK_K, 16, xt[h]);
        if (lanes_any_nan(xt[h], 16 * LC_LANES))
            return false;
        for (int i = 0; i < 16; i++)
            lv_store(wt[h] + i * LC_LANES, lv_abs(lv_load(xt[h] + i * LC_LANES)));
    }
    lanes_qkx2 a = { .xt = xt[0], .wt = wt[0], .laux = laux[0] };
    lanes_qkx2 b = { .xt = xt[1], .wt = wt[1], .laux = laux[1] };
    lanes_fit_qkx2(&a, &b, 16, 3, -0.5f, 15, true);
    lanes_q2_K_finish(&a, y);
    lanes_q2_K_finish(&b, y + LANES_Q2K_SB);
    return true;
}

static inline void lanes_q2_K_quantize(const float *restrict x, void *restrict vy, size_t n) {
    LANES_ROW_LOOP(lc_block_q2_K, LANES_Q2K_PAIR, lanes_q2_K_group, lc_q2_K_quantize_ref);
}

/* ---- Q3_K ---- */

/* ggml's make_q3_quants(16, 4, x, L, true) (quant/ref_k.c fit_scale_q3) on every lane: a
 * symmetric fit from the signed extreme (levels -4..3, weights w = x^2), then up to five
 * passes over the elements, each moving one level at a time while that raises
 * sumlx^2/suml2, stopping after a pass that moved nothing.
 *
 * Most sub-blocks stop after their first pass (about 79 % of normal-like data, 1.28
 * passes on average), but a group of lanes would run until its slowest lane stops
 * (about 3.2 passes for 32 lanes). So the fit is split: every group runs its start and
 * its first two passes in place (after one, nearly every group of 32 still has a lane
 * that moves; after two, about one lane in 18 does); then the lanes still moving, from a
 * whole batch of groups, are gathered into fresh groups for each later pass, and their
 * state scattered back.
 * A lane's operations never look at another lane, so where it runs does not change a
 * bit of its result. */
enum { LANES_Q3K_BATCH = 8 };   /* groups whose still-moving lanes share passes 3..5 */

typedef struct {
    LC_LANES_ALIGN float xt[16 * LC_LANES];     /* elements, one vector per index */
    LC_LANES_ALIGN float wt[16 * LC_LANES];     /* w = x*x */
    LC_LANES_ALIGN float wxt[16 * LC_LANES];    /* w*x */
    LC_LANES_ALIGN float lt[16 * LC_LANES];     /* levels -4..3, as floats */
    LC_LANES_ALIGN float sumlx[LC_LANES], suml2[LC_LANES];
    LC_LANES_ALIGN float moving[LC_LANES];      /* 1: the lane's last pass moved a level */
    lc_lm tiny;                                 /* the reference's all-zero sub-block */
    bool nan;                                   /* the group goes to the reference */
} lanes_q3_fit;

/* The symmetric start on every lane of f (f->xt filled). */
static inline void lanes_q3_start(lanes_q3_fit *f) {
    enum { N = 16, NMAX = 4 };
    const lc_lv zero = lv_set1(0.0f);
    lc_lv max = zero, amax = zero;
    for (int i = 0; i < N; i++) {
        const lc_lv x = lv_load(f->xt + i * LC_LANES), ax = lv_abs(x);
        const lc_lm m = lv_gt(ax, amax);
        amax = lv_sel(m, ax, amax);
        max = lv_sel(m, x, max);
        const lc_lv w = lv_mul(x, x);
        lv_store(f->wt + i * LC_LANES, w);
        lv_store(f->wxt + i * LC_LANES, lv_mul(w, x));
    }
    f->tiny = lv_lt(amax, lv_set1(LC_LANES_EPS));
    const lc_lv iscale = lv_div(lv_set1((float)-NMAX), max);
    lc_lv sumlx = zero, suml2 = zero;
    for (int i = 0; i < N; i++) {
        const lc_lv x = lv_load(f->xt + i * LC_LANES);
        const lc_lv l = li_to_lv(li_clamp(lv_nearest(lv_mul(iscale, x)), -NMAX, NMAX - 1));
        lv_store(f->lt + i * LC_LANES, l);
        sumlx = lv_add(sumlx, lv_mul(lv_load(f->wxt + i * LC_LANES), l));   /* w*x*l */
        suml2 = lv_add(suml2, lv_mul(lv_mul(lv_load(f->wt + i * LC_LANES), l), l));
    }
    lv_store(f->sumlx, sumlx);
    lv_store(f->suml2, suml2);
}

/* Element i of one pass of the reference's loop, on the lanes in `moving` of f, whose
 * running sums are *sumlx and *suml2; *changed gains the lanes that moved a level. */
LANES_INLINE void lanes_q3_step(lanes_q3_fit *f, int i, lc_lm moving, lc_lv *sumlx,
                                lc_lv *suml2, lc_lm *changed) {
    enum { NMAX = 4 };
    const lc_lv zero = lv_set1(0.0f);
    const lc_lv x = lv_load(f->xt + i * LC_LANES), w = lv_load(f->wt + i * LC_LANES);
    const lc_lv wx = lv_load(f->wxt + i * LC_LANES), l = lv_load(f->lt + i * LC_LANES);
    lc_lv slx = lv_sub(*sumlx, lv_mul(wx, l));
    const lc_lm pos = lm_and(moving, lv_gt(slx, zero));
    if (!lm_any(pos))
        return;
    lc_lv sl2 = lv_sub(*suml2, lv_mul(lv_mul(w, l), l));
    const lc_lv new_l =
        li_to_lv(li_clamp(lv_nearest(lv_div(lv_mul(x, sl2), slx)), -NMAX, NMAX - 1));
    const lc_lm differs = lm_and(pos, lv_ne(new_l, l));
    slx = lv_add(slx, lv_mul(wx, new_l));
    sl2 = lv_add(sl2, lv_mul(lv_mul(w, new_l), new_l));
    const lc_lm take =
        lm_and(lm_and(differs, lv_gt(sl2, zero)),
               lv_gt(lv_mul(lv_mul(slx, slx), *suml2), lv_mul(lv_mul(*sumlx, *sumlx), sl2)));
    lv_store(f->lt + i * LC_LANES, lv_sel(take, new_l, l));
    *sumlx = lv_sel(take, slx, *sumlx);
    *suml2 = lv_sel(take, sl2, *suml2);
    *changed = lm_or(*changed, take);
}

/* One pass on the lanes in `moving` of f; returns the lanes that moved a level (the
 * others are left as they were). */
LANES_INLINE lc_lm lanes_q3_pass(lanes_q3_fit *f, lc_lm moving) {
    lc_lv sumlx = lv_load(f->sumlx), suml2 = lv_load(f->suml2);
    lc_lm changed = lm_none();
    for (int i = 0; i < 16; i++)
        lanes_q3_step(f, i, moving, &sumlx, &suml2, &changed);
    lv_store(f->sumlx, sumlx);
    lv_store(f->suml2, suml2);
    return changed;
}

/* lanes_q3_pass on two fits at once: a pass is a chain of dependent operations from one
 * element's decision to the next, and two independent chains keep the vector units
 * twice as busy. */
LANES_INLINE void lanes_q3_pass2(lanes_q3_fit *f0, lanes_q3_fit *f1, lc_lm moving0,
                                 lc_lm moving1, lc_lm *changed0, lc_lm *changed1) {
    lc_lv sumlx0 = lv_load(f0->sumlx), suml20 = lv_load(f0->suml2);
    lc_lv sumlx1 = lv_load(f1->sumlx), suml21 = lv_load(f1->suml2);
    lc_lm c0 = lm_none(), c1 = lm_none();
    for (int i = 0; i < 16; i++) {
        lanes_q3_step(f0, i, moving0, &sumlx0, &suml20, &c0);
        lanes_q3_step(f1, i, moving1, &sumlx1, &suml21, &c1);
    }
    lv_store(f0->sumlx, sumlx0);
    lv_store(f0->suml2, suml20);
    lv_store(f1->sumlx, sumlx1);
    lv_store(f1->suml2, suml21);
    *changed0 = c0, *changed1 = c1;
}

/* lanes_q3_pass on four fits at once: a pass is a chain of dependent operations from one
 * element's decision to the next, and independent chains keep the vector units busy. */
LANES_INLINE void lanes_q3_pass4(lanes_q3_fit *const *f, const lc_lm *moving, lc_lm *changed) {
    lc_lv sumlx0 = lv_load(f[0]->sumlx), suml20 = lv_load(f[0]->suml2);
    lc_lv sumlx1 = lv_load(f[1]->sumlx), suml21 = lv_load(f[1]->suml2);
    lc_lv sumlx2 = lv_load(f[2]->sumlx), suml22 = lv_load(f[2]->suml2);
    lc_lv sumlx3 = lv_load(f[3]->sumlx), suml23 = lv_load(f[3]->suml2);
    lc_lm c0 = lm_none(), c1 = lm_none(), c2 = lm_none(), c3 = lm_none();
    for (int i = 0; i < 16; i++) {
        lanes_q3_step(f[0], i, moving[0], &sumlx0, &suml20, &c0);
        lanes_q3_step(f[1], i, moving[1], &sumlx1, &suml21, &c1);
        lanes_q3_step(f[2], i, moving[2], &sumlx2, &suml22, &c2);
        lanes_q3_step(f[3], i, moving[3], &sumlx3, &suml23, &c3);
    }
    lv_store(f[0]->sumlx, sumlx0);
    lv_store(f[0]->suml2, suml20);
    lv_store(f[1]->sumlx, sumlx1);
    lv_store(f[1]->suml2, suml21);
    lv_store(f[2]->sumlx, sumlx2);
    lv_store(f[2]->suml2, suml22);
    lv_store(f[3]->sumlx, sumlx3);
    lv_store(f[3]->suml2, suml23);
    changed[0] = c0, changed[1] = c1, changed[2] = c2, changed[3] = c3;
}

/* Passes from+1..5 for the lanes of fits[0..nfit) still moving (f->moving), LC_LANES at a
 * time: each round gathers a lane's elements, levels and sums into a pool group (its
 * weights recomputed there by the same two multiplies), runs one pass and scatters the
 * levels and sums back. The list of moving lanes is built without branches: which lanes
 * move is close to random. */
static inline void lanes_q3_later_passes(lanes_q3_fit *fits, int nfit, int from) {
    lanes_q3_fit pools[2];                       /* idle lanes keep old values, masked */
    lanes_q3_fit *const pool[2] = { &pools[0], &pools[1] };
    LC_LANES_ALIGN float index[LC_LANES], moved[2 * LC_LANES];
    uint16_t list[LANES_Q3K_BATCH * LC_LANES], next[LANES_Q3K_BATCH * LC_LANES];
    memset(pools, 0, sizeof pools);
    for (int r = 0; r < LC_LANES; r++)
        index[r] = (float)r;
    const lc_lv one = lv_set1(1.0f), zero = lv_set1(0.0f);
    int count = 0;
    for (int g = 0; g < nfit; g++)
        for (int r = 0; r < LC_LANES; r++) {
            list[count] = (uint16_t)(g * LC_LANES + r);
            count += fits[g].moving[r] != 0.0f;
        }
    for (int itry = from; itry < 5 && count > 0; itry++) {
        int kept = 0;
        for (int k0 = 0; k0 < count; k0 += 2 * LC_LANES) {
            const int live = count - k0 < 2 * LC_LANES ? count - k0 : 2 * LC_LANES;
            for (int k = 0; k < live; k++) {
                const lanes_q3_fit *f = &fits[list[k0 + k] / LC_LANES];
                lanes_q3_fit *p = pool[k / LC_LANES];
                const int rf = list[k0 + k] % LC_LANES, rp = k % LC_LANES;
                for (int i = 0; i < 16; i++) {
                    p->xt[i * LC_LANES + rp] = f->xt[i * LC_LANES + rf];
                    p->lt[i * LC_LANES + rp] = f->lt[i * LC_LANES + rf];
                }
                p->sumlx[rp] = f->sumlx[rf];
                p->suml2[rp] = f->suml2[rf];
            }
            const int npool = live > LC_LANES ? 2 : 1;
            lc_lm mask[2], moves[2];
            for (int q = 0; q < npool; q++) {
                for (int i = 0; i < 16; i++) {
                    const lc_lv x = lv_load(pool[q]->xt + i * LC_LANES), w = lv_mul(x, x);
                    lv_store(pool[q]->wt + i * LC_LANES, w);
                    lv_store(pool[q]->wxt + i * LC_LANES, lv_mul(w, x));
                }
                mask[q] = lv_lt(lv_load(index), lv_set1((float)(live - q * LC_LANES)));
            }
            if (npool == 2)
                lanes_q3_pass2(pool[0], pool[1], mask[0], mask[1], &moves[0], &moves[1]);
            else
                moves[0] = lanes_q3_pass(pool[0], mask[0]);
            for (int q = 0; q < npool; q++)
                lv_store(moved + q * LC_LANES, lv_sel(moves[q], one, zero));
            for (int k = 0; k < live; k++) {
                lanes_q3_fit *f = &fits[list[k0 + k] / LC_LANES];
                const lanes_q3_fit *p = pool[k / LC_LANES];
                const int rf = list[k0 + k] % LC_LANES, rp = k % LC_LANES;
                for (int i = 0; i < 16; i++)
                    f->lt[i * LC_LANES + rf] = p->lt[i * LC_LANES + rp];
                f->sumlx[rf] = p->sumlx[rp];
                f->suml2[rf] = p->suml2[rp];
                next[kept] = list[k0 + k];
                kept += moved[k] != 0.0f;
            }
        }
        memcpy(list, next, (size_t)kept * sizeof *list);
        count = kept;
    }
}

/* The fit's scale on every lane of f (0 for an all-zero lane). */
static inline lc_lv lanes_q3_scale(const lanes_q3_fit *f) {
    const lc_lv zero = lv_set1(0.0f);
    const lc_lv sumlx = lv_load(f->sumlx), suml2 = lv_load(f->suml2);
    return lv_sel(f->tiny, zero, lv_sel(lv_gt(suml2, zero), lv_div(sumlx, suml2), zero));
}

/* The fit's levels + 4 for element i (0 for an all-zero lane). Only a lane whose stored
 * scale comes out 0 keeps them, so the caller asks only when one does. */
static inline lc_li lanes_q3_level(const lanes_q3_fit *f, int i) {
    const lc_lv l = lv_add(lv_load(f->lt + i * LC_LANES), lv_set1(4.0f));
    /* l + 4 is 0..7: the float converts exactly (lanes_level's LANES_ROUND path). */
    return li_sel(f->tiny, li_set1(0), li_clamp(lv_nearest(l), 0, 7));
}

/* Sub-block s's 6-bit scale (0..63) from Q3_K's packed 12 bytes (quant/ref_k.c). */
static inline int lanes_scale_k3(int s, const uint8_t *q) {
    const int lo = s < 8 ? q[s] & 0xf : q[s - 8] >> 4;
    return lo | ((q[8 + s % 4] >> (2 * (s / 4))) & 3) << 4;
}

/* One super-block's scalar middle, copied from lc_q3_K_quantize_ref: the sixteen fitted
 * scales become d and the packed 6-bit scales (biased by 32); d_l[j] gets sub-block j's
 * effective scale. */
static inline void lanes_q3_K_scales(const float *scales, lc_block_q3_K *y, float *d_l) {
    float max_scale = 0, amax = 0;
    for (int j = 0; j < 16; j++) {
        const float scale = fabsf(scales[j]);
        if (scale > amax) {
            amax = scale;
            max_scale = scales[j];
        }
    }
    /* The 6-bit scales as packed (0 each when max_scale is 0, as the packed bytes then
     * are), kept here to give d_l without unpacking them again. */
    int ls[16] = { 0 };
    memset(y->scales, 0, sizeof y->scales);
    if (max_scale != 0.0f) {
        const float iscale = -32.f / max_scale;
        for (int j = 0; j < 16; j++) {
            /* ggml: int8_t l = nearest_int(...); l = MAX(-32, MIN(31, l)) + 32; */
            int l = (int8_t)(uint8_t)((unsigned)lc_q_nearest_int(iscale * scales[j]) & 0xffu);
            l = (l < -32 ? -32 : l > 31 ? 31 : l) + 32;
            ls[j] = l;
            if (j < 8)
                y->scales[j] = (uint8_t)(l & 0xf);
            else
                y->scales[j - 8] |= (uint8_t)((l & 0xf) << 4);
            y->scales[j % 4 + 8] |= (uint8_t)((l >> 4) << (2 * (j / 4)));
        }
        y->d = lc_q_scale_f16(1 / iscale);
    } else {
        y->d = lc_q_scale_f16(0.f);
    }
    const float d = lc_q_f16_to_f32(y->d);
    for (int j = 0; j < 16; j++)
        d_l[j] = d * (float)(ls[j] - 32);
}

/* The levels and packing of LANES_Q2K_SB super-blocks of Q3_K from a finished fit. */
static inline void lanes_q3_K_write(const lanes_q3_fit *f, lc_block_q3_K *y) {
    LC_LANES_ALIGN float scales[LC_LANES], d_l[LC_LANES];
    LC_LANES_ALIGN int32_t lev[16 * LC_LANES];
    uint8_t L[LC_LANES * 16];
    lv_store(scales, lanes_q3_scale(f));
    for (int g = 0; g < LANES_Q2K_SB; g++)
        lanes_q3_K_scales(scales + 16 * g, &y[g], d_l + 16 * g);
    /* Re-quantize against the scales as stored; a zero stored scale keeps the fit. */
    const lc_lv d = lv_load(d_l);
    const lc_lm keep = lv_eq(d, lv_set1(0.0f));
    const bool any_keep = lm_any(keep);
    for (int i = 0; i < 16; i++) {
        const lc_lv v = lv_load(f->xt + i * LC_LANES);
        lc_li l = li_add(li_clamp(lv_nearest(lv_div(v, d)), -4, 3), li_set1(4));
        if (any_keep)
            l = li_sel(keep, lanes_q3_level(f, i), l);
        li_store(lev + i * LC_LANES, l);
    }
    li_transpose_out_u8(lev, 16, L);
    for (int g = 0; g < LANES_Q2K_SB; g++) {
        const uint8_t *Lg = L + 256 * g;
        lc_block_q3_K *blk = &y[g];
        /* Levels are 0..7: bit 2 of element 32k + m goes to bit k of hmask[m], bits 0-1
         * pack four to a byte as Q2_K's. The inner loops run over 32 contiguous bytes, so
         * that the compiler makes each one a few vector instructions. */
        uint8_t hmask[32] = { 0 };
        for (int k = 0; k < 8; k++)
            for (int m = 0; m < 32; m++)
                hmask[m] |= (uint8_t)(((Lg[32 * k + m] >> 2) & 1) << k);
        memcpy(blk->hmask, hmask, sizeof hmask);
        for (int hh = 0; hh < 2; hh++)
            for (int l = 0; l < 32; l++)
                blk->qs[32 * hh + l] = (uint8_t)((Lg[128 * hh + l] & 3) |
                                                 (Lg[128 * hh + l + 32] & 3) << 2 |
                                                 (Lg[128 * hh + l + 64] & 3) << 4 |
                                                 (Lg[128 * hh + l + 96] & 3) << 6);
    }
}

/* ngroups (<= LANES_Q3K_BATCH) groups of LANES_Q2K_SB whole super-blocks of Q3_K from x;
 * a group holding a NaN goes to the reference. */
static inline void lanes_q3_K_batch(const float *x, lc_block_q3_K *y, int ngroups) {
    lanes_q3_fit fits[LANES_Q3K_BATCH];
    const lc_lv one = lv_set1(1.0f), zero = lv_set1(0.0f);
    lc_lm first[LANES_Q3K_BATCH + 1];            /* the lanes each group's next pass runs */
    for (int g = 0; g < ngroups; g++) {
        lanes_q3_fit *f = &fits[g];
        lv_transpose_in(x + (size_t)g * LANES_Q2K_SB * LC_QK_K, 16, f->xt);
        f->nan = lanes_any_nan(f->xt, 16 * LC_LANES);
        first[g] = lm_none();
        if (f->nan)
            continue;
        lanes_q3_start(f);
        first[g] = lm_andnot(f->tiny, lv_eq(zero, zero));
    }
    /* The first two passes in place, four groups at a time (most lanes stop after the
     * first, but nearly every group still has a lane that moves); the second pass runs
     * only the lanes the first one moved. */
    for (int pass = 0; pass < 2; pass++) {
        for (int g = 0; g < ngroups; g += 4) {
            lc_lm moved[4];
            if (g + 4 <= ngroups) {
                lanes_q3_fit *const quad[4] = { &fits[g], &fits[g + 1], &fits[g + 2],
                                                &fits[g + 3] };
                lanes_q3_pass4(quad, &first[g], moved);
            } else {
                for (int k = 0; g + k < ngroups; k++)
                    moved[k] = lanes_q3_pass(&fits[g + k], first[g + k]);
            }
            for (int k = 0; k < 4 && g + k < ngroups; k++) {
                first[g + k] = moved[k];
                lv_store(fits[g + k].moving, lv_sel(moved[k], one, zero));
            }
        }
    }
    lanes_q3_later_passes(fits, ngroups, 2);
    for (int g = 0; g < ngroups; g++) {
        const float *xg = x + (size_t)g * LANES_Q2K_SB * LC_QK_K;
        if (fits[g].nan)
            lc_q3_K_quantize_ref(xg, &y[g * LANES_Q2K_SB], LANES_Q2K_SB * LC_QK_K);
        else
            lanes_q3_K_write(&fits[g], &y[g * LANES_Q2K_SB]);
    }
}

/* A row of Q3_K: batches of whole groups, then the last partial group from a
 * zero-padded copy. */
static inline void lanes_q3_K_quantize(const float *restrict x, void *restrict vy, size_t n) {
    lc_block_q3_K *y = vy;
    const size_t nsb = n / LC_QK_K, per_batch = (size_t)LANES_Q3K_BATCH * LANES_Q2K_SB;
    size_t b = 0;
    while (nsb - b >= LANES_Q2K_SB) {
        const size_t groups = (nsb - b >= per_batch ? per_batch : nsb - b) / LANES_Q2K_SB;
        lanes_prefetch(x + (b + groups * LANES_Q2K_SB) * LC_QK_K,
                       nsb - b - groups * LANES_Q2K_SB, per_batch);
        lanes_q3_K_batch(x + b * LC_QK_K, &y[b], (int)groups);
        b += groups * LANES_Q2K_SB;
    }
    if (b < nsb) {
        float pad[LANES_Q2K_SB * LC_QK_K];
        lc_block_q3_K out[LANES_Q2K_SB];
        memcpy(pad, x + b * LC_QK_K, (nsb - b) * LC_QK_K * sizeof *pad);
        memset(pad + (nsb - b) * LC_QK_K, 0, (LANES_Q2K_SB - (nsb - b)) * LC_QK_K * sizeof *pad);
        lanes_q3_K_batch(pad, out, 1);
        memcpy(&y[b], out, (nsb - b) * sizeof *out);
    }
}

/* ---- Q6_K ---- */

enum { LANES_Q6K_SB = LC_LANES / 16 };   /* super-blocks per group */

/* ggml's make_qx_quants(16, 32, x, L, 1, NULL) on every lane (quant/ref_k.c
 * fit_scale_sym) of two groups at once (each candidate's sums are chains of dependent
 * additions; two groups' chains interleave): the symmetric fit from the signed extreme,
 * then 18 more candidates -(32 + 0.1*is)/max, keeping the largest sumlx^2/suml2. Levels
 * are recomputed at the end from the best inverse scale, as in lanes_fit_qkx2. */
typedef struct {
    const float *xt;                            /* 16 vectors of elements */
    float *wt, *wxt;                            /* w = x*x and w*x, filled by the start */
    lc_lv max, amax, lo;                        /* signed extreme, |extreme|, -|extreme| */
    lc_lm tiny;                                 /* the reference's all-zero sub-block */
    lc_lv scale, best, best_iscale;
} lanes_q6_fit;

/* The extreme and weights of every lane of f. */
static inline void lanes_q6_start(lanes_q6_fit *f) {
    const lc_lv zero = lv_set1(0.0f);
    lc_lv max = zero, amax = zero;
    for (int i = 0; i < 16; i++) {
        const lc_lv x = lv_load(f->xt + i * LC_LANES), ax = lv_abs(x);
        const lc_lm m = lv_gt(ax, amax);
        amax = lv_sel(m, ax, amax);
        max = lv_sel(m, x, max);
        const lc_lv w = lv_mul(x, x);
        lv_store(f->wt + i * LC_LANES, w);
        lv_store(f->wxt + i * LC_LANES, lv_mul(w, x));
    }
    f->max = max, f->amax = amax;
    f->tiny = lv_lt(amax, lv_set1(LC_LANES_EPS));
    f->lo = lv_neg(amax);      /* every element lies in [-amax, amax]: lanes_mode's bounds */
}

/* Element i of one candidate's two sums (w*x*l is (w*x)*l, w*l*l is (w*l)*l). */
LANES_INLINE void lanes_q6_sum_step(const lanes_q6_fit *f, int i, int mode, lc_lv iscale,
                                    lc_lv *s_lx, lc_lv *s_l2) {
    const lc_lv l = lanes_level(lv_mul(iscale, lv_load(f->xt + i * LC_LANES)), -32, 31, mode);
    *s_lx = lv_add(*s_lx, lv_mul(lv_load(f->wxt + i * LC_LANES), l));
    *s_l2 = lv_add(*s_l2, lv_mul(lv_mul(lv_load(f->wt + i * LC_LANES), l), l));
}

/* One candidate's sums on both fits: s[0], s[1] for a (sumlx, suml2), s[2], s[3] for b. */
LANES_INLINE void lanes_q6_sums(const lanes_q6_fit *a, lc_lv ia, const lanes_q6_fit *b,
                                lc_lv ib, int mode, lc_lv *s) {
    const lc_lv zero = lv_set1(0.0f);
    lc_lv alx = zero, al2 = zero, blx = zero, bl2 = zero;
    for (int i = 0; i < 16; i++) {
        lanes_q6_sum_step(a, i, mode, ia, &alx, &al2);
        lanes_q6_sum_step(b, i, mode, ib, &blx, &bl2);
    }
    s[0] = alx, s[1] = al2, s[2] = blx, s[3] = bl2;
}

/* The lanes_level mode for both fits' candidates: the more general of the two. */
static inline int lanes_q6_mode(const lanes_q6_fit *a, lc_lv ia, const lanes_q6_fit *b,
                                lc_lv ib) {
    const lc_lv zero = lv_set1(0.0f);
    const int ma = lanes_mode(ia, a->lo, a->amax, zero, a->tiny, -32, 31);
    const int mb = lanes_mode(ib, b->lo, b->amax, zero, b->tiny, -32, 31);
    return ma == LANES_EXACT || mb == LANES_EXACT ? LANES_EXACT : ma | mb;
}

/* The whole search on fits a and b: a->scale and b->scale get the scales (0 for an
 * all-zero lane), best_iscale the inverse scale of each lane's best fit. */
LANES_INLINE void lanes_fit_q6_K(lanes_q6_fit *a, lanes_q6_fit *b) {
    enum { NMAX = 32 };
    const lc_lv zero = lv_set1(0.0f);
    lanes_q6_fit *const f[2] = { a, b };
    lanes_q6_start(a);
    lanes_q6_start(b);
    lc_lv ia = lv_div(lv_set1((float)-NMAX), a->max), ib = lv_div(lv_set1((float)-NMAX), b->max);
    lc_lv s[4];
#define SUMS(m) lanes_q6_sums(a, ia, b, ib, m, s)
    LANES_BY_MODE(lanes_q6_mode(a, ia, b, ib), SUMS);
    for (int k = 0; k < 2; k++) {
        const lc_lv sumlx = s[2 * k], suml2 = s[2 * k + 1];
        f[k]->scale = lv_sel(lv_ne(suml2, zero), lv_div(sumlx, suml2), zero);
        f[k]->best = lv_mul(f[k]->scale, sumlx);
        f[k]->best_iscale = k ? ib : ia;
    }
    for (int is = -9; is <= 9; is++) {
        if (is == 0)
            continue;
        const lc_lv num = lv_set1(-((float)NMAX + 0.1f * (float)is));
        ia = lv_div(num, a->max), ib = lv_div(num, b->max);
        LANES_BY_MODE(lanes_q6_mode(a, ia, b, ib), SUMS);
        for (int k = 0; k < 2; k++) {
            const lc_lv sumlx = s[2 * k], suml2 = s[2 * k + 1];
            const lc_lm better = lm_and(lv_gt(suml2, zero),
                                        lv_gt(lv_mul(sumlx, sumlx), lv_mul(f[k]->best, suml2)));
            f[k]->best_iscale = lv_sel(better, k ? ib : ia, f[k]->best_iscale);
            f[k]->scale = lv_sel(better, lv_div(sumlx, suml2), f[k]->scale);
            f[k]->best = lv_sel(better, lv_mul(f[k]->scale, sumlx), f[k]->best);
        }
    }
#undef SUMS
    for (int k = 0; k < 2; k++)
        f[k]->scale = lv_sel(f[k]->tiny, zero, f[k]->scale);
}

/* The levels + 32 of f's best fit for element i (0 for an all-zero lane). Only a lane
 * whose stored scale comes out 0 keeps them, so the caller asks only when one does. */
static inline lc_li lanes_q6_level(const lanes_q6_fit *f, int i) {
    const lc_lv x = lv_load(f->xt + i * LC_LANES);
    const lc_li l =
        li_add(li_clamp(lv_nearest(lv_mul(f->best_iscale, x)), -32, 31), li_set1(32));
    return li_sel(f->tiny, li_set1(0), l);
}

/* One super-block's scalar middle, copied from lc_q6_K_quantize_ref: the sixteen fitted
 * scales become d and the int8 scales, and d_l[s] the effective scale of sub-block s.
 * False for a block the reference writes as all zero bytes (it writes them here). */
static inline bool lanes_q6_K_scales(const float *scales, lc_block_q6_K *y, float *d_l) {
    float max_scale = 0, max_abs_scale = 0;
    for (int s = 0; s < 16; s++) {
        const float abs_scale = fabsf(scales[s]);
        if (abs_scale > max_abs_scale) {
            max_abs_scale = abs_scale;
            max_scale = scales[s];
        }
    }
    if (max_abs_scale < LC_LANES_EPS) {
        memset(y, 0, sizeof *y);
        for (int s = 0; s < 16; s++)
            d_l[s] = 0.0f;
        return false;
    }
    const float iscale = -128.f / max_scale;
    y->d = lc_q_scale_f16(1 / iscale);
    for (int s = 0; s < 16; s++) {
        const int v = lc_q_nearest_int(iscale * scales[s]);
        y->scales[s] = (int8_t)(v < 127 ? v : 127);   /* ggml: MIN(127, v) into int8 */
    }
    const float d = lc_q_f16_to_f32(y->d);
    for (int s = 0; s < 16; s++)
        d_l[s] = d * y->scales[s];
    return true;
}

/* One group of Q6_K from a finished fit (levels in lev): its LANES_Q6K_SB blocks'
 * scales, and the levels re-quantized against the scales as stored (a zero stored scale
 * keeps the fit), packed. */
static inline void lanes_q6_K_finish(const lanes_q6_fit *f, lc_block_q6_K *y) {
    LC_LANES_ALIGN float scales[LC_LANES], d_l[LC_LANES];
    LC_LANES_ALIGN int32_t lev[16 * LC_LANES];
    uint8_t L[LC_LANES * 16];
    bool nonzero[LANES_Q6K_SB];
    lv_store(scales, f->scale);
    for (int g = 0; g < LANES_Q6K_SB; g++)
        nonzero[g] = lanes_q6_K_scales(scales + 16 * g, &y[g], d_l + 16 * g);
    const lc_lv d = lv_load(d_l);
    const lc_lm keep = lv_eq(d, lv_set1(0.0f));
    const bool any_keep = lm_any(keep);
    for (int i = 0; i < 16; i++) {
        const lc_lv v = lv_load(f->xt + i * LC_LANES);
        lc_li l = li_add(li_clamp(lv_nearest(lv_div(v, d)), -32, 31), li_set1(32));
        if (any_keep)
            l = li_sel(keep, lanes_q6_level(f, i), l);
        li_store(lev + i * LC_LANES, l);
    }
    li_transpose_out_u8(lev, 16, L);
    for (int g = 0; g < LANES_Q6K_SB; g++) {
        if (!nonzero[g])
            continue;
        const uint8_t *Lg = L + 256 * g;
        lc_block_q6_K *blk = &y[g];
        /* Levels are 0..63, so byte arithmetic is exact; indexing one block by constant
         * offsets lets the compiler see the stores apart (and vectorise). */
        for (int h = 0; h < 2; h++) {
            for (int l = 0; l < 32; l++) {
                const uint8_t q1 = Lg[128 * h + l], q2 = Lg[128 * h + l + 32],
                              q3 = Lg[128 * h + l + 64], q4 = Lg[128 * h + l + 96];
                blk->ql[64 * h + l] = (uint8_t)((q1 & 0x0f) | (uint8_t)(q3 << 4));
                blk->ql[64 * h + l + 32] = (uint8_t)((q2 & 0x0f) | (uint8_t)(q4 << 4));
                blk->qh[32 * h + l] = (uint8_t)((q1 >> 4) | (uint8_t)((q2 >> 4) << 2) |
                                                (uint8_t)((q3 >> 4) << 4) |
                                                (uint8_t)((q4 >> 4) << 6));
            }
        }
    }
}

enum { LANES_Q6K_PAIR = 2 * LANES_Q6K_SB };   /* super-blocks per pair of groups */

/* LANES_Q6K_PAIR whole super-blocks from x into y, two groups; false, with nothing
 * written, when x holds a NaN. */
static inline bool lanes_q6_K_group(const float *x, lc_block_q6_K *y) {
    LC_LANES_ALIGN float xt[2][16 * LC_LANES], wt[2][16 * LC_LANES], wxt[2][16 * LC_LANES];
    for (int h = 0; h < 2; h++) {
        lv_transpose_in(x + (size_t)h * LANES_Q6K_SB * LC_QK_K, 16, xt[h]);
        if (lanes_any_nan(xt[h], 16 * LC_LANES))
            return false;
    }
    lanes_q6_fit a = { .xt = xt[0], .wt = wt[0], .wxt = wxt[0] };
    lanes_q6_fit b = { .xt = xt[1], .wt = wt[1], .wxt = wxt[1] };
    lanes_fit_q6_K(&a, &b);
    lanes_q6_K_finish(&a, y);
    lanes_q6_K_finish(&b, y + LANES_Q6K_SB);
    return true;
}

static inline void lanes_q6_K_quantize(const float *restrict x, void *restrict vy, size_t n) {
    LANES_ROW_LOOP(lc_block_q6_K, LANES_Q6K_PAIR, lanes_q6_K_group, lc_q6_K_quantize_ref);
}

#endif
