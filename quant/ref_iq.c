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
#include "quant/dq_decode.h"
#include "quant/iq_tables.h"
#include "quant/quant.h"
#include "quant/quant_impl.h"

/* ggml writes v * (bit j of s ? -1.f : 1.f), which gcc compiles to a negation (the
 * product by -1 for every v but NaN, whose sign IEEE leaves open): a NaN scale comes out
 * with the sign flipped where the bit is set. We negate explicitly, so every compiler
 * gives ggml's bytes (gguf-py's numpy multiplies, and keeps the NaN's sign). */
static inline float with_sign(float v, unsigned s, int j) { return (s >> j) & 1u ? -v : v; }

/* The 8 values of one decoded IQ2/IQ3 group (quant/dq_decode.h). */
static inline void iq_grp8(const lc_iq_grp8 *g, float *y) {
    for (int h = 0; h < 2; h++)
        for (int j = 0; j < 4; j++)
            y[4 * h + j] = with_sign(g->db * g->grid[h][j], g->signs, 4 * h + j);
}

/* The 8 values of one decoded IQ1 group. */
static inline void iq1_grp8(const lc_iq1_grp8 *g, float *y) {
    const float delta = lc_iq1_delta(g);
    for (int j = 0; j < 8; j++)
        y[j] = g->dl * (g->grid[j] + delta);
}

/* ---- IQ2, IQ3, IQ1 (the block decoding is quant/dq_decode.h's) ---- */

LC_IQ_DEQUANTIZE(iq2_xxs, ref, lc_iq_grp8, iq_grp8)
LC_IQ_DEQUANTIZE(iq2_xs, ref, lc_iq_grp8, iq_grp8)
LC_IQ_DEQUANTIZE(iq2_s, ref, lc_iq_grp8, iq_grp8)
LC_IQ_DEQUANTIZE(iq3_xxs, ref, lc_iq_grp8, iq_grp8)
LC_IQ_DEQUANTIZE(iq3_s, ref, lc_iq_grp8, iq_grp8)
LC_IQ_DEQUANTIZE(iq1_s, ref, lc_iq1_grp8, iq1_grp8)
LC_IQ_DEQUANTIZE(iq1_m, ref, lc_iq1_grp8, iq1_grp8)

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
        const uint8_t *qs = x[b].qs;
        for (int ib = 0; ib < LC_QK_K / 32; ib++, y += 32, qs += 16) {
            const float dl = lc_iq4_xs_dl(&x[b], d, ib);
            for (int j = 0; j < 16; j++) {
                y[j] = dl * lc_kvalues_iq4nl[qs[j] & 0xf];
                y[j + 16] = dl * lc_kvalues_iq4nl[qs[j] >> 4];
            }
        }
    }
}
