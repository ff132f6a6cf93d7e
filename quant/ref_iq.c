/* quant/ref_iq.c: scalar reference dequantizers for ggml's IQ types (quant/ only reads
 * these: see quant/types.h LC_DEQUANT_TYPES). Bit-identical to ggml's
 * dequantize_row_iq2_xxs ... dequantize_row_iq4_xs: each value is formed by the same
 * float operations in the same order (db * grid * sign, not db * (grid * sign)). The
 * grids, sign patterns and IQ4 levels are the format's tables, generated into
 * quant/iq_tables.h from gguf-py by scripts/gen_iq_tables.py.
 *
 * All blocks hold 256 values but IQ4_NL (32). Multi-byte fields are little-endian and
 * read with lc_load_le*, so a block may sit at any address. "Per 32" below is one of the
 * 8 groups of 32 values; a grid entry gives 8 (IQ2, IQ1) or 4 (IQ3) magnitudes, and a
 * sign byte s negates value j of 8 when bit j of s is set.
 *
 * IQ2_XXS (66 B): | d:2 | per 32: 4 grid indices (bytes), u32 w |
 *   w bits 7l..7l+6: ksigns index of group l (l < 4); bits 28-31: scale ls;
 *   x = d*(0.5 + ls)*0.25 * grid * sign.
 * IQ2_XS (74 B): | d:2 | qs[32]: u16 | scales[8] |
 *   qs: bits 0-8 grid index (512 entries), bits 9-15 ksigns index; groups 0-1 of a 32
 *   use the low nibble of scales[ib], groups 2-3 the high one, as IQ2_XXS's ls.
 * IQ2_S (82 B): | d:2 | qs[32] | signs[32] | qh[8] | scales[8] |
 *   grid index (1024 entries) = qs | 2 bits of qh[ib] << 8; sign bytes stored whole.
 * IQ3_XXS (98 B): | d:2 | qs[64] | per 32: u32 w |
 *   two 4-value grid entries per group of 8; w as IQ2_XXS's with x = d*(0.5 + ls)*0.5.
 * IQ3_S (110 B): | d:2 | qs[64] | qh[8] | signs[32] | scales[4] |
 *   grid index (512 entries) = qs | 1 bit of qh << 8; x = d*(1 + 2*ls) * grid * sign.
 * IQ1_S (50 B): | d:2 | qs[32] | qh[8]: u16 |
 *   qh per 32: bits 3l..3l+2 high index bits of group l, bits 12-14 ls, bit 15 sign of
 *   delta; x = d*(2*ls + 1) * (grid + (+-)0.125), grid values in -1, 0, 1.
 * IQ1_M (56 B): | qs[32] | qh[16] | scales[8] |
 *   as IQ1_S with one delta sign and 3 index bits per group of 8 in a nibble of qh, and
 *   3-bit ls per 16 values; d (binary16) is the top nibbles of the 4 u16 of scales.
 * IQ4_NL (18 B, 32 values): | d:2 | qs[16] |  nibbles as Q4_0; x = d*kvalues[q].
 * IQ4_XS (136 B): | d:2 | scales_h:2 | scales_l[4] | qs[128] |
 *   6-bit ls per 32 (low 4 bits in scales_l, high 2 in scales_h), x = d*(ls-32)*kvalues[q]. */
#include <string.h>

#include "libconvert/bytes.h"
#include "quant/blocks.h"
#include "quant/iq_tables.h"
#include "quant/quant.h"
#include "quant/quant_impl.h"

/* ggml writes v * (bit j of s ? -1.f : 1.f), which gcc compiles to a negation (the
 * product by -1 for every v but NaN, whose sign IEEE leaves open): a NaN scale comes out
 * with the sign flipped where the bit is set. We negate explicitly, so every compiler
 * gives ggml's bytes (gguf-py's numpy multiplies, and keeps the NaN's sign). */
static inline float with_sign(float v, unsigned s, int j) { return (s >> j) & 1u ? -v : v; }

/* ---- IQ2 ---- */

void lc_iq2_xxs_dequantize_ref(const void *restrict vx, float *restrict y, size_t n) {
    const lc_block_iq2_xxs *x = vx;
    for (size_t b = 0; b < n / LC_QK_K; b++) {
        const float d = lc_q_f16_to_f32(x[b].d);
        for (int ib = 0; ib < LC_QK_K / 32; ib++) {
            const uint8_t *q = x[b].qs + 8 * ib;
            const uint32_t w = lc_load_le32(q + 4);
            const float db = d * (0.5f + (w >> 28)) * 0.25f;
            for (int l = 0; l < 4; l++, y += 8) {
                const uint8_t *grid = lc_iq2xxs_grid[q[l]];
                const unsigned signs = lc_ksigns_iq2xs[(w >> 7 * l) & 127];
                for (int j = 0; j < 8; j++)
                    y[j] = with_sign(db * grid[j], signs, j);
            }
        }
    }
}

void lc_iq2_xs_dequantize_ref(const void *restrict vx, float *restrict y, size_t n) {
    const lc_block_iq2_xs *x = vx;
    for (size_t b = 0; b < n / LC_QK_K; b++) {
        const float d = lc_q_f16_to_f32(x[b].d);
        for (int ib = 0; ib < LC_QK_K / 32; ib++) {
            const float db[2] = { d * (0.5f + (x[b].scales[ib] & 0xf)) * 0.25f,
                                  d * (0.5f + (x[b].scales[ib] >> 4)) * 0.25f };
            for (int l = 0; l < 4; l++, y += 8) {
                const unsigned v = lc_load_le16(x[b].qs + 2 * (4 * ib + l));
                const uint8_t *grid = lc_iq2xs_grid[v & 511];
                const unsigned signs = lc_ksigns_iq2xs[v >> 9];
                for (int j = 0; j < 8; j++)
                    y[j] = with_sign(db[l / 2] * grid[j], signs, j);
            }
        }
    }
}

void lc_iq2_s_dequantize_ref(const void *restrict vx, float *restrict y, size_t n) {
    const lc_block_iq2_s *x = vx;
    for (size_t b = 0; b < n / LC_QK_K; b++) {
        const float d = lc_q_f16_to_f32(x[b].d);
        const uint8_t *qs = x[b].qs, *signs = x[b].qs + LC_QK_K / 8;
        for (int ib = 0; ib < LC_QK_K / 32; ib++, qs += 4, signs += 4) {
            const float db[2] = { d * (0.5f + (x[b].scales[ib] & 0xf)) * 0.25f,
                                  d * (0.5f + (x[b].scales[ib] >> 4)) * 0.25f };
            for (int l = 0; l < 4; l++, y += 8) {
                const unsigned idx = qs[l] | ((unsigned)x[b].qh[ib] << (8 - 2 * l) & 0x300);
                const uint8_t *grid = lc_iq2s_grid[idx];
                for (int j = 0; j < 8; j++)
                    y[j] = with_sign(db[l / 2] * grid[j], signs[l], j);
            }
        }
    }
}

/* ---- IQ3 ---- */

void lc_iq3_xxs_dequantize_ref(const void *restrict vx, float *restrict y, size_t n) {
    const lc_block_iq3_xxs *x = vx;
    for (size_t b = 0; b < n / LC_QK_K; b++) {
        const float d = lc_q_f16_to_f32(x[b].d);
        const uint8_t *qs = x[b].qs, *scales_and_signs = x[b].qs + LC_QK_K / 4;
        for (int ib = 0; ib < LC_QK_K / 32; ib++, qs += 8) {
            const uint32_t w = lc_load_le32(scales_and_signs + 4 * ib);
            const float db = d * (0.5f + (w >> 28)) * 0.5f;
            for (int l = 0; l < 4; l++, y += 8) {
                const unsigned signs = lc_ksigns_iq2xs[(w >> 7 * l) & 127];
                const uint8_t *grid1 = lc_iq3xxs_grid[qs[2 * l]];
                const uint8_t *grid2 = lc_iq3xxs_grid[qs[2 * l + 1]];
                for (int j = 0; j < 4; j++) {
                    y[j] = with_sign(db * grid1[j], signs, j);
                    y[j + 4] = with_sign(db * grid2[j], signs, j + 4);
                }
            }
        }
    }
}

/* Eight values of IQ3_S: two grid entries whose 9th index bits come from qh. */
static inline void iq3s_group(const uint8_t *qs, unsigned qh, int l, unsigned signs,
                              float db, float *y) {
    const uint8_t *grid1 = lc_iq3s_grid[qs[2 * l] | ((qh << (8 - 2 * l)) & 256)];
    const uint8_t *grid2 = lc_iq3s_grid[qs[2 * l + 1] | ((qh << (7 - 2 * l)) & 256)];
    for (int j = 0; j < 4; j++) {
        y[j] = with_sign(db * grid1[j], signs, j);
        y[j + 4] = with_sign(db * grid2[j], signs, j + 4);
    }
}

void lc_iq3_s_dequantize_ref(const void *restrict vx, float *restrict y, size_t n) {
    const lc_block_iq3_s *x = vx;
    for (size_t b = 0; b < n / LC_QK_K; b++) {
        const float d = lc_q_f16_to_f32(x[b].d);
        const uint8_t *qs = x[b].qs, *qh = x[b].qh, *signs = x[b].signs;
        for (int ib = 0; ib < LC_QK_K / 32; ib += 2, qh += 2) {
            const float db1 = d * (1 + 2 * (x[b].scales[ib / 2] & 0xf));
            const float db2 = d * (1 + 2 * (x[b].scales[ib / 2] >> 4));
            for (int l = 0; l < 4; l++, y += 8)
                iq3s_group(qs, qh[0], l, signs[l], db1, y);
            qs += 8, signs += 4;
            for (int l = 0; l < 4; l++, y += 8)
                iq3s_group(qs, qh[1], l, signs[l], db2, y);
            qs += 8, signs += 4;
        }
    }
}

/* ---- IQ1 ---- */

void lc_iq1_s_dequantize_ref(const void *restrict vx, float *restrict y, size_t n) {
    const lc_block_iq1_s *x = vx;
    for (size_t b = 0; b < n / LC_QK_K; b++) {
        const float d = lc_q_f16_to_f32(x[b].d);
        const uint8_t *qs = x[b].qs;
        for (int ib = 0; ib < LC_QK_K / 32; ib++, qs += 4) {
            const unsigned qh = lc_load_le16(x[b].qh + 2 * ib);
            const float dl = d * (2 * ((qh >> 12) & 7) + 1);
            const float delta = qh & 0x8000 ? -LC_IQ1S_DELTA : LC_IQ1S_DELTA;
            for (int l = 0; l < 4; l++, y += 8) {
                const int8_t *grid = lc_iq1s_grid[qs[l] | ((qh >> 3 * l) & 7) << 8];
                for (int j = 0; j < 8; j++)
                    y[j] = dl * (grid[j] + delta);
            }
        }
    }
}

void lc_iq1_m_dequantize_ref(const void *restrict vx, float *restrict y, size_t n) {
    const lc_block_iq1_m *x = vx;
    for (size_t b = 0; b < n / LC_QK_K; b++) {
        unsigned sc[4];
        for (int i = 0; i < 4; i++)
            sc[i] = lc_load_le16(x[b].scales + 2 * i);
        const uint16_t dbits = (uint16_t)((sc[0] >> 12) | ((sc[1] >> 8) & 0x00f0) |
                                          ((sc[2] >> 4) & 0x0f00) | (sc[3] & 0xf000));
        const float d = lc_q_f16_to_f32(dbits);
        const uint8_t *qs = x[b].qs, *qh = x[b].qh;
        for (int ib = 0; ib < LC_QK_K / 32; ib++, qs += 4, qh += 2) {
            const float dl1 = d * (2 * ((sc[ib / 2] >> (6 * (ib % 2) + 0)) & 0x7) + 1);
            const float dl2 = d * (2 * ((sc[ib / 2] >> (6 * (ib % 2) + 3)) & 0x7) + 1);
            const unsigned idx[4] = { qs[0] | ((qh[0] << 8) & 0x700u),
                                      qs[1] | ((qh[0] << 4) & 0x700u),
                                      qs[2] | ((qh[1] << 8) & 0x700u),
                                      qs[3] | ((qh[1] << 4) & 0x700u) };
            const float delta[4] = { qh[0] & 0x08 ? -LC_IQ1S_DELTA : LC_IQ1S_DELTA,
                                     qh[0] & 0x80 ? -LC_IQ1S_DELTA : LC_IQ1S_DELTA,
                                     qh[1] & 0x08 ? -LC_IQ1S_DELTA : LC_IQ1S_DELTA,
                                     qh[1] & 0x80 ? -LC_IQ1S_DELTA : LC_IQ1S_DELTA };
            for (int l = 0; l < 4; l++, y += 8) {
                const int8_t *grid = lc_iq1s_grid[idx[l]];
                const float dl = l < 2 ? dl1 : dl2;
                for (int j = 0; j < 8; j++)
                    y[j] = dl * (grid[j] + delta[l]);
            }
        }
    }
}

/* ---- IQ4 ---- */

void lc_iq4_nl_dequantize_ref(const void *restrict vx, float *restrict y, size_t n) {
    const lc_block_iq4_nl *x = vx;
    for (size_t b = 0; b < n / LC_QK4_NL; b++, y += LC_QK4_NL) {
        const float d = lc_q_f16_to_f32(x[b].d);
        for (int j = 0; j < LC_QK4_NL / 2; j++) {
            y[j] = d * lc_kvalues_iq4nl[x[b].qs[j] & 0xf];
            y[j + LC_QK4_NL / 2] = d * lc_kvalues_iq4nl[x[b].qs[j] >> 4];
        }
    }
}

void lc_iq4_xs_dequantize_ref(const void *restrict vx, float *restrict y, size_t n) {
    const lc_block_iq4_xs *x = vx;
    for (size_t b = 0; b < n / LC_QK_K; b++) {
        const float d = lc_q_f16_to_f32(x[b].d);
        const unsigned scales_h = lc_load_le16(x[b].scales_h);
        const uint8_t *qs = x[b].qs;
        for (int ib = 0; ib < LC_QK_K / 32; ib++, y += 32, qs += 16) {
            const int ls = (int)(((x[b].scales_l[ib / 2] >> 4 * (ib % 2)) & 0xf) |
                                 ((scales_h >> 2 * ib) & 3) << 4);
            const float dl = d * (ls - 32);
            for (int j = 0; j < 16; j++) {
                y[j] = dl * lc_kvalues_iq4nl[qs[j] & 0xf];
                y[j + 16] = dl * lc_kvalues_iq4nl[qs[j] >> 4];
            }
        }
    }
}
