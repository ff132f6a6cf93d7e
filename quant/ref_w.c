/* quant/ref_w.c: the row entries of the types that also have a block reference
 * (quant/types.h LC_QUANT_TYPES), i.e. what ggml_quantize_chunk runs for them:
 * without an importance matrix the block reference over all the rows (ref.c, ref_k.c);
 * with one, ggml's quantize_row_<type>_impl row by row, whose searches weigh each
 * element's error by imatrix[column] * sqrt(sigma2 + x^2). Bit-identical to ggml: every
 * constant, comparison and the order of each float operation below is ggml's, built
 * with -ffp-contract=off. Block layouts are in ref.c and ref_k.c.
 *
 * sigma2 is the mean square over the whole row for Q4_0, Q4_1, Q5_0 and Q5_1 (so their
 * blocks depend on the row: lc_quant_imatrix_whole_rows), over the super-block for the
 * K types (twice that for Q3_K, Q4_K, Q5_K); Q6_K weighs by the imatrix alone.
 * Where ggml stores an int in a narrower integer we keep the low byte, as gcc does. */
#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "libconvert/bytes.h"
#include "libconvert/dtype.h"
#include "quant/blocks.h"
#include "quant/iq_grid_impl.h"
#include "quant/quant.h"
#include "quant/quant_impl.h"
#include "quant/ref_impl.h"

#define GROUP_MAX_EPS 1e-15f

static inline int clampi(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }
#define nearest_int lc_q_nearest_int

/* ---- the weighted searches ---- */

/* ggml's make_qx_quants with rmse_type 1 and weights qw: levels -nmax..nmax-1 from the
 * signed extreme, then 18 more inverse scales -(nmax + 0.1*is)/max, keeping the largest
 * sumlx^2/suml2. L gets levels + nmax; returns the scale (0 for an all-zero group). */
static float fit_sym_w(const lc_w_tries *tries, int n, int nmax, const float *x, int8_t *L,
                       const float *qw) {
    float max = 0, amax = 0;
    for (int i = 0; i < n; i++) {
        const float ax = fabsf(x[i]);
        if (ax > amax) {
            amax = ax;
            max = x[i];
        }
    }
    if (amax < GROUP_MAX_EPS) {
        memset(L, 0, (size_t)n);
        return 0.f;
    }
    float iscale = -nmax / max;
    float sumlx = 0, suml2 = 0;
    for (int i = 0; i < n; i++) {
        const int l = clampi(nearest_int(iscale * x[i]), -nmax, nmax - 1);
        L[i] = (int8_t)(l + nmax);
        const float w = qw[i];
        sumlx += w * x[i] * l;
        suml2 += w * l * l;
    }
    float scale = suml2 != 0.0f ? sumlx / suml2 : 0.0f;
    float best = scale * sumlx;
    float try_lx[LC_W_SYM_NTRY], try_l2[LC_W_SYM_NTRY];
    tries->sym(n, nmax, x, qw, max, try_lx, try_l2);
    int last = 0;                       /* the last try taken (is), 0: none */
    for (int t = 0; t < LC_W_SYM_NTRY; t++) {
        if (try_l2[t] > 0 && try_lx[t] * try_lx[t] > best * try_l2[t]) {
            scale = try_lx[t] / try_l2[t];
            best = scale * try_lx[t];
            last = t < 9 ? t - 9 : t - 8;
        }
    }
    if (last != 0) {                    /* its levels, as the reference took them */
        iscale = -(nmax + 0.1f * last) / max;
        for (int i = 0; i < n; i++)
            L[i] = (int8_t)(nmax + clampi(nearest_int(iscale * x[i]), -nmax, nmax - 1));
    }
    return scale;
}

static void sym_tries_ref(int n, int nmax, const float *x, const float *qw, float max,
                          float *try_lx, float *try_l2) {
    for (int t = 0; t < LC_W_SYM_NTRY; t++) {
        const int is = t < 9 ? t - 9 : t - 8;
        const float iscale = -(nmax + 0.1f * is) / max;
        float sumlx = 0, suml2 = 0;
        for (int i = 0; i < n; i++) {
            const int l = clampi(nearest_int(iscale * x[i]), -nmax, nmax - 1);
            const float w = qw[i];
            sumlx += w * x[i] * l;
            suml2 += w * l * l;
        }
        try_lx[t] = sumlx;
        try_l2[t] = suml2;
    }
}

/* ggml's make_qkx3_quants with weights, rmin -0.9, rdelta 0.05, 37 steps, squared error
 * (the only way the imatrix paths call it): x ~= scale*L - the_min, levels 0..nmax
 * (n <= 32). Unlike make_qkx2 (ref_k.c) a group with max <= min is "flat". */
static float fit_min_w(const lc_w_tries *tries, int n, int nmax, const float *x,
                       const float *w, uint8_t *L, float *the_min) {
    const float rmin = -0.9f, rdelta = 0.05f;
    const int nstep = 36;
    float min = x[0], max = x[0];
    float sum_w = w[0];
    float sum_x = sum_w * x[0];
    for (int i = 1; i < n; i++) {
        if (x[i] < min) min = x[i];
        if (x[i] > max) max = x[i];
        sum_w += w[i];
        sum_x += w[i] * x[i];
    }
    if (min > 0)
        min = 0;
    if (max <= min) {
        memset(L, 0, (size_t)n);
        *the_min = -min;
        return 0.f;
    }
    float iscale = nmax / (max - min);
    float scale = 1 / iscale;
    float best_mad = 0;
    for (int i = 0; i < n; i++) {
        L[i] = (uint8_t)clampi(nearest_int(iscale * (x[i] - min)), 0, nmax);
        const float diff = scale * L[i] + min - x[i];
        best_mad += w[i] * (diff * diff);
    }
    /* The tries in batches at the current min; a taken try changes min, which every
     * later try's levels depend on, so the batch restarts after it. */
    float taken_iscale = 0, taken_min = 0;
    bool taken = false;
    for (int is = 0; is <= nstep;) {
        float D[LC_W_BATCH], ts[LC_W_BATCH], tm[LC_W_BATCH], mad[LC_W_BATCH];
        const int count = nstep + 1 - is < tries->batch ? nstep + 1 - is : tries->batch;
        tries->min(n, nmax, x, w, min, max, sum_w, sum_x, is, count, D, ts, tm, mad);
        int next = is + count;
        for (int k = 0; k < count; k++) {
            if (D[k] > 0 && mad[k] < best_mad) {
                taken_iscale = (rmin + rdelta * (is + k) + nmax) / (max - min);
                taken_min = min;
                taken = true;
                best_mad = mad[k];
                scale = ts[k];
                min = tm[k];
                next = is + k + 1;
                break;
            }
        }
        is = next;
    }
    if (taken)                          /* the levels of the last try taken */
        for (int i = 0; i < n; i++)
            L[i] = (uint8_t)clampi(nearest_int(taken_iscale * (x[i] - taken_min)), 0, nmax);
    *the_min = -min;
    return scale;
}

static void min_tries_ref(int n, int nmax, const float *x, const float *w, float min,
                          float max, float sum_w, float sum_x, int is0, int count, float *D,
                          float *ts, float *tm, float *mad) {
    const float rmin = -0.9f, rdelta = 0.05f;
    for (int k = 0; k < count; k++) {
        const float iscale = (rmin + rdelta * (is0 + k) + nmax) / (max - min);
        float sum_l = 0, sum_l2 = 0, sum_xl = 0;
        uint8_t Laux[32];
        for (int i = 0; i < n; i++) {
            const int l = clampi(nearest_int(iscale * (x[i] - min)), 0, nmax);
            Laux[i] = (uint8_t)l;
            sum_l += w[i] * l;
            sum_l2 += w[i] * l * l;
            sum_xl += w[i] * l * x[i];
        }
        D[k] = sum_w * sum_l2 - sum_l * sum_l;
        if (D[k] > 0) {
            float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D[k];
            float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D[k];
            if (this_min > 0) {
                this_min = 0;
                this_scale = sum_xl / sum_l2;
            }
            float m = 0;
            for (int i = 0; i < n; i++) {
                const float diff = this_scale * Laux[i] + this_min - x[i];
                m += w[i] * (diff * diff);
            }
            ts[k] = this_scale;
            tm[k] = this_min;
            mad[k] = m;
        } else {
            ts[k] = tm[k] = mad[k] = 0;
        }
    }
}

const lc_w_tries lc_w_tries_ref = { 1, min_tries_ref, sym_tries_ref };

/* ggml's make_qp_quants: non-negative x (the sub-block scales or mins of a K block) ~=
 * scale * L, L in 0..nmax, weighted by qw: 8 perturbed inverse scales, then up to 5
 * passes moving one level at a time. Levels go through a uint8_t as in ggml (there is
 * no lower clamp: a negative level wraps). */
float lc_q_fit_scales_w(int n, int nmax, const float *x, uint8_t *L, const float *qw) {
    float max = 0;
    for (int i = 0; i < n; i++)
        max = max > x[i] ? max : x[i];          /* ggml's MAX(max, x[i]) */
    if (max < GROUP_MAX_EPS) {
        memset(L, 0, (size_t)n);
        return 0.f;
    }
    float iscale = nmax / max;
    for (int i = 0; i < n; i++)
        L[i] = (uint8_t)nearest_int(iscale * x[i]);
    const float scale = 1 / iscale;
    float best_mse = 0;
    for (int i = 0; i < n; i++) {
        const float diff = x[i] - scale * L[i];
        best_mse += qw[i] * diff * diff;
    }
    for (int is = -4; is <= 4; is++) {
        if (is == 0)
            continue;
        const float iscale_is = (0.1f * is + nmax) / max;
        const float scale_is = 1 / iscale_is;
        float mse = 0;
        for (int i = 0; i < n; i++) {
            int l = nearest_int(iscale_is * x[i]);
            l = l < nmax ? l : nmax;
            const float diff = x[i] - scale_is * l;
            mse += qw[i] * diff * diff;
        }
        if (mse < best_mse) {
            best_mse = mse;
            iscale = iscale_is;
        }
    }
    float sumlx = 0, suml2 = 0;
    for (int i = 0; i < n; i++) {
        int l = nearest_int(iscale * x[i]);
        l = l < nmax ? l : nmax;
        L[i] = (uint8_t)l;
        sumlx += qw[i] * x[i] * l;              /* the int, not its stored byte */
        suml2 += qw[i] * l * l;
    }
    for (int itry = 0; itry < 5; itry++) {
        int n_changed = 0;
        for (int i = 0; i < n; i++) {
            const float w = qw[i];
            float slx = sumlx - w * x[i] * L[i];
            float sl2 = suml2 - w * L[i] * L[i];
            if (slx > 0 && sl2 > 0) {
                int new_l = nearest_int(x[i] * sl2 / slx);
                new_l = new_l < nmax ? new_l : nmax;
                if (new_l != L[i]) {
                    slx += w * x[i] * new_l;
                    sl2 += w * new_l * new_l;
                    if (slx * slx * suml2 > sumlx * sumlx * sl2) {
                        L[i] = (uint8_t)new_l;
                        sumlx = slx;
                        suml2 = sl2;
                        n_changed++;
                    }
                }
            }
        }
        if (!n_changed)
            break;
    }
    return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

/* The mean square of a row, ggml's sum_x2/n (summed in order). */
static float row_sigma2(const float *x, size_t n) {
    float sum_x2 = 0;
    for (size_t j = 0; j < n; j++)
        sum_x2 += x[j] * x[j];
    return sum_x2 / (float)n;
}

/* weight[j] = qw[j] * sqrt(sigma2 + x[j]^2), the weights of every impl but Q6_K's. */
static void weigh(const float *x, const float *qw, float sigma2, int n, float *weight) {
    for (int j = 0; j < n; j++)
        weight[j] = qw[j] * sqrtf(sigma2 + x[j] * x[j]);
}

/* ---- Q4_0, Q4_1, Q5_0, Q5_1 ---- */

static void q4_0_row(const lc_w_tries *tries, const float *x, lc_block_q4_0 *y, size_t n, const float *qw) {
    const float sigma2 = row_sigma2(x, n);
    for (size_t b = 0; b < n / LC_QK4_0; b++, x += LC_QK4_0, qw += LC_QK4_0) {
        float weight[LC_QK4_0];
        int8_t L[LC_QK4_0];
        weigh(x, qw, sigma2, LC_QK4_0, weight);
        y[b].d = lc_q_scale_f16(fit_sym_w(tries, LC_QK4_0, 8, x, L, weight));
        for (int j = 0; j < 16; j++)
            y[b].qs[j] = (uint8_t)(L[j] | L[j + 16] << 4);
    }
}

static void q5_0_row(const lc_w_tries *tries, const float *x, lc_block_q5_0 *y, size_t n, const float *qw) {
    const float sigma2 = row_sigma2(x, n);
    for (size_t b = 0; b < n / LC_QK5_0; b++, x += LC_QK5_0, qw += LC_QK5_0) {
        float weight[LC_QK5_0];
        int8_t L[LC_QK5_0];
        weigh(x, qw, sigma2, LC_QK5_0, weight);
        y[b].d = lc_q_scale_f16(fit_sym_w(tries, LC_QK5_0, 16, x, L, weight));
        uint32_t qh = 0;
        for (int j = 0; j < 16; j++) {
            const uint8_t u0 = (uint8_t)L[j], u1 = (uint8_t)L[j + 16];
            y[b].qs[j] = (uint8_t)((u0 & 0x0f) | (u1 & 0x0f) << 4);
            qh |= (uint32_t)((u0 & 0x10u) >> 4) << j;
            qh |= (uint32_t)((u1 & 0x10u) >> 4) << (j + 16);
        }
        lc_store_le32(y[b].qh, qh);
    }
}

static void q4_1_row(const lc_w_tries *tries, const float *x, lc_block_q4_1 *y, size_t n, const float *qw) {
    const float sigma2 = row_sigma2(x, n);
    for (size_t b = 0; b < n / LC_QK4_1; b++, x += LC_QK4_1, qw += LC_QK4_1) {
        float weight[LC_QK4_1], min;
        uint8_t L[LC_QK4_1];
        weigh(x, qw, sigma2, LC_QK4_1, weight);
        const float d = fit_min_w(tries, LC_QK4_1, 15, x, weight, L, &min);
        y[b].d = lc_q_scale_f16(d);
        y[b].m = lc_q_scale_f16(-min);
        for (int j = 0; j < 16; j++)
            y[b].qs[j] = (uint8_t)(L[j] | L[j + 16] << 4);
    }
}

static void q5_1_row(const lc_w_tries *tries, const float *x, lc_block_q5_1 *y, size_t n, const float *qw) {
    const float sigma2 = row_sigma2(x, n);
    for (size_t b = 0; b < n / LC_QK5_1; b++, x += LC_QK5_1, qw += LC_QK5_1) {
        float weight[LC_QK5_1], min;
        uint8_t L[LC_QK5_1];
        weigh(x, qw, sigma2, LC_QK5_1, weight);
        const float d = fit_min_w(tries, LC_QK5_1, 31, x, weight, L, &min);
        y[b].d = lc_q_scale_f16(d);
        y[b].m = lc_q_scale_f16(-min);
        uint32_t qh = 0;
        for (int j = 0; j < 16; j++) {
            const uint8_t u0 = L[j], u1 = L[j + 16];
            y[b].qs[j] = (uint8_t)((u0 & 0x0f) | (u1 & 0x0f) << 4);
            qh |= (uint32_t)((u0 & 0x10u) >> 4) << j;
            qh |= (uint32_t)((u1 & 0x10u) >> 4) << (j + 16);
        }
        lc_store_le32(y[b].qh, qh);
    }
}

/* ---- the K types ---- */

/* The sum of a super-block's squares, in order. */
static float sum_sq(const float *x) {
    float s = 0;
    for (int j = 0; j < LC_QK_K; j++)
        s += x[j] * x[j];
    return s;
}

static void pack_2bit(const uint8_t *L, uint8_t *qs) {
    for (int j = 0; j < LC_QK_K; j += 128, qs += 32)
        for (int l = 0; l < 32; l++)
            qs[l] = (uint8_t)(L[j + l] | L[j + l + 32] << 2 | L[j + l + 64] << 4 |
                              L[j + l + 96] << 6);
}

static void q2_K_row(const lc_w_tries *tries, const float *x, lc_block_q2_K *y, size_t n, const float *qw) {
    for (size_t b = 0; b < n / LC_QK_K; b++, x += LC_QK_K, qw += LC_QK_K) {
        uint8_t L[LC_QK_K], Ls[16], Lm[16];
        float mins[16], scales[16], sw[16], weight[16];
        const float sigma2 = sum_sq(x) / LC_QK_K;
        for (int j = 0; j < 16; j++) {
            weigh(x + 16 * j, qw + 16 * j, sigma2, 16, weight);
            sw[j] = 0;
            for (int l = 0; l < 16; l++)
                sw[j] += weight[l];
            scales[j] = fit_min_w(tries, 16, 3, x + 16 * j, weight, L + 16 * j, &mins[j]);
        }
        const float dm0 = lc_q_fit_scales_w(16, 15, scales, Ls, sw);
        const float mm0 = lc_q_fit_scales_w(16, 15, mins, Lm, sw);
        y[b].d = lc_q_scale_f16(dm0);
        y[b].dmin = lc_q_scale_f16(mm0);
        const float dm = lc_q_f16_to_f32(y[b].d), mm = lc_q_f16_to_f32(y[b].dmin);
        for (int j = 0; j < 16; j++)
            y[b].scales[j] = (uint8_t)(Ls[j] | Lm[j] << 4);
        for (int j = 0; j < 16; j++) {
            const float d = dm * (y[b].scales[j] & 0xf);
            if (d == 0.0f)
                continue;
            const float m = mm * (y[b].scales[j] >> 4);
            for (int i = 0; i < 16; i++)
                L[16 * j + i] = (uint8_t)clampi(nearest_int((x[16 * j + i] + m) / d), 0, 3);
        }
        pack_2bit(L, y[b].qs);
    }
}

static void q3_K_row(const lc_w_tries *tries, const float *x, lc_block_q3_K *y, size_t n, const float *qw) {
    for (size_t b = 0; b < n / LC_QK_K; b++, x += LC_QK_K, qw += LC_QK_K) {
        int8_t L[LC_QK_K], Ls[16];
        float scales[16], weight[16], sw[16];
        const float sigma2 = 2 * sum_sq(x) / LC_QK_K;
        for (int j = 0; j < 16; j++) {
            weigh(x + 16 * j, qw + 16 * j, sigma2, 16, weight);
            float sumw = 0;
            for (int l = 0; l < 16; l++)
                sumw += weight[l];
            sw[j] = sumw;
            scales[j] = fit_sym_w(tries, 16, 4, x + 16 * j, L + 16 * j, weight);
        }
        memset(y[b].scales, 0, sizeof y[b].scales);
        const float d_block = fit_sym_w(tries, 16, 32, scales, Ls, sw);
        for (int j = 0; j < 16; j++) {
            const int l = Ls[j];
            if (j < 8)
                y[b].scales[j] = (uint8_t)(l & 0xf);
            else
                y[b].scales[j - 8] |= (uint8_t)((l & 0xf) << 4);
            y[b].scales[j % 4 + 8] |= (uint8_t)((l >> 4) << (2 * (j / 4)));
        }
        y[b].d = lc_q_scale_f16(d_block);
        for (int j = 0; j < 16; j++) {
            const int lo = j < 8 ? y[b].scales[j] & 0xf : y[b].scales[j - 8] >> 4;
            const int sc = (lo | ((y[b].scales[8 + j % 4] >> (2 * (j / 4))) & 3) << 4) - 32;
            const float d = lc_q_f16_to_f32(y[b].d) * sc;
            if (d == 0.0f)
                continue;
            for (int i = 0; i < 16; i++)
                L[16 * j + i] = (int8_t)(clampi(nearest_int(x[16 * j + i] / d), -4, 3) + 4);
        }
        memset(y[b].hmask, 0, sizeof y[b].hmask);
        uint8_t low[LC_QK_K];
        for (int j = 0; j < LC_QK_K; j++) {
            int l = L[j];
            if (l > 3) {
                y[b].hmask[j % 32] |= (uint8_t)(1u << (j / 32));
                l -= 4;
            }
            low[j] = (uint8_t)l;
        }
        pack_2bit(low, y[b].qs);
    }
}

/* Sub-block j's 6-bit scale and min from Q4_K's packed 12 bytes. */
static inline void scale_min_k4(int j, const uint8_t *q, uint8_t *sc, uint8_t *mn) {
    if (j < 4) {
        *sc = q[j] & 63;
        *mn = q[j + 4] & 63;
    } else {
        *sc = (uint8_t)((q[j + 4] & 0x0f) | (q[j - 4] >> 6) << 4);
        *mn = (uint8_t)((q[j + 4] >> 4) | (q[j] >> 6) << 4);
    }
}

/* Q4_K's and Q5_K's impl up to the levels (nmax 15 or 31; Q5_K clamps the packed
 * scales to 63, Q4_K does not). */
static void k4_scales_w(const lc_w_tries *tries, const float *x, const float *qw, int nmax, bool clamp63,
                        uint16_t *dd, uint16_t *dmin, uint8_t *packed, uint8_t *L) {
    uint8_t Ls[8], Lm[8];
    float weights[32], sw[8], mins[8], scales[8];
    const float sigma2 = 2 * sum_sq(x) / LC_QK_K;
    for (int j = 0; j < 8; j++) {
        weigh(x + 32 * j, qw + 32 * j, sigma2, 32, weights);
        float sumw = 0;
        for (int l = 0; l < 32; l++)
            sumw += weights[l];
        sw[j] = sumw;
        scales[j] = fit_min_w(tries, 32, nmax, x + 32 * j, weights, L + 32 * j, &mins[j]);
    }
    const float d_block = lc_q_fit_scales_w(8, 63, scales, Ls, sw);
    const float m_block = lc_q_fit_scales_w(8, 63, mins, Lm, sw);
    for (int j = 0; j < 8; j++) {
        uint8_t ls = Ls[j], lm = Lm[j];
        if (clamp63) {
            ls = ls < 63 ? ls : 63;
            lm = lm < 63 ? lm : 63;
        }
        if (j < 4) {
            packed[j] = ls;
            packed[j + 4] = lm;
        } else {
            packed[j + 4] = (uint8_t)((ls & 0x0f) | (lm & 0x0f) << 4);
            packed[j - 4] |= (uint8_t)((ls >> 4) << 6);
            packed[j] |= (uint8_t)((lm >> 4) << 6);
        }
    }
    *dd = lc_q_scale_f16(d_block);
    *dmin = lc_q_scale_f16(m_block);
    for (int j = 0; j < 8; j++) {
        uint8_t sc, mn;
        scale_min_k4(j, packed, &sc, &mn);
        const float d = lc_q_f16_to_f32(*dd) * sc;
        if (d == 0.0f)
            continue;
        const float dm = lc_q_f16_to_f32(*dmin) * mn;
        for (int l = 0; l < 32; l++)
            L[32 * j + l] = (uint8_t)clampi(nearest_int((x[32 * j + l] + dm) / d), 0, nmax);
    }
}

static void q4_K_row(const lc_w_tries *tries, const float *x, lc_block_q4_K *y, size_t n, const float *qw) {
    for (size_t b = 0; b < n / LC_QK_K; b++, x += LC_QK_K, qw += LC_QK_K) {
        uint8_t L[LC_QK_K];
        k4_scales_w(tries, x, qw, 15, false, &y[b].d, &y[b].dmin, y[b].scales, L);
        uint8_t *q = y[b].qs;
        for (int j = 0; j < LC_QK_K; j += 64, q += 32)
            for (int l = 0; l < 32; l++)
                q[l] = (uint8_t)(L[j + l] | L[j + l + 32] << 4);
    }
}

static void q5_K_row(const lc_w_tries *tries, const float *x, lc_block_q5_K *y, size_t n, const float *qw) {
    for (size_t b = 0; b < n / LC_QK_K; b++, x += LC_QK_K, qw += LC_QK_K) {
        uint8_t L[LC_QK_K];
        k4_scales_w(tries, x, qw, 31, true, &y[b].d, &y[b].dmin, y[b].scales, L);
        uint8_t *ql = y[b].qs, *qh = y[b].qh;
        memset(qh, 0, sizeof y[b].qh);
        uint8_t m1 = 1, m2 = 2;
        for (int j = 0; j < LC_QK_K; j += 64, ql += 32, m1 <<= 2, m2 <<= 2) {
            for (int l = 0; l < 32; l++) {
                int l1 = L[j + l], l2 = L[j + l + 32];
                if (l1 > 15) {
                    l1 -= 16;
                    qh[l] |= m1;
                }
                if (l2 > 15) {
                    l2 -= 16;
                    qh[l] |= m2;
                }
                ql[l] = (uint8_t)(l1 | l2 << 4);
            }
        }
    }
}

static void q6_K_row(const lc_w_tries *tries, const float *x, lc_block_q6_K *y, size_t n, const float *qw) {
    for (size_t b = 0; b < n / LC_QK_K; b++, x += LC_QK_K, qw += LC_QK_K) {
        int8_t L[LC_QK_K];
        float scales[16];
        float max_scale = 0, max_abs_scale = 0;
        for (int s = 0; s < 16; s++) {
            scales[s] = fit_sym_w(tries, 16, 32, x + 16 * s, L + 16 * s, qw + 16 * s);
            const float abs_scale = fabsf(scales[s]);
            if (abs_scale > max_abs_scale) {
                max_abs_scale = abs_scale;
                max_scale = scales[s];
            }
        }
        if (max_abs_scale < GROUP_MAX_EPS) {
            memset(&y[b], 0, sizeof y[b]);
            continue;
        }
        const float iscale = -128.f / max_scale;
        y[b].d = lc_q_scale_f16(1 / iscale);
        for (int s = 0; s < 16; s++) {
            const int v = nearest_int(iscale * scales[s]);
            y[b].scales[s] = (int8_t)(uint8_t)((unsigned)(v < 127 ? v : 127) & 0xffu);
        }
        for (int s = 0; s < 16; s++) {
            const float d = lc_q_f16_to_f32(y[b].d) * y[b].scales[s];
            if (d == 0.0f)
                continue;
            for (int i = 0; i < 16; i++)
                L[16 * s + i] = (int8_t)(clampi(nearest_int(x[16 * s + i] / d), -32, 31) + 32);
        }
        uint8_t *ql = y[b].ql, *qh = y[b].qh;
        for (int j = 0; j < LC_QK_K; j += 128, ql += 64, qh += 32) {
            for (int l = 0; l < 32; l++) {
                const int q1 = L[j + l], q2 = L[j + l + 32], q3 = L[j + l + 64], q4 = L[j + l + 96];
                ql[l] = (uint8_t)((q1 & 0x0f) | (q3 & 0x0f) << 4);
                ql[l + 32] = (uint8_t)((q2 & 0x0f) | (q4 & 0x0f) << 4);
                qh[l] = (uint8_t)(q1 >> 4 | (q2 >> 4) << 2 | (q3 >> 4) << 4 | (q4 >> 4) << 6);
            }
        }
    }
}

/* ---- the row entries ---- */

void lc_q8_0_quantize_rows_ref(const float *restrict x, void *restrict y, size_t nrows,
                               size_t n_per_row, const float *restrict imatrix) {
    (void)imatrix;                              /* ggml ignores it */
    lc_q8_0_quantize_ref(x, y, nrows * n_per_row);
}

/* No imatrix: the block reference over every row at once (ggml's quantize_<type>);
 * with one, the impl row by row, its tries by `tries` (the reference's, or a vector
 * variant's: quant/<isa>/w_tries.c). */
#define ROWS_WEIGHTED(T, stem)                                                              \
    void lc_##stem##_quantize_rows_with(const lc_w_tries *tries, const float *restrict x,   \
                                        void *restrict y, size_t nrows, size_t n_per_row,   \
                                        const float *restrict imatrix) {                    \
        if (!imatrix) {                                                                     \
            lc_##stem##_quantize_ref(x, y, nrows * n_per_row);                              \
            return;                                                                         \
        }                                                                                   \
        const size_t qk = lc_dtype_get(LC_DT_##T)->block_size;                              \
        lc_block_##stem *out = y;                                                           \
        for (size_t r = 0; r < nrows; r++, x += n_per_row, out += n_per_row / qk)           \
            stem##_row(tries, x, out, n_per_row, imatrix);                                  \
    }                                                                                       \
    void lc_##stem##_quantize_rows_ref(const float *restrict x, void *restrict y,           \
                                       size_t nrows, size_t n_per_row,                      \
                                       const float *restrict imatrix) {                     \
        lc_##stem##_quantize_rows_with(&lc_w_tries_ref, x, y, nrows, n_per_row, imatrix);  \
    }
LC_W_ROWS(ROWS_WEIGHTED)
