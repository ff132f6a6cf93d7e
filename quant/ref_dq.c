/* quant/ref_dq.c: scalar reference dequantizers for the dequantize-only types that are
 * not IQ (quant/types.h LC_DEQUANT_TYPES): ternary TQ1_0/TQ2_0, the FP4 types MXFP4 and
 * NVFP4, the one- and two-bit Q1_0/Q2_0, and ggml's activation types Q8_1/Q8_K.
 * Bit-identical to ggml's dequantize_row_<type> (ggml has none for Q8_1: see below).
 *
 * TQ1_0 (54 B): | qs[48] | qh[4] | d:2 |
 *   base-3 digits stored as ceil(v * 256 / 243): digit n of byte q is
 *   ((uint8_t)(q * 3^n) * 3) >> 8. qs[0..31] give 5 digits each for values
 *   32*n + m (n < 5, m < 32, values 0..159); qs[32..47] likewise for 160..239 in 16s;
 *   qh[0..3] give 4 digits each for 240..255 (value 240 + 4*n + j). x = (digit - 1)*d.
 * TQ2_0 (66 B): | qs[64] | d:2 |  2 bits per value as Q2_K's qs; x = (q - 1)*d.
 * MXFP4 (17 B, 32 values): | e:1 | qs[16] |
 *   nibbles as Q4_0; x = kvalues_fp4[q] * 2^(e - 128) (E8M0 scale, halved because the
 *   E2M1 values are stored doubled; e = 0 and 1 give the subnormals 2^-128, 2^-127).
 * NVFP4 (36 B, 64 values): | d[4] | qs[32] |
 *   four groups of 16, each with an unsigned E4M3 scale (bias 7, halved; 0 and 0x7f mean
 *   0) and 8 bytes of nibbles: value j in the low nibble of byte j, j+8 in the high.
 * Q1_0 (18 B, 128 values): | d:2 | qs[16] |  bit j of the block: x = +d if set, -d if not.
 * Q2_0 (18 B, 64 values): | d:2 | qs[16] |  2-bit q in bits 2*(j%4) of byte j/4,
 *   x = (q - 1)*d.
 * Q8_1 (36 B): | d:2 | s:2 | qs[32] |  x = qs*d; s = d*sum(qs) only serves dot products.
 *   ggml defines no dequantizer for Q8_1 (it never appears in a model file); this is the
 *   inverse of quantize_row_q8_1_ref, computed as dequantize_row_q8_0 computes Q8_0.
 * Q8_K (292 B): | d:4 (binary32) | qs[256] | bsums[16]: i16 |  x = d*qs. */
#include "libconvert/bytes.h"
#include "quant/blocks.h"
#include "quant/dq_decode.h"
#include "quant/iq_tables.h"
#include "quant/quant.h"
#include "quant/quant_impl.h"

/* ---- ternary ---- */

/* Digit n of a TQ1_0 byte (base 3, stored scaled by 256/243). */
static inline int trit(uint8_t q, int n) {
    static const uint8_t pow3[5] = { 1, 3, 9, 27, 81 };
    const uint8_t v = (uint8_t)(q * pow3[n]);
    return (int)(((uint16_t)v * 3) >> 8);
}

void lc_tq1_0_dequantize_ref(const void *restrict vx, float *restrict y, size_t n) {
    const lc_block_tq1_0 *x = vx;
    enum { QS = sizeof x->qs, QS32 = QS - QS % 32 };
    for (size_t b = 0; b < n / LC_QK_K; b++) {
        const float d = lc_q_f16_to_f32(x[b].d);
        for (int j = 0; j < QS32; j += 32)
            for (int t = 0; t < 5; t++)
                for (int m = 0; m < 32; m++)
                    *y++ = (float)(trit(x[b].qs[j + m], t) - 1) * d;
        for (int j = QS32; j < QS; j += 16)
            for (int t = 0; t < 5; t++)
                for (int m = 0; m < 16; m++)
                    *y++ = (float)(trit(x[b].qs[j + m], t) - 1) * d;
        for (int t = 0; t < 4; t++)
            for (size_t j = 0; j < sizeof x->qh; j++)
                *y++ = (float)(trit(x[b].qh[j], t) - 1) * d;
    }
}

void lc_tq2_0_dequantize_ref(const void *restrict vx, float *restrict y, size_t n) {
    const lc_block_tq2_0 *x = vx;
    for (size_t b = 0; b < n / LC_QK_K; b++) {
        const float d = lc_q_f16_to_f32(x[b].d);
        for (size_t j = 0; j < sizeof x->qs; j += 32)
            for (int l = 0; l < 4; l++)
                for (int m = 0; m < 32; m++)
                    *y++ = (float)(((x[b].qs[j + m] >> (l * 2)) & 3) - 1) * d;
    }
}

/* ---- FP4 ---- */

void lc_mxfp4_dequantize_ref(const void *restrict vx, float *restrict y, size_t n) {
    const lc_block_mxfp4 *x = vx;
    for (size_t b = 0; b < n / LC_QK_MXFP4; b++, y += LC_QK_MXFP4) {
        const float d = lc_q_e8m0_half(x[b].e);
        for (int j = 0; j < LC_QK_MXFP4 / 2; j++) {
            y[j] = lc_kvalues_fp4[x[b].qs[j] & 0x0f] * d;
            y[j + LC_QK_MXFP4 / 2] = lc_kvalues_fp4[x[b].qs[j] >> 4] * d;
        }
    }
}

void lc_nvfp4_dequantize_ref(const void *restrict vx, float *restrict y, size_t n) {
    const lc_block_nvfp4 *x = vx;
    enum { SUB = LC_QK_NVFP4_SUB };
    for (size_t b = 0; b < n / LC_QK_NVFP4; b++) {
        for (int s = 0; s < LC_QK_NVFP4 / SUB; s++, y += SUB) {
            const float d = lc_q_ue4m3_half(x[b].d[s]);
            const uint8_t *q = x[b].qs + s * (SUB / 2);
            for (int j = 0; j < SUB / 2; j++) {
                y[j] = lc_kvalues_fp4[q[j] & 0x0f] * d;
                y[j + SUB / 2] = lc_kvalues_fp4[q[j] >> 4] * d;
            }
        }
    }
}

/* ---- one and two bits ---- */

void lc_q1_0_dequantize_ref(const void *restrict vx, float *restrict y, size_t n) {
    const lc_block_q1_0 *x = vx;
    for (size_t b = 0; b < n / LC_QK1_0; b++, y += LC_QK1_0) {
        const float d = lc_q_f16_to_f32(x[b].d);   /* a NaN comes out quiet, as in ggml */
        const float neg_d = -d;
        for (int j = 0; j < LC_QK1_0; j++)
            y[j] = (x[b].qs[j / 8] >> (j % 8)) & 1 ? d : neg_d;
    }
}

void lc_q2_0_dequantize_ref(const void *restrict vx, float *restrict y, size_t n) {
    const lc_block_q2_0 *x = vx;
    for (size_t b = 0; b < n / LC_QK2_0; b++, y += LC_QK2_0) {
        const float d = lc_q_f16_to_f32(x[b].d);
        for (int j = 0; j < LC_QK2_0; j++)
            y[j] = (float)(((x[b].qs[j / 4] >> (2 * (j % 4))) & 3) - 1) * d;
    }
}

/* ---- ggml's activation types ---- */

void lc_q8_1_dequantize_ref(const void *restrict vx, float *restrict y, size_t n) {
    const lc_block_q8_1 *x = vx;
    for (size_t b = 0; b < n / LC_QK8_1; b++, y += LC_QK8_1) {
        const float d = lc_q_f16_to_f32(x[b].d);
        for (int j = 0; j < LC_QK8_1; j++)
            y[j] = (float)x[b].qs[j] * d;
    }
}

void lc_q8_K_dequantize_ref(const void *restrict vx, float *restrict y, size_t n) {
    const lc_block_q8_K *x = vx;
    for (size_t b = 0; b < n / LC_QK_K; b++, y += LC_QK_K) {
        const float d = lc_q8_K_d(&x[b]);
        for (int j = 0; j < LC_QK_K; j++)
            y[j] = d * x[b].qs[j];
    }
}
