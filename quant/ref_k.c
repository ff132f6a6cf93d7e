/* quant/ref_k.c: scalar reference quantizers for the 256-element "K" super-block
 * types Q2_K, Q3_K, Q4_K, Q5_K and Q6_K. Bit-identical to ggml's
 * quantize_row_<type>_ref (what llama-quantize writes without an imatrix) and
 * dequantize_row_<type>, whose scale searches are iterative: every constant, loop
 * bound, comparison and the order of each float operation below is ggml's. Rounding
 * inside the searches is nearest_int (the 1.5*2^23 trick: ties to even), not roundf.
 * Where ggml stores an int in a narrower integer (uint8_t ls = nearest_int(...),
 * int8_t l = nearest_int(...)) we keep the low byte, as gcc does; the non-finite
 * conventions are quant/ref.c's.
 *
 * Q2_K (84 B): | scales[16] | qs[64] | d:2 | dmin:2 |
 *   16 sub-blocks of 16; scales[s] = sc | mn << 4 (4 bits each);
 *   x = d*sc[s]*q - dmin*mn[s], q in [0, 3].
 *   qs: for each 128 elements (qs advances 32), l in 0..31:
 *     qs[l] = q[l] | q[l+32] << 2 | q[l+64] << 4 | q[l+96] << 6
 * Q3_K (110 B): | hmask[32] | qs[64] | scales[12] | d:2 |
 *   16 sub-blocks of 16; x = d*(sc[s] - 32)*(q - 4), q in [0, 7], sc in [0, 63].
 *   Bits 0-1 of q in qs as Q2_K; bit 2 of q[j] is bit j/32 of hmask[j%32].
 *   scales: low 4 bits of sc[s] in the low nibble of byte s (s < 8) or the high
 *   nibble of byte s-8 (s >= 8); bits 4-5 in bits 2*(s/4) of byte 8 + s%4.
 * Q4_K (144 B): | d:2 | dmin:2 | scales[12] | qs[128] |
 *   8 sub-blocks of 32; x = d*sc[s]*q - dmin*mn[s], q in [0, 15].
 *   scales packs eight 6-bit sc and eight 6-bit mn:
 *     byte 0..3 : sc[0..3] in bits 0-5, bits 4-5 of sc[4..7] in bits 6-7
 *     byte 4..7 : mn[0..3] in bits 0-5, bits 4-5 of mn[4..7] in bits 6-7
 *     byte 8..11: low 4 bits of sc[4..7] | low 4 bits of mn[4..7] << 4
 *   qs: for each 64 elements, 32 bytes: element l in the low nibble of byte l,
 *   element l+32 in the high nibble.
 * Q5_K (176 B): | d:2 | dmin:2 | scales[12] | qh[32] | qs[128] |
 *   as Q4_K with q in [0, 31]: bits 0-3 in qs as Q4_K's nibbles; bit 4 of element
 *   64*k + l in bit 2k of qh[l], of element 64*k + 32 + l in bit 2k+1 (l < 32).
 * Q6_K (210 B): | ql[128] | qh[64] | scales[16]: int8 | d:2 |
 *   16 sub-blocks of 16; x = d*scales[s]*(q - 32), q in [0, 63].
 *   For each 128 elements (ql advances 64, qh 32), l in 0..31:
 *     ql[l]    = lo4(q[l])    | lo4(q[l+64]) << 4
 *     ql[l+32] = lo4(q[l+32]) | lo4(q[l+96]) << 4
 *     qh[l]    = hi2(q[l]) | hi2(q[l+32]) << 2 | hi2(q[l+64]) << 4 | hi2(q[l+96]) << 6 */
#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "libconvert/bytes.h"
#include "quant/blocks.h"
#include "quant/quant.h"
#include "quant/quant_impl.h"

#define GROUP_MAX_EPS 1e-15f   /* ggml: below this a group is "all zero" */

/* Round to nearest, ties to even, by adding 1.5*2^23 and reading the mantissa.
 * Exact for |v| <= 2^22 (ggml asserts that); defined but meaningless beyond, and
 * NaN gives its payload bits (0 for the default NaN), as in ggml. */
static inline int nearest_int(float v) {
    const float t = v + 12582912.0f;
    int32_t i;
    memcpy(&i, &t, sizeof i);
    return (i & 0x007fffff) - 0x00400000;
}

static inline int clampi(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

/* (int8_t)v and (uint8_t)v for an int v as gcc converts it: the low byte. */
static inline int wrap_i8(int v) { return (int8_t)(uint8_t)((unsigned)v & 0xffu); }
static inline unsigned wrap_u8(int v) { return (unsigned)v & 0xffu; }

/* ---- scale searches ---- */

/* ggml's make_qkx2_quants with rdelta = 0.1: fits x ~= scale*L - min over weights w
 * (n <= 32 elements, levels 0..nmax), trying nstep + 1 candidate inverse scales
 * (rmin + 0.1*is + nmax)/(max - min) and keeping the least weighted error, squared or
 * absolute (use_mad). Returns the scale and stores -min (>= 0) in *the_min; L gets the
 * levels of the best fit. Inlined into each caller with constant arguments. */
static inline float fit_scale_min(int n, int nmax, float rmin, int nstep, bool use_mad,
                                  const float *x, const float *w, uint8_t *L,
                                  float *the_min) {
    const float rdelta = 0.1f;
    uint8_t Laux[32];
    float min = x[0], max = x[0];
    float sum_w = w[0];
    float sum_x = sum_w * x[0];
    for (int i = 1; i < n; i++) {
        if (x[i] < min) min = x[i];
        if (x[i] > max) max = x[i];
        sum_w += w[i];
        sum_x += w[i] * x[i];
    }
    if (min > 0) min = 0;
    if (max == min) {
        memset(L, 0, (size_t)n);
        *the_min = -min;
        return 0.0f;
    }
    float iscale = nmax / (max - min);
    float scale = 1 / iscale;
    float best_error = 0;
    for (int i = 0; i < n; i++) {
        L[i] = (uint8_t)clampi(nearest_int(iscale * (x[i] - min)), 0, nmax);
        float diff = scale * L[i] + min - x[i];
        diff = use_mad ? fabsf(diff) : diff * diff;
        best_error += w[i] * diff;
    }
    for (int is = 0; is <= nstep; is++) {
        iscale = (rmin + rdelta * is + nmax) / (max - min);
        float sum_l = 0, sum_l2 = 0, sum_xl = 0;
        for (int i = 0; i < n; i++) {
            const int l = clampi(nearest_int(iscale * (x[i] - min)), 0, nmax);
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
            for (int i = 0; i < n; i++) {
                float diff = this_scale * Laux[i] + this_min - x[i];
                diff = use_mad ? fabsf(diff) : diff * diff;
                cur_error += w[i] * diff;
            }
            if (cur_error < best_error) {
                memcpy(L, Laux, (size_t)n);
                best_error = cur_error;
                scale = this_scale;
                min = this_min;
            }
        }
    }
    *the_min = -min;
    return scale;
}

/* ggml's make_q3_quants for n = 16, nmax = 4, do_rmse: a symmetric fit from the signed
 * extreme (levels -4..3, weights x^2), then up to 5 passes that move one level at a
 * time while that raises sumlx^2/suml2. L gets levels + 4; an all-zero group gets
 * L = 0 (not 4) and scale 0, as in ggml. */
static float fit_scale_q3(const float *x, int8_t *L) {
    enum { N = 16, NMAX = 4 };
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
    const float iscale = -NMAX / max;
    float sumlx = 0, suml2 = 0;
    for (int i = 0; i < N; i++) {
        const int l = clampi(nearest_int(iscale * x[i]), -NMAX, NMAX - 1);
        L[i] = (int8_t)l;
        const float w = x[i] * x[i];
        sumlx += w * x[i] * l;
        suml2 += w * l * l;
    }
    for (int itry = 0; itry < 5; itry++) {
        int n_changed = 0;
        for (int i = 0; i < N; i++) {
            const float w = x[i] * x[i];
            float slx = sumlx - w * x[i] * L[i];
            if (slx > 0) {
                float sl2 = suml2 - w * L[i] * L[i];
                const int new_l = clampi(nearest_int(x[i] * sl2 / slx), -NMAX, NMAX - 1);
                if (new_l != L[i]) {
                    slx += w * x[i] * new_l;
                    sl2 += w * new_l * new_l;
                    if (sl2 > 0 && slx * slx * suml2 > sumlx * sumlx * sl2) {
                        L[i] = (int8_t)new_l;
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
    for (int i = 0; i < N; i++)
        L[i] = (int8_t)(L[i] + NMAX);
    return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

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

/* ---- Q2_K ---- */

/* Two bits per level, four levels 32 apart per byte (Q2_K's and Q3_K's qs). */
static void pack_2bit(const uint8_t *L, uint8_t *qs) {
    for (int j = 0; j < LC_QK_K; j += 128, qs += 32)
        for (int l = 0; l < 32; l++)
            qs[l] = (uint8_t)(L[j + l] | L[j + l + 32] << 2 | L[j + l + 64] << 4 |
                              L[j + l + 96] << 6);
}

void lc_q2_K_quantize_ref(const float *restrict x, void *restrict vy, size_t n) {
    lc_block_q2_K *y = vy;
    const float q4scale = 15.f;
    for (size_t b = 0; b < n / LC_QK_K; b++, x += LC_QK_K) {
        uint8_t L[LC_QK_K];
        float weights[16], mins[LC_QK_K / 16], scales[LC_QK_K / 16];
        float max_scale = 0, max_min = 0;
        for (int j = 0; j < LC_QK_K / 16; j++) {
            for (int l = 0; l < 16; l++)
                weights[l] = fabsf(x[16 * j + l]);
            scales[j] = fit_scale_min(16, 3, -0.5f, 15, true, x + 16 * j, weights, L + 16 * j,
                                      &mins[j]);
            if (scales[j] > max_scale) max_scale = scales[j];
            if (mins[j] > max_min) max_min = mins[j];
        }
        if (max_scale > 0) {
            const float iscale = q4scale / max_scale;
            for (int j = 0; j < LC_QK_K / 16; j++)
                y[b].scales[j] = (uint8_t)wrap_u8(nearest_int(iscale * scales[j]));
            y[b].d = lc_q_scale_f16(max_scale / q4scale);
        } else {
            memset(y[b].scales, 0, sizeof y[b].scales);
            y[b].d = lc_q_scale_f16(0.f);
        }
        if (max_min > 0) {
            const float iscale = q4scale / max_min;
            for (int j = 0; j < LC_QK_K / 16; j++)     /* ggml: scales[j] |= (l << 4) */
                y[b].scales[j] |= (uint8_t)wrap_u8((int)((unsigned)nearest_int(iscale * mins[j]) << 4));
            y[b].dmin = lc_q_scale_f16(max_min / q4scale);
        } else {
            y[b].dmin = lc_q_scale_f16(0.f);
        }
        /* Re-quantize against the scales as stored; a sub-block whose stored scale is 0
         * keeps the levels from the fit, as in ggml. */
        for (int j = 0; j < LC_QK_K / 16; j++) {
            const float d = lc_q_f16_to_f32(y[b].d) * (y[b].scales[j] & 0xf);
            if (d == 0.0f)
                continue;
            const float dm = lc_q_f16_to_f32(y[b].dmin) * (y[b].scales[j] >> 4);
            for (int i = 0; i < 16; i++)
                L[16 * j + i] = (uint8_t)clampi(nearest_int((x[16 * j + i] + dm) / d), 0, 3);
        }
        pack_2bit(L, y[b].qs);
    }
}

void lc_q2_K_dequantize_ref(const void *restrict vx, float *restrict y, size_t n) {
    const lc_block_q2_K *x = vx;
    for (size_t b = 0; b < n / LC_QK_K; b++) {
        const float d = lc_q_f16_to_f32(x[b].d), min = lc_q_f16_to_f32(x[b].dmin);
        const uint8_t *q = x[b].qs, *sc = x[b].scales;
        for (int j = 0; j < LC_QK_K; j += 128, q += 32) {
            for (int shift = 0; shift < 8; shift += 2, sc += 2) {
                float dl = d * (sc[0] & 0xf), ml = min * (sc[0] >> 4);
                for (int l = 0; l < 16; l++) *y++ = dl * ((q[l] >> shift) & 3) - ml;
                dl = d * (sc[1] & 0xf), ml = min * (sc[1] >> 4);
                for (int l = 0; l < 16; l++) *y++ = dl * ((q[l + 16] >> shift) & 3) - ml;
            }
        }
    }
}

/* ---- Q3_K ---- */

/* Sub-block s's 6-bit scale (0..63) from the packed 12 bytes. */
static inline int scale_k3(int s, const uint8_t *q) {
    const int lo = s < 8 ? q[s] & 0xf : q[s - 8] >> 4;
    return lo | ((q[8 + s % 4] >> (2 * (s / 4))) & 3) << 4;
}

void lc_q3_K_quantize_ref(const float *restrict x, void *restrict vy, size_t n) {
    lc_block_q3_K *y = vy;
    for (size_t b = 0; b < n / LC_QK_K; b++, x += LC_QK_K) {
        int8_t L[LC_QK_K];
        float scales[LC_QK_K / 16];
        float max_scale = 0, amax = 0;
        for (int j = 0; j < LC_QK_K / 16; j++) {
            scales[j] = fit_scale_q3(x + 16 * j, L + 16 * j);
            const float scale = fabsf(scales[j]);
            if (scale > amax) {
                amax = scale;
                max_scale = scales[j];
            }
        }
        memset(y[b].scales, 0, sizeof y[b].scales);
        if (max_scale != 0.0f) {
            const float iscale = -32.f / max_scale;
            for (int j = 0; j < LC_QK_K / 16; j++) {
                /* ggml: int8_t l = nearest_int(...); l = MAX(-32, MIN(31, l)) + 32; */
                const int l = clampi(wrap_i8(nearest_int(iscale * scales[j])), -32, 31) + 32;
                if (j < 8)
                    y[b].scales[j] = (uint8_t)(l & 0xf);
                else
                    y[b].scales[j - 8] |= (uint8_t)((l & 0xf) << 4);
                y[b].scales[j % 4 + 8] |= (uint8_t)((l >> 4) << (2 * (j / 4)));
            }
            y[b].d = lc_q_scale_f16(1 / iscale);
        } else {
            y[b].d = lc_q_scale_f16(0.f);
        }
        for (int j = 0; j < LC_QK_K / 16; j++) {
            const float d = lc_q_f16_to_f32(y[b].d) * (scale_k3(j, y[b].scales) - 32);
            if (d == 0.0f)
                continue;                       /* keeps the fit's levels, as in ggml */
            for (int i = 0; i < 16; i++)
                L[16 * j + i] = (int8_t)(clampi(nearest_int(x[16 * j + i] / d), -4, 3) + 4);
        }
        /* Bit 2 of the levels of elements 0..31 goes to bit 0 of hmask[0..31], of
         * elements 32..63 to bit 1, and so on. */
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

void lc_q3_K_dequantize_ref(const void *restrict vx, float *restrict y, size_t n) {
    const lc_block_q3_K *x = vx;
    for (size_t b = 0; b < n / LC_QK_K; b++) {
        const float d_all = lc_q_f16_to_f32(x[b].d);
        const uint8_t *q = x[b].qs, *hm = x[b].hmask;
        unsigned m = 1;
        int s = 0;
        for (int j = 0; j < LC_QK_K; j += 128, q += 32) {
            for (int shift = 0; shift < 8; shift += 2, m <<= 1) {
                float dl = d_all * (scale_k3(s++, x[b].scales) - 32);
                for (int l = 0; l < 16; l++)
                    *y++ = dl * (((q[l] >> shift) & 3) - ((hm[l] & m) ? 0 : 4));
                dl = d_all * (scale_k3(s++, x[b].scales) - 32);
                for (int l = 0; l < 16; l++)
                    *y++ = dl * (((q[l + 16] >> shift) & 3) - ((hm[l + 16] & m) ? 0 : 4));
            }
        }
    }
}

/* ---- Q4_K and Q5_K: the same scales, 4 or 5 bits per level ---- */

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

/* The part of quantize_row_q4_K_ref and quantize_row_q5_K_ref that differs only in
 * constants (levels 0..nmax, the search's rmin and nstep): fits each sub-block of 32,
 * stores d, dmin and the packed scales, and leaves the final levels in L. */
static inline void quantize_k4_scales(const float *x, int nmax, float rmin, int nstep,
                                      uint16_t *dd, uint16_t *dmin, uint8_t *packed,
                                      uint8_t *L) {
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
        scales[j] = fit_scale_min(32, nmax, rmin, nstep, false, xs, weights, L + 32 * j,
                                  &mins[j]);
        if (scales[j] > max_scale) max_scale = scales[j];
        if (mins[j] > max_min) max_min = mins[j];
    }
    const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
    const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
    memset(packed, 0, LC_K_SCALE_SIZE);
    for (int j = 0; j < LC_QK_K / 32; j++) {
        /* ggml stores nearest_int into a uint8_t, then clamps: keep the wrap. */
        uint8_t ls = (uint8_t)wrap_u8(nearest_int(inv_scale * scales[j]));
        uint8_t lm = (uint8_t)wrap_u8(nearest_int(inv_min * mins[j]));
        ls = ls > 63 ? 63 : ls;
        lm = lm > 63 ? 63 : lm;
        if (j < 4) {
            packed[j] = ls;
            packed[j + 4] = lm;
        } else {
            packed[j + 4] = (uint8_t)((ls & 0x0f) | (lm & 0x0f) << 4);
            packed[j - 4] |= (uint8_t)((ls >> 4) << 6);
            packed[j] |= (uint8_t)((lm >> 4) << 6);
        }
    }
    *dd = lc_q_scale_f16(max_scale / 63.f);
    *dmin = lc_q_scale_f16(max_min / 63.f);

    /* Re-quantize against the scales as stored; a sub-block whose stored scale is 0
     * keeps the levels from the fit, as in ggml. */
    for (int j = 0; j < LC_QK_K / 32; j++) {
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

void lc_q4_K_quantize_ref(const float *restrict x, void *restrict vy, size_t n) {
    lc_block_q4_K *y = vy;
    for (size_t b = 0; b < n / LC_QK_K; b++, x += LC_QK_K) {
        uint8_t L[LC_QK_K];
        quantize_k4_scales(x, 15, -1.0f, 20, &y[b].d, &y[b].dmin, y[b].scales, L);
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

void lc_q5_K_quantize_ref(const float *restrict x, void *restrict vy, size_t n) {
    lc_block_q5_K *y = vy;
    for (size_t b = 0; b < n / LC_QK_K; b++, x += LC_QK_K) {
        uint8_t L[LC_QK_K];
        quantize_k4_scales(x, 31, -0.5f, 15, &y[b].d, &y[b].dmin, y[b].scales, L);
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

void lc_q5_K_dequantize_ref(const void *restrict vx, float *restrict y, size_t n) {
    const lc_block_q5_K *x = vx;
    for (size_t b = 0; b < n / LC_QK_K; b++) {
        const float d = lc_q_f16_to_f32(x[b].d), min = lc_q_f16_to_f32(x[b].dmin);
        const uint8_t *ql = x[b].qs, *qh = x[b].qh;
        unsigned u1 = 1, u2 = 2;
        for (int j = 0, s = 0; j < LC_QK_K; j += 64, s += 2, ql += 32, u1 <<= 2, u2 <<= 2) {
            uint8_t sc, mn;
            scale_min_k4(s, x[b].scales, &sc, &mn);
            const float d1 = d * sc, m1 = min * mn;
            scale_min_k4(s + 1, x[b].scales, &sc, &mn);
            const float d2 = d * sc, m2 = min * mn;
            for (int l = 0; l < 32; l++)
                *y++ = d1 * ((ql[l] & 0x0f) + (qh[l] & u1 ? 16 : 0)) - m1;
            for (int l = 0; l < 32; l++)
                *y++ = d2 * ((ql[l] >> 4) + (qh[l] & u2 ? 16 : 0)) - m2;
        }
    }
}

/* ---- Q6_K ---- */

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
            y[b].scales[s] = (int8_t)wrap_i8(v < 127 ? v : 127);   /* ggml: MIN(127, v) into int8 */
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
