/* quant/ref_k.c: scalar reference quantizers for the 256-element "K" super-block
 * types Q4_K and Q6_K. Bit-identical to ggml's quantize_row_q4_K_ref and
 * quantize_row_q6_K_ref (what llama-quantize writes without an imatrix), whose
 * scale searches are iterative: every constant, loop bound, comparison and the
 * order of each float operation below is ggml's. Rounding inside the searches is
 * nearest_int (the 1.5*2^23 trick: ties to even), not roundf.
 *
 * Q4_K (144 B): | d:2 | dmin:2 | scales[12] | qs[128] |
 *   8 sub-blocks of 32; x = d*sc[s]*q - dmin*mn[s], q in [0, 15].
 *   scales packs eight 6-bit sc and eight 6-bit mn:
 *     byte 0..3 : sc[0..3] in bits 0-5, bits 4-5 of sc[4..7] in bits 6-7
 *     byte 4..7 : mn[0..3] in bits 0-5, bits 4-5 of mn[4..7] in bits 6-7
 *     byte 8..11: low 4 bits of sc[4..7] | low 4 bits of mn[4..7] << 4
 *   qs: for each 64 elements, 32 bytes: element l in the low nibble of byte l,
 *   element l+32 in the high nibble.
 * Q6_K (210 B): | ql[128] | qh[64] | scales[16]: int8 | d:2 |
 *   16 sub-blocks of 16; x = d*scales[s]*(q - 32), q in [0, 63].
 *   For each 128 elements (ql advances 64, qh 32), l in 0..31:
 *     ql[l]    = lo4(q[l])    | lo4(q[l+64]) << 4
 *     ql[l+32] = lo4(q[l+32]) | lo4(q[l+96]) << 4
 *     qh[l]    = hi2(q[l]) | hi2(q[l+32]) << 2 | hi2(q[l+64]) << 4 | hi2(q[l+96]) << 6 */
#include <math.h>
#include <string.h>

#include "quant/blocks.h"
#include "quant/quant.h"
#include "quant/quant_impl.h"

#define GROUP_MAX_EPS 1e-15f   /* ggml: below this a group is "all zero" */

/* Round to nearest, ties to even, by adding 1.5*2^23 and reading the mantissa.
 * Exact for |v| <= 2^22 (ggml asserts that); defined but meaningless beyond, and
 * NaN gives 0, as in ggml. */
static inline int nearest_int(float v) {
    const float t = v + 12582912.0f;
    int32_t i;
    memcpy(&i, &t, sizeof i);
    return (i & 0x007fffff) - 0x00400000;
}

static inline int clampi(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

/* ---- Q4_K ---- */

/* ggml's make_qkx2_quants for n = 32, nmax = 15, rmin = -1, rdelta = 0.1, nstep = 20,
 * squared error: fits x ~= scale*L - min over weights w, trying 21 candidate inverse
 * scales around nmax/(max - min) and keeping the least weighted error. Returns the
 * scale and stores -min (>= 0) in *the_min; L gets the levels of the best fit. */
static float fit_scale_min(const float *x, const float *w, uint8_t *L, float *the_min) {
    enum { N = 32, NMAX = 15, NSTEP = 20 };
    const float rmin = -1.0f, rdelta = 0.1f;
    uint8_t Laux[N];
    float min = x[0], max = x[0];
    float sum_w = w[0];
    float sum_x = sum_w * x[0];
    for (int i = 1; i < N; i++) {
        if (x[i] < min) min = x[i];
        if (x[i] > max) max = x[i];
        sum_w += w[i];
        sum_x += w[i] * x[i];
    }
    if (min > 0) min = 0;
    if (max == min) {
        memset(L, 0, N);
        *the_min = -min;
        return 0.0f;
    }
    float iscale = NMAX / (max - min);
    float scale = 1 / iscale;
    float best_error = 0;
    for (int i = 0; i < N; i++) {
        L[i] = (uint8_t)clampi(nearest_int(iscale * (x[i] - min)), 0, NMAX);
        const float diff = scale * L[i] + min - x[i];
        best_error += w[i] * (diff * diff);
    }
    for (int is = 0; is <= NSTEP; is++) {
        iscale = (rmin + rdelta * is + NMAX) / (max - min);
        float sum_l = 0, sum_l2 = 0, sum_xl = 0;
        for (int i = 0; i < N; i++) {
            const int l = clampi(nearest_int(iscale * (x[i] - min)), 0, NMAX);
            Laux[i] = (uint8_t)l;
            sum_l += w[i] * l;
            sum_l2 += w[i] * l * l;
            sum_xl += w[i] * l * x[i];
        }
        const float D = sum_w * sum_l2 - sum_l * sum_l;
        if (D > 0) {
            float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
            float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
            if (this_min > 0) {
                this_min = 0;
                this_scale = sum_xl / sum_l2;
            }
            float cur_error = 0;
            for (int i = 0; i < N; i++) {
                const float diff = this_scale * Laux[i] + this_min - x[i];
                cur_error += w[i] * (diff * diff);
            }
            if (cur_error < best_error) {
                memcpy(L, Laux, N);
                best_error = cur_error;
                scale = this_scale;
                min = this_min;
            }
        }
    }
    *the_min = -min;
    return scale;
}

/* Sub-block j's 6-bit scale and min from the packed 12 bytes. */
static inline void scale_min_k4(int j, const uint8_t *q, uint8_t *sc, uint8_t *mn) {
    if (j < 4) {
        *sc = q[j] & 63;
        *mn = q[j + 4] & 63;
    } else {
        *sc = (uint8_t)((q[j + 4] & 0x0f) | (q[j - 4] >> 6) << 4);
        *mn = (uint8_t)((q[j + 4] >> 4) | (q[j] >> 6) << 4);
    }
}

void lc_q4_K_quantize_ref(const float *restrict x, void *restrict vy, size_t n) {
    lc_block_q4_K *y = vy;
    for (size_t b = 0; b < n / LC_QK_K; b++, x += LC_QK_K) {
        uint8_t L[LC_QK_K];
        float weights[32], mins[LC_QK_K / 32], scales[LC_QK_K / 32];
        float max_scale = 0, max_min = 0;
        for (int j = 0; j < LC_QK_K / 32; j++) {
            const float *xs = x + 32 * j;
            float sum_x2 = 0;
            for (int l = 0; l < 32; l++)
                sum_x2 += xs[l] * xs[l];
            const float av_x = sqrtf(sum_x2 / 32);
            for (int l = 0; l < 32; l++)
                weights[l] = av_x + fabsf(xs[l]);
            scales[j] = fit_scale_min(xs, weights, L + 32 * j, &mins[j]);
            if (scales[j] > max_scale) max_scale = scales[j];
            if (mins[j] > max_min) max_min = mins[j];
        }
        const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
        const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
        memset(y[b].scales, 0, sizeof y[b].scales);
        for (int j = 0; j < LC_QK_K / 32; j++) {
            /* ggml stores nearest_int into a uint8_t, then clamps: keep the wrap. */
            uint8_t ls = (uint8_t)nearest_int(inv_scale * scales[j]);
            uint8_t lm = (uint8_t)nearest_int(inv_min * mins[j]);
            ls = ls > 63 ? 63 : ls;
            lm = lm > 63 ? 63 : lm;
            if (j < 4) {
                y[b].scales[j] = ls;
                y[b].scales[j + 4] = lm;
            } else {
                y[b].scales[j + 4] = (uint8_t)((ls & 0x0f) | (lm & 0x0f) << 4);
                y[b].scales[j - 4] |= (uint8_t)((ls >> 4) << 6);
                y[b].scales[j] |= (uint8_t)((lm >> 4) << 6);
            }
        }
        y[b].d = lc_q_scale_f16(max_scale / 63.f);
        y[b].dmin = lc_q_scale_f16(max_min / 63.f);

        /* Re-quantize against the scales as stored; a sub-block whose stored scale
         * is 0 keeps the levels from the fit, as in ggml. */
        for (int j = 0; j < LC_QK_K / 32; j++) {
            uint8_t sc, mn;
            scale_min_k4(j, y[b].scales, &sc, &mn);
            const float d = lc_q_f16_to_f32(y[b].d) * sc;
            if (d == 0.0f)
                continue;
            const float dm = lc_q_f16_to_f32(y[b].dmin) * mn;
            for (int l = 0; l < 32; l++)
                L[32 * j + l] = (uint8_t)clampi(nearest_int((x[32 * j + l] + dm) / d), 0, 15);
        }
        uint8_t *q = y[b].qs;
        for (int j = 0; j < LC_QK_K; j += 64, q += 32)
            for (int l = 0; l < 32; l++)
                q[l] = (uint8_t)(L[j + l] | L[j + l + 32] << 4);
    }
}

void lc_q4_K_dequantize_ref(const void *restrict vx, float *restrict y, size_t n) {
    const lc_block_q4_K *x = vx;
    for (size_t b = 0; b < n / LC_QK_K; b++) {
        const float d = lc_q_f16_to_f32(x[b].d), dmin = lc_q_f16_to_f32(x[b].dmin);
        const uint8_t *q = x[b].qs;
        for (int j = 0, s = 0; j < LC_QK_K; j += 64, s += 2, q += 32) {
            uint8_t sc, mn;
            scale_min_k4(s, x[b].scales, &sc, &mn);
            const float d1 = d * sc, m1 = dmin * mn;
            scale_min_k4(s + 1, x[b].scales, &sc, &mn);
            const float d2 = d * sc, m2 = dmin * mn;
            for (int l = 0; l < 32; l++) *y++ = d1 * (q[l] & 0x0f) - m1;
            for (int l = 0; l < 32; l++) *y++ = d2 * (q[l] >> 4) - m2;
        }
    }
}

/* ---- Q6_K ---- */

/* ggml's make_qx_quants for n = 16, nmax = 32, rmse_type = 1 (weights x^2), no
 * quant weights: a symmetric fit from the signed extreme, then 18 more candidate
 * inverse scales -(nmax + 0.1*is)/max, is = -9..9 without 0, keeping the one with
 * the largest sumlx^2/suml2. L gets levels + 32. */
static float fit_scale_sym(const float *x, int8_t *L) {
    enum { N = 16, NMAX = 32 };
    float max = 0, amax = 0;
    for (int i = 0; i < N; i++) {
        const float ax = fabsf(x[i]);
        if (ax > amax) {
            amax = ax;
            max = x[i];
        }
    }
    if (amax < GROUP_MAX_EPS) {
        memset(L, 0, N);
        return 0.f;
    }
    float iscale = -NMAX / max;
    float sumlx = 0, suml2 = 0;
    for (int i = 0; i < N; i++) {
        const int l = clampi(nearest_int(iscale * x[i]), -NMAX, NMAX - 1);
        L[i] = (int8_t)(l + NMAX);
        const float w = x[i] * x[i];
        sumlx += w * x[i] * l;
        suml2 += w * l * l;
    }
    float scale = suml2 != 0.0f ? sumlx / suml2 : 0.0f;
    float best = scale * sumlx;
    for (int is = -9; is <= 9; is++) {
        if (is == 0)
            continue;
        iscale = -(NMAX + 0.1f * is) / max;
        sumlx = suml2 = 0;
        for (int i = 0; i < N; i++) {
            const int l = clampi(nearest_int(iscale * x[i]), -NMAX, NMAX - 1);
            const float w = x[i] * x[i];
            sumlx += w * x[i] * l;
            suml2 += w * l * l;
        }
        if (suml2 > 0 && sumlx * sumlx > best * suml2) {
            for (int i = 0; i < N; i++)
                L[i] = (int8_t)(NMAX + clampi(nearest_int(iscale * x[i]), -NMAX, NMAX - 1));
            scale = sumlx / suml2;
            best = scale * sumlx;
        }
    }
    return scale;
}

void lc_q6_K_quantize_ref(const float *restrict x, void *restrict vy, size_t n) {
    lc_block_q6_K *y = vy;
    for (size_t b = 0; b < n / LC_QK_K; b++, x += LC_QK_K) {
        int8_t L[LC_QK_K];
        float scales[LC_QK_K / 16];
        float max_scale = 0, max_abs_scale = 0;
        for (int s = 0; s < LC_QK_K / 16; s++) {
            scales[s] = fit_scale_sym(x + 16 * s, L + 16 * s);
            const float abs_scale = fabsf(scales[s]);
            if (abs_scale > max_abs_scale) {
                max_abs_scale = abs_scale;
                max_scale = scales[s];
            }
        }
        if (max_abs_scale < GROUP_MAX_EPS) {     /* an all-zero block: all bytes 0 */
            memset(&y[b], 0, sizeof y[b]);
            continue;
        }
        const float iscale = -128.f / max_scale;
        y[b].d = lc_q_scale_f16(1 / iscale);
        for (int s = 0; s < LC_QK_K / 16; s++) {
            const int v = nearest_int(iscale * scales[s]);
            y[b].scales[s] = (int8_t)(v < 127 ? v : 127);   /* ggml: MIN(127, v) into int8 */
        }
        for (int s = 0; s < LC_QK_K / 16; s++) {
            const float d = lc_q_f16_to_f32(y[b].d) * y[b].scales[s];
            if (d == 0.0f)
                continue;                       /* keeps the fit's levels, as in ggml */
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

void lc_q6_K_dequantize_ref(const void *restrict vx, float *restrict y, size_t n) {
    const lc_block_q6_K *x = vx;
    for (size_t b = 0; b < n / LC_QK_K; b++) {
        const float d = lc_q_f16_to_f32(x[b].d);
        const uint8_t *ql = x[b].ql, *qh = x[b].qh;
        const int8_t *sc = x[b].scales;
        for (int j = 0; j < LC_QK_K; j += 128, y += 128, ql += 64, qh += 32, sc += 8) {
            for (int l = 0; l < 32; l++) {
                const int s = l / 16;
                const int q1 = ((ql[l] & 0x0f) | (qh[l] >> 0 & 3) << 4) - 32;
                const int q2 = ((ql[l + 32] & 0x0f) | (qh[l] >> 2 & 3) << 4) - 32;
                const int q3 = ((ql[l] >> 4) | (qh[l] >> 4 & 3) << 4) - 32;
                const int q4 = ((ql[l + 32] >> 4) | (qh[l] >> 6 & 3) << 4) - 32;
                y[l] = d * sc[s] * q1;
                y[l + 32] = d * sc[s + 2] * q2;
                y[l + 64] = d * sc[s + 4] * q3;
                y[l + 96] = d * sc[s + 6] * q4;
            }
        }
    }
}
