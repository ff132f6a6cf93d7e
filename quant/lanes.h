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
 * Q3_K's fit is a different shape (passes until nothing moves, usually one), so its later
 * passes run only the lanes still moving, gathered from a batch of groups (lanes_q3_fit).
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

/* One candidate of make_qkx2_quants: the levels 0..nmax for (iscale, min) into laux and
 * the three weighted sums over the lane's n elements, in the reference's order. */
static inline void lanes_qkx2_sums(const float *xt, const float *wt, float *laux, int n,
                                   int nmax, lc_lv iscale, lc_lv min, int mode, lc_lv *sum_l,
                                   lc_lv *sum_l2, lc_lv *sum_xl) {
    lc_lv s_l = lv_set1(0.0f), s_l2 = s_l, s_xl = s_l;
    for (int i = 0; i < n; i++) {
        const lc_lv x = lv_load(xt + i * LC_LANES), w = lv_load(wt + i * LC_LANES);
        const lc_lv l = lanes_level(lv_mul(iscale, lv_sub(x, min)), 0, nmax, mode);
        lv_store(laux + i * LC_LANES, l);
        const lc_lv wl = lv_mul(w, l);           /* w*l*l is (w*l)*l, w*l*x is (w*l)*x */
        s_l = lv_add(s_l, wl);
        s_l2 = lv_add(s_l2, lv_mul(wl, l));
        s_xl = lv_add(s_xl, lv_mul(wl, x));
    }
    *sum_l = s_l, *sum_l2 = s_l2, *sum_xl = s_xl;
}

/* The weighted error sum of w*e, e = diff^2 or |diff| (use_mad), diff = scale*l + min - x,
 * over the levels in laux (or computed from (iscale, min) when laux is NULL). */
static inline lc_lv lanes_qkx2_error(const float *xt, const float *wt, const float *laux,
                                     int n, int nmax, bool use_mad, lc_lv iscale, lc_lv scale,
                                     lc_lv min, int mode) {
    lc_lv err = lv_set1(0.0f);
    for (int i = 0; i < n; i++) {
        const lc_lv x = lv_load(xt + i * LC_LANES), w = lv_load(wt + i * LC_LANES);
        const lc_lv l = laux ? lv_load(laux + i * LC_LANES)
                             : lanes_level(lv_mul(iscale, lv_sub(x, min)), 0, nmax, mode);
        const lc_lv diff = lv_sub(lv_add(lv_mul(scale, l), min), x);
        err = lv_add(err, lv_mul(w, use_mad ? lv_abs(diff) : lv_mul(diff, diff)));
    }
    return err;
}

/* ggml's make_qkx2_quants(n, nmax, x, w, L, &the_min, Laux, rmin, 0.1, nstep, use_mad)
 * on every lane (quant/ref_k.c fit_scale_min): Q2_K (16, 3, -0.5, 15, mad), Q4_K (32, 15,
 * -1, 20), Q5_K (32, 31, -0.5, 15). xt, wt: n vectors of elements and weights; laux:
 * scratch for n vectors. Writes the levels of each lane's best fit to lev (n vectors of
 * int32) and returns the scale; *the_min gets -min. Called with constant arguments, so
 * that each type gets its own copy.
 *
 * The levels are not copied on every improvement: a lane remembers the inverse scale and
 * the min it was at when it improved, and the levels are recomputed from those once at
 * the end (the same operations on the same values: the same levels). */
static inline lc_lv lanes_fit_qkx2(const float *xt, const float *wt, float *laux,
                                   int32_t *lev, lc_lv *the_min, int n, int nmax, float rmin,
                                   int nstep, bool use_mad) {
    const float rdelta = 0.1f;
    const lc_lv zero = lv_set1(0.0f);
    const lc_lv x0 = lv_load(xt), w0 = lv_load(wt);
    lc_lv min = x0, max = x0, sum_w = w0, sum_x = lv_mul(w0, x0);
    for (int i = 1; i < n; i++) {
        const lc_lv x = lv_load(xt + i * LC_LANES), w = lv_load(wt + i * LC_LANES);
        min = lv_min(x, min);                    /* if (x < min) min = x */
        max = lv_max(x, max);                    /* if (x > max) max = x */
        sum_w = lv_add(sum_w, w);
        sum_x = lv_add(sum_x, lv_mul(w, x));
    }
    const lc_lv lo = min, hi = max;              /* the lane's element range */
    min = lv_sel(lv_gt(min, zero), zero, min);
    /* max == min: the reference returns scale 0, levels 0, -min at once. */
    const lc_lm flat = lv_eq(max, min);
    const lc_lv flat_min = min;
    lc_lv iscale = lv_div(lv_set1((float)nmax), lv_sub(max, min));
    lc_lv scale = lv_div(lv_set1(1.0f), iscale);
    lc_lv best_error;
#define ERROR0(m)                                                                          \
    (best_error = lanes_qkx2_error(xt, wt, NULL, n, nmax, use_mad, iscale, scale, min, m))
    LANES_BY_MODE(lanes_mode(iscale, lo, hi, min, flat, 0, nmax), ERROR0);
#undef ERROR0
    lc_lv best_iscale = iscale, best_lmin = min;
    for (int is = 0; is <= nstep; is++) {
        iscale = lv_div(lv_set1(rmin + rdelta * (float)is + (float)nmax), lv_sub(max, min));
        lc_lv sum_l, sum_l2, sum_xl;
#define SUMS(m) lanes_qkx2_sums(xt, wt, laux, n, nmax, iscale, min, m, &sum_l, &sum_l2, &sum_xl)
        LANES_BY_MODE(lanes_mode(iscale, lo, hi, min, flat, 0, nmax), SUMS);
#undef SUMS
        const lc_lv D = lv_sub(lv_mul(sum_w, sum_l2), lv_mul(sum_l, sum_l));
        const lc_lm pos = lm_andnot(flat, lv_gt(D, zero));
        if (!lm_any(pos))
            continue;
        lc_lv this_scale = lv_div(lv_sub(lv_mul(sum_w, sum_xl), lv_mul(sum_x, sum_l)), D);
        lc_lv this_min = lv_div(lv_sub(lv_mul(sum_l2, sum_x), lv_mul(sum_l, sum_xl)), D);
        const lc_lm above = lv_gt(this_min, zero);
        this_scale = lv_sel(above, lv_div(sum_xl, sum_l2), this_scale);
        this_min = lv_sel(above, zero, this_min);
        const lc_lv cur_error = lanes_qkx2_error(xt, wt, laux, n, nmax, use_mad, iscale,
                                                 this_scale, this_min, LANES_EXACT);
        const lc_lm better = lm_and(pos, lv_lt(cur_error, best_error));
        best_error = lv_sel(better, cur_error, best_error);
        scale = lv_sel(better, this_scale, scale);
        best_iscale = lv_sel(better, iscale, best_iscale);
        best_lmin = lv_sel(better, min, best_lmin);     /* the min these levels used */
        min = lv_sel(better, this_min, min);
    }
    for (int i = 0; i < n; i++) {
        const lc_lv x = lv_load(xt + i * LC_LANES);
        const lc_li l = li_clamp(lv_nearest(lv_mul(best_iscale, lv_sub(x, best_lmin))), 0, nmax);
        li_store(lev + i * LC_LANES, li_sel(flat, li_set1(0), l));
    }
    *the_min = lv_neg(lv_sel(flat, flat_min, min));
    return lv_sel(flat, zero, scale);
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
    for (int j = 0; j < 8; j++) {
        uint8_t ls = (uint8_t)lc_q_nearest_int(inv_scale * scales[j]);  /* the low byte */
        uint8_t lm = (uint8_t)lc_q_nearest_int(inv_min * mins[j]);
        ls = ls > 63 ? 63 : ls;
        lm = lm > 63 ? 63 : lm;
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
    for (int j = 0; j < 8; j++) {
        uint8_t sc, mn;
        lanes_scale_min_k4(j, y.scales, &sc, &mn);
        d_l[j] = lc_q_f16_to_f32(*y.d) * sc;
        dm_l[j] = lc_q_f16_to_f32(*y.dmin) * mn;
    }
}

/* Q4_K and Q5_K (levels 0..nmax, search constants rmin and nstep) for LANES_Q4K_SB whole
 * super-blocks from x: heads[g] gets super-block g's d, dmin and scales, L[256*g ..] its
 * 256 levels in element order. False, with nothing written, when x holds a NaN. */
static inline bool lanes_k4_group(const float *x, int nmax, float rmin, int nstep,
                                  const lanes_k4_head *heads, uint8_t *L) {
    LC_LANES_ALIGN float xt[32 * LC_LANES], wt[32 * LC_LANES], laux[32 * LC_LANES];
    LC_LANES_ALIGN float scales[LC_LANES], mins[LC_LANES], d_l[LC_LANES], dm_l[LC_LANES];
    LC_LANES_ALIGN int32_t lev[32 * LC_LANES];
    lv_transpose_in(x, 32, xt);
    if (lanes_any_nan(xt, 32 * LC_LANES))
        return false;
    /* The weights: av_x = sqrt(sum x^2 / 32), w = av_x + |x|. */
    lc_lv sum_x2 = lv_set1(0.0f);
    for (int i = 0; i < 32; i++) {
        const lc_lv v = lv_load(xt + i * LC_LANES);
        sum_x2 = lv_add(sum_x2, lv_mul(v, v));
    }
    const lc_lv av_x = lv_sqrt(lv_div(sum_x2, lv_set1(32.0f)));
    for (int i = 0; i < 32; i++)
        lv_store(wt + i * LC_LANES, lv_add(av_x, lv_abs(lv_load(xt + i * LC_LANES))));
    lc_lv the_min;
    lv_store(scales, lanes_fit_qkx2(xt, wt, laux, lev, &the_min, 32, nmax, rmin, nstep, false));
    lv_store(mins, the_min);
    for (int g = 0; g < LANES_Q4K_SB; g++)
        lanes_k4_scales(scales + 8 * g, mins + 8 * g, heads[g], d_l + 8 * g, dm_l + 8 * g);
    /* Re-quantize against the scales as stored; where the stored scale is 0 the lane
     * keeps its fitted levels, as in ggml. */
    const lc_lv d = lv_load(d_l), dm = lv_load(dm_l);
    const lc_lm keep = lv_eq(d, lv_set1(0.0f));
    for (int i = 0; i < 32; i++) {
        const lc_lv v = lv_load(xt + i * LC_LANES);
        const lc_li l = li_clamp(lv_nearest(lv_div(lv_add(v, dm), d)), 0, nmax);
        li_store(lev + i * LC_LANES, li_sel(keep, li_load(lev + i * LC_LANES), l));
    }
    li_transpose_out_u8(lev, 32, L);
    return true;
}

/* LANES_Q4K_SB whole super-blocks of Q4_K; false, with nothing written, on a NaN. */
static inline bool lanes_q4_K_group(const float *x, lc_block_q4_K *y) {
    uint8_t L[LC_LANES * 32];
    lanes_k4_head heads[LANES_Q4K_SB];
    for (int g = 0; g < LANES_Q4K_SB; g++)
        heads[g] = (lanes_k4_head){ &y[g].d, &y[g].dmin, y[g].scales };
    if (!lanes_k4_group(x, 15, -1.0f, 20, heads, L))
        return false;
    for (int g = 0; g < LANES_Q4K_SB; g++) {
        const uint8_t *Lg = L + 256 * g;
        lc_block_q4_K *blk = &y[g];
        for (int j = 0; j < 4; j++)              /* element l in the low nibble, l+32 high */
            for (int l = 0; l < 32; l++)
                blk->qs[32 * j + l] = (uint8_t)(Lg[64 * j + l] | Lg[64 * j + l + 32] << 4);
    }
    return true;
}

/* LANES_Q4K_SB whole super-blocks of Q5_K; false, with nothing written, on a NaN. */
static inline bool lanes_q5_K_group(const float *x, lc_block_q5_K *y) {
    uint8_t L[LC_LANES * 32];
    lanes_k4_head heads[LANES_Q4K_SB];
    for (int g = 0; g < LANES_Q4K_SB; g++)
        heads[g] = (lanes_k4_head){ &y[g].d, &y[g].dmin, y[g].scales };
    if (!lanes_k4_group(x, 31, -0.5f, 15, heads, L))
        return false;
    for (int g = 0; g < LANES_Q4K_SB; g++) {
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
    LANES_ROW_LOOP(lc_block_q4_K, LANES_Q4K_SB, lanes_q4_K_group, lc_q4_K_quantize_ref);
}

static inline void lanes_q5_K_quantize(const float *restrict x, void *restrict vy, size_t n) {
    LANES_ROW_LOOP(lc_block_q5_K, LANES_Q4K_SB, lanes_q5_K_group, lc_q5_K_quantize_ref);
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
    for (int j = 0; j < 16; j++) {
        d_l[j] = lc_q_f16_to_f32(y->d) * (y->scales[j] & 0xf);
        dm_l[j] = lc_q_f16_to_f32(y->dmin) * (y->scales[j] >> 4);
    }
}

/* LANES_Q2K_SB whole super-blocks of Q2_K: weights |x|, make_qkx2_quants(16, 3, ...,
 * -0.5, 0.1, 15, mean absolute error) per sub-block; false, with nothing written, when
 * x holds a NaN. */
static inline bool lanes_q2_K_group(const float *x, lc_block_q2_K *y) {
    LC_LANES_ALIGN float xt[16 * LC_LANES], wt[16 * LC_LANES], laux[16 * LC_LANES];
    LC_LANES_ALIGN float scales[LC_LANES], mins[LC_LANES], d_l[LC_LANES], dm_l[LC_LANES];
    LC_LANES_ALIGN int32_t lev[16 * LC_LANES];
    uint8_t L[LC_LANES * 16];
    lv_transpose_in(x, 16, xt);
    if (lanes_any_nan(xt, 16 * LC_LANES))
        return false;
    for (int i = 0; i < 16; i++)
        lv_store(wt + i * LC_LANES, lv_abs(lv_load(xt + i * LC_LANES)));
    lc_lv the_min;
    lv_store(scales, lanes_fit_qkx2(xt, wt, laux, lev, &the_min, 16, 3, -0.5f, 15, true));
    lv_store(mins, the_min);
    for (int g = 0; g < LANES_Q2K_SB; g++)
        lanes_q2_K_scales(scales + 16 * g, mins + 16 * g, &y[g], d_l + 16 * g, dm_l + 16 * g);
    /* Re-quantize against the scales as stored; a zero stored scale keeps the fit. */
    const lc_lv d = lv_load(d_l), dm = lv_load(dm_l);
    const lc_lm keep = lv_eq(d, lv_set1(0.0f));
    for (int i = 0; i < 16; i++) {
        const lc_lv v = lv_load(xt + i * LC_LANES);
        const lc_li l = li_clamp(lv_nearest(lv_div(lv_add(v, dm), d)), 0, 3);
        li_store(lev + i * LC_LANES, li_sel(keep, li_load(lev + i * LC_LANES), l));
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
    return true;
}

static inline void lanes_q2_K_quantize(const float *restrict x, void *restrict vy, size_t n) {
    LANES_ROW_LOOP(lc_block_q2_K, LANES_Q2K_SB, lanes_q2_K_group, lc_q2_K_quantize_ref);
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
 * its first pass in place; then the lanes still moving, from a whole batch of groups,
 * are gathered into fresh groups for each later pass, and their state scattered back.
 * A lane's operations never look at another lane, so where it runs does not change a
 * bit of its result. */
enum { LANES_Q3K_BATCH = 8 };   /* groups whose still-moving lanes share passes 2..5 */

typedef struct {
    LC_LANES_ALIGN float xt[16 * LC_LANES];     /* elements, one vector per index */
    LC_LANES_ALIGN float wt[16 * LC_LANES];     /* w = x*x */
    LC_LANES_ALIGN float wxt[16 * LC_LANES];    /* w*x */
    LC_LANES_ALIGN float lt[16 * LC_LANES];     /* levels -4..3, as floats */
    LC_LANES_ALIGN float sumlx[LC_LANES], suml2[LC_LANES];
    LC_LANES_ALIGN float moving[LC_LANES];      /* 1: the lane's first pass moved a level */
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

/* Passes 2..5 for the lanes of fits[0..nfit) still moving (f->moving), LC_LANES at a
 * time: each round gathers a lane's elements, levels and sums into a pool group (its
 * weights recomputed there by the same two multiplies), runs one pass and scatters the
 * levels and sums back. The list of moving lanes is built without branches: which lanes
 * move is close to random. */
static inline void lanes_q3_later_passes(lanes_q3_fit *fits, int nfit) {
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
    for (int itry = 1; itry < 5 && count > 0; itry++) {
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

/* The fit's result on every lane of f: lev gets the levels + 4 (0 for an all-zero lane),
 * the return value the scale. */
static inline lc_lv lanes_q3_finish(const lanes_q3_fit *f, int32_t *lev) {
    enum { N = 16, NMAX = 4 };
    const lc_lv zero = lv_set1(0.0f);
    for (int i = 0; i < N; i++) {
        const lc_lv l = lv_add(lv_load(f->lt + i * LC_LANES), lv_set1((float)NMAX));
        /* l + 4 is 0..7: the float converts exactly (lanes_level's LANES_ROUND path). */
        li_store(lev + i * LC_LANES,
                 li_sel(f->tiny, li_set1(0), li_clamp(lv_nearest(l), 0, 2 * NMAX - 1)));
    }
    const lc_lv sumlx = lv_load(f->sumlx), suml2 = lv_load(f->suml2);
    return lv_sel(f->tiny, zero, lv_sel(lv_gt(suml2, zero), lv_div(sumlx, suml2), zero));
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
    lv_store(scales, lanes_q3_finish(f, lev));
    for (int g = 0; g < LANES_Q2K_SB; g++)
        lanes_q3_K_scales(scales + 16 * g, &y[g], d_l + 16 * g);
    /* Re-quantize against the scales as stored; a zero stored scale keeps the fit. */
    const lc_lv d = lv_load(d_l);
    const lc_lm keep = lv_eq(d, lv_set1(0.0f));
    for (int i = 0; i < 16; i++) {
        const lc_lv v = lv_load(f->xt + i * LC_LANES);
        const lc_li l = li_add(li_clamp(lv_nearest(lv_div(v, d)), -4, 3), li_set1(4));
        li_store(lev + i * LC_LANES, li_sel(keep, li_load(lev + i * LC_LANES), l));
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
    lc_lm first[LANES_Q3K_BATCH + 1];            /* the lanes of each group's first pass */
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
    for (int g = 0; g < ngroups; g += 4) {       /* the first passes, four groups at a time */
        lc_lm moved[4];
        if (g + 4 <= ngroups) {
            lanes_q3_fit *const quad[4] = { &fits[g], &fits[g + 1], &fits[g + 2], &fits[g + 3] };
            lanes_q3_pass4(quad, &first[g], moved);
        } else {
            for (int k = 0; g + k < ngroups; k++)
                moved[k] = lanes_q3_pass(&fits[g + k], first[g + k]);
        }
        for (int k = 0; k < 4 && g + k < ngroups; k++)
            lv_store(fits[g + k].moving, lv_sel(moved[k], one, zero));
    }
    lanes_q3_later_passes(fits, ngroups);
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

/* One candidate of make_qx_quants: the two sums for iscale, in the reference's order
 * (w = x*x, so w*x*l is (w*x)*l with w*x precomputed in wxt, and w*l*l is (w*l)*l). */
static inline void lanes_q6_K_sums(const float *xt, const float *wt, const float *wxt,
                                   lc_lv iscale, int mode, lc_lv *sumlx, lc_lv *suml2) {
    lc_lv s_lx = lv_set1(0.0f), s_l2 = s_lx;
    for (int i = 0; i < 16; i++) {
        const lc_lv x = lv_load(xt + i * LC_LANES);
        const lc_lv l = lanes_level(lv_mul(iscale, x), -32, 31, mode);
        s_lx = lv_add(s_lx, lv_mul(lv_load(wxt + i * LC_LANES), l));
        s_l2 = lv_add(s_l2, lv_mul(lv_mul(lv_load(wt + i * LC_LANES), l), l));
    }
    *sumlx = s_lx, *suml2 = s_l2;
}

/* ggml's make_qx_quants(16, 32, x, L, 1, NULL) on every lane (quant/ref_k.c
 * fit_scale_sym): the symmetric fit from the signed extreme, then 18 more candidates
 * -(32 + 0.1*is)/max, keeping the largest sumlx^2/suml2. lev gets the levels + 32 of
 * each lane's best fit (0 for an all-zero lane); returns the scale. Levels are
 * recomputed at the end from the best inverse scale, as in lanes_fit_q4_K. */
static inline lc_lv lanes_fit_q6_K(const float *xt, float *wt, float *wxt, int32_t *lev) {
    enum { N = 16, NMAX = 32 };
    const lc_lv zero = lv_set1(0.0f);
    lc_lv max = zero, amax = zero;
    for (int i = 0; i < N; i++) {
        const lc_lv x = lv_load(xt + i * LC_LANES), ax = lv_abs(x);
        const lc_lm m = lv_gt(ax, amax);
        amax = lv_sel(m, ax, amax);
        max = lv_sel(m, x, max);
        const lc_lv w = lv_mul(x, x);
        lv_store(wt + i * LC_LANES, w);
        lv_store(wxt + i * LC_LANES, lv_mul(w, x));
    }
    const lc_lm tiny = lv_lt(amax, lv_set1(LC_LANES_EPS));     /* the reference's all zero */
    /* Every element lies in [-amax, amax]: lanes_mode's bounds, with min = 0 (x - 0 is x). */
    const lc_lv lo = lv_neg(amax);
    lc_lv iscale = lv_div(lv_set1((float)-NMAX), max);
    lc_lv sumlx, suml2;
#define SUMS(m) lanes_q6_K_sums(xt, wt, wxt, iscale, m, &sumlx, &suml2)
    LANES_BY_MODE(lanes_mode(iscale, lo, amax, zero, tiny, -NMAX, NMAX - 1), SUMS);
    lc_lv scale = lv_sel(lv_ne(suml2, zero), lv_div(sumlx, suml2), zero);
    lc_lv best = lv_mul(scale, sumlx);
    lc_lv best_iscale = iscale;
    for (int is = -9; is <= 9; is++) {
        if (is == 0)
            continue;
        iscale = lv_div(lv_set1(-((float)NMAX + 0.1f * (float)is)), max);
        LANES_BY_MODE(lanes_mode(iscale, lo, amax, zero, tiny, -NMAX, NMAX - 1), SUMS);
        const lc_lm better = lm_and(lv_gt(suml2, zero),
                                    lv_gt(lv_mul(sumlx, sumlx), lv_mul(best, suml2)));
        best_iscale = lv_sel(better, iscale, best_iscale);
        scale = lv_sel(better, lv_div(sumlx, suml2), scale);
        best = lv_sel(better, lv_mul(scale, sumlx), best);
    }
#undef SUMS
    for (int i = 0; i < N; i++) {
        const lc_lv x = lv_load(xt + i * LC_LANES);
        const lc_li l = li_add(li_clamp(lv_nearest(lv_mul(best_iscale, x)), -NMAX, NMAX - 1),
                               li_set1(NMAX));
        li_store(lev + i * LC_LANES, li_sel(tiny, li_set1(0), l));
    }
    return lv_sel(tiny, zero, scale);
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
    for (int s = 0; s < 16; s++)
        d_l[s] = lc_q_f16_to_f32(y->d) * y->scales[s];
    return true;
}

/* LANES_Q6K_SB whole super-blocks from x into y; false, with nothing written, when x
 * holds a NaN. */
static inline bool lanes_q6_K_group(const float *x, lc_block_q6_K *y) {
    LC_LANES_ALIGN float xt[16 * LC_LANES], wt[16 * LC_LANES], wxt[16 * LC_LANES];
    LC_LANES_ALIGN float scales[LC_LANES], d_l[LC_LANES];
    LC_LANES_ALIGN int32_t lev[16 * LC_LANES];
    uint8_t L[LC_LANES * 16];
    bool nonzero[LANES_Q6K_SB];
    lv_transpose_in(x, 16, xt);
    if (lanes_any_nan(xt, 16 * LC_LANES))
        return false;
    lv_store(scales, lanes_fit_q6_K(xt, wt, wxt, lev));
    for (int g = 0; g < LANES_Q6K_SB; g++)
        nonzero[g] = lanes_q6_K_scales(scales + 16 * g, &y[g], d_l + 16 * g);
    /* Re-quantize against the scales as stored; a zero stored scale keeps the fit. */
    const lc_lv d = lv_load(d_l);
    const lc_lm keep = lv_eq(d, lv_set1(0.0f));
    for (int i = 0; i < 16; i++) {
        const lc_lv v = lv_load(xt + i * LC_LANES);
        const lc_li l = li_add(li_clamp(lv_nearest(lv_div(v, d)), -32, 31), li_set1(32));
        li_store(lev + i * LC_LANES, li_sel(keep, li_load(lev + i * LC_LANES), l));
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
    return true;
}

static inline void lanes_q6_K_quantize(const float *restrict x, void *restrict vy, size_t n) {
    LANES_ROW_LOOP(lc_block_q6_K, LANES_Q6K_SB, lanes_q6_K_group, lc_q6_K_quantize_ref);
}

#endif
