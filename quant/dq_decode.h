/* quant/dq_decode.h: private to quant/. The scalar half of the dequantize-only types'
 * kernels (quant/types.h LC_DEQUANT_TYPES): how a block's header bits become scales,
 * grid entries and signs. The reference (quant/ref_iq.c, quant/ref_dq.c) and every ISA
 * folder's kernel call these, so that they differ only in how they do the arithmetic
 * on what comes out; the block layouts are described in those two files.
 *
 * Each decoder does the reference's own float operations in its order (a scale such as
 * d * (0.5 + ls) * 0.25 is computed here, once, for every variant). static inline, with
 * nothing ISA-specific, so that each folder's translation units (their own flags, and
 * AArch64 gcc) keep their own copies. */
#ifndef LC_QUANT_DQ_DECODE_H
#define LC_QUANT_DQ_DECODE_H

#include <stdint.h>
#include <string.h>

#include "libconvert/bytes.h"
#include "quant/blocks.h"
#include "quant/iq_tables.h"
#include "quant/quant_impl.h"

/* ---- the IQ types but IQ4: a block header, then 32 values at a time, 8 per group ---- */

/* What a block's header gives every sub-block: the scale d, and for IQ1_M the 4 u16 of
 * scales (whose top nibbles are its d, the rest 3-bit ls, 4 per u16). */
typedef struct {
    float d;
    unsigned sc[4];
} lc_iq_head;

/* lc_<stem>_dequantize_<variant> for an IQ type with 256-value blocks: per block
 * lc_<stem>_head, per 8 values lc_<stem>_grp(x, h, ib, l) (group l of the 32 values
 * 32*ib ..) and the variant's grp8(const grp_t *, float *y), which writes them. The
 * decoders are one group each, by value, so that the compiler keeps a group in registers
 * and hoists what a sub-block's groups share out of the loop over l; unrolling that loop
 * turns the shifts by l into constants (a sub-block's whole array of groups on the stack
 * instead cost the AVX2 kernels a third of their speed). */
#define LC_IQ_DEQUANTIZE(stem, variant, grp_t, grp8)                                       \
    void lc_##stem##_dequantize_##variant(const void *restrict vx, float *restrict y,       \
                                          size_t n) {                                      \
        const lc_block_##stem *x = vx;                                                     \
        for (size_t b = 0; b < n / LC_QK_K; b++) {                                         \
            lc_iq_head h;                                                                  \
            lc_##stem##_head(&x[b], &h);                                                   \
            for (int ib = 0; ib < LC_QK_K / 32; ib++)                                      \
                _Pragma("GCC unroll 4")                                                    \
                for (int l = 0; l < 4; l++, y += 8) {                                      \
                    const grp_t g = lc_##stem##_grp(&x[b], &h, ib, l);                     \
                    grp8(&g, y);                                                           \
                }                                                                          \
        }                                                                                  \
    }

/* The header of every such type but IQ1_M: d, one binary16. */
#define LC_IQ_HEAD_F16(stem)                                                               \
    static inline void lc_##stem##_head(const lc_block_##stem *x, lc_iq_head *h) {         \
        h->d = lc_q_f16_to_f32(x->d);                                                      \
    }
LC_IQ_HEAD_F16(iq2_xxs)
LC_IQ_HEAD_F16(iq2_xs)
LC_IQ_HEAD_F16(iq2_s)
LC_IQ_HEAD_F16(iq3_xxs)
LC_IQ_HEAD_F16(iq3_s)
LC_IQ_HEAD_F16(iq1_s)
#undef LC_IQ_HEAD_F16

static inline void lc_iq1_m_head(const lc_block_iq1_m *x, lc_iq_head *h) {
    for (int i = 0; i < 4; i++)
        h->sc[i] = lc_load_le16(x->scales + 2 * i);
    const uint16_t dbits = (uint16_t)((h->sc[0] >> 12) | ((h->sc[1] >> 8) & 0x00f0) |
                                      ((h->sc[2] >> 4) & 0x0f00) | (h->sc[3] & 0xf000));
    h->d = lc_q_f16_to_f32(dbits);
}

/* ---- IQ2, IQ3 ---- */

/* One group of 8 values of an IQ2/IQ3 block: x[j] = db * grid[j], negated where bit j
 * of signs is set. grid[0] holds values 0..3 and grid[1] values 4..7: for IQ2 one
 * 8-byte entry (grid[1] = grid[0] + 4), for IQ3 two 4-byte entries. */
typedef struct {
    float db;
    const uint8_t *grid[2];
    unsigned signs;
} lc_iq_grp8;

static inline lc_iq_grp8 lc_iq_grp8_of(float db, const uint8_t *g1, const uint8_t *g2,
                                       unsigned signs) {
    const lc_iq_grp8 g = { db, { g1, g2 }, signs };
    return g;
}

/* Group l (values 8*l .. 8*l+7) of sub-block ib (values 32*ib ..) of a block with
 * header h. */
static inline lc_iq_grp8 lc_iq2_xxs_grp(const lc_block_iq2_xxs *x, const lc_iq_head *h,
                                        int ib, int l) {
    const uint8_t *q = x->qs + 8 * ib;
    const uint32_t w = lc_load_le32(q + 4);
    const float db = h->d * (0.5f + (w >> 28)) * 0.25f;
    const uint8_t *grid = lc_iq2xxs_grid[q[l]];
    return lc_iq_grp8_of(db, grid, grid + 4, lc_ksigns_iq2xs[(w >> 7 * l) & 127]);
}

/* IQ2_XS, IQ2_S: groups 0-1 of a sub-block take the low nibble of scales[ib], 2-3 the
 * high one. */
static inline lc_iq_grp8 lc_iq2_xs_grp(const lc_block_iq2_xs *x, const lc_iq_head *h,
                                       int ib, int l) {
    const float db[2] = { h->d * (0.5f + (x->scales[ib] & 0xf)) * 0.25f,
                          h->d * (0.5f + (x->scales[ib] >> 4)) * 0.25f };
    const unsigned v = lc_load_le16(x->qs + 2 * (4 * ib + l));
    const uint8_t *grid = lc_iq2xs_grid[v & 511];
    return lc_iq_grp8_of(db[l / 2], grid, grid + 4, lc_ksigns_iq2xs[v >> 9]);
}

static inline lc_iq_grp8 lc_iq2_s_grp(const lc_block_iq2_s *x, const lc_iq_head *h, int ib,
                                      int l) {
    const uint8_t *qs = x->qs + 4 * ib, *signs = x->qs + LC_QK_K / 8 + 4 * ib;
    const float db[2] = { h->d * (0.5f + (x->scales[ib] & 0xf)) * 0.25f,
                          h->d * (0.5f + (x->scales[ib] >> 4)) * 0.25f };
    const unsigned idx = qs[l] | ((unsigned)x->qh[ib] << (8 - 2 * l) & 0x300);
    const uint8_t *grid = lc_iq2s_grid[idx];
    return lc_iq_grp8_of(db[l / 2], grid, grid + 4, signs[l]);
}

static inline lc_iq_grp8 lc_iq3_xxs_grp(const lc_block_iq3_xxs *x, const lc_iq_head *h,
                                        int ib, int l) {
    const uint8_t *qs = x->qs + 8 * ib;
    const uint32_t w = lc_load_le32(x->qs + LC_QK_K / 4 + 4 * ib);
    const float db = h->d * (0.5f + (w >> 28)) * 0.5f;
    return lc_iq_grp8_of(db, lc_iq3xxs_grid[qs[2 * l]], lc_iq3xxs_grid[qs[2 * l + 1]],
                         lc_ksigns_iq2xs[(w >> 7 * l) & 127]);
}

/* IQ3_S: scales[ib / 2] holds the 4-bit ls of sub-blocks ib (low nibble) and ib + 1. */
static inline lc_iq_grp8 lc_iq3_s_grp(const lc_block_iq3_s *x, const lc_iq_head *h, int ib,
                                      int l) {
    const uint8_t *qs = x->qs + 8 * ib, *signs = x->signs + 4 * ib;
    const unsigned qh = x->qh[ib];
    const float db = h->d * (1 + 2 * ((x->scales[ib / 2] >> 4 * (ib % 2)) & 0xf));
    return lc_iq_grp8_of(db, lc_iq3s_grid[qs[2 * l] | ((qh << (8 - 2 * l)) & 256)],
                         lc_iq3s_grid[qs[2 * l + 1] | ((qh << (7 - 2 * l)) & 256)], signs[l]);
}

/* ---- IQ1 ---- */

/* One group of 8 values of an IQ1 block: x[j] = dl * (grid[j] + delta), where delta is
 * LC_IQ1S_DELTA with its sign bit XORed with delta_sign (0 or 0x80000000). */
typedef struct {
    float dl;
    const int8_t *grid;
    uint32_t delta_sign;
} lc_iq1_grp8;

/* The delta of a group, as a float. */
static inline float lc_iq1_delta(const lc_iq1_grp8 *g) {
    return g->delta_sign ? -LC_IQ1S_DELTA : LC_IQ1S_DELTA;
}

static inline lc_iq1_grp8 lc_iq1_s_grp(const lc_block_iq1_s *x, const lc_iq_head *h, int ib,
                                       int l) {
    const unsigned qh = lc_load_le16(x->qh + 2 * ib);
    const float dl = h->d * (2 * ((qh >> 12) & 7) + 1);
    const lc_iq1_grp8 g = { dl, lc_iq1s_grid[x->qs[4 * ib + l] | ((qh >> 3 * l) & 7) << 8],
                            (qh & 0x8000u) << 16 };
    return g;
}

/* IQ1_M: per group a nibble of qh (the low one for even l): 3 index bits, then the
 * delta's sign; ls per 16 values. */
static inline lc_iq1_grp8 lc_iq1_m_grp(const lc_block_iq1_m *x, const lc_iq_head *h, int ib,
                                       int l) {
    const unsigned sc = h->sc[ib / 2];
    const float dl1 = h->d * (2 * ((sc >> (6 * (ib % 2) + 0)) & 0x7) + 1);
    const float dl2 = h->d * (2 * ((sc >> (6 * (ib % 2) + 3)) & 0x7) + 1);
    const unsigned qh = (unsigned)x->qh[2 * ib + l / 2] >> 4 * (l % 2) & 0xfu;
    const lc_iq1_grp8 g = { l < 2 ? dl1 : dl2, lc_iq1s_grid[x->qs[4 * ib + l] | (qh & 7u) << 8],
                            (qh & 8u) << 28 };
    return g;
}

/* ---- IQ4_XS, Q8_K ---- */

/* The scale of IQ4_XS sub-block ib: d * (ls - 32), ls 6 bits (low 4 in scales_l, high 2
 * in scales_h). */
static inline float lc_iq4_xs_dl(const lc_block_iq4_xs *x, float d, int ib) {
    const unsigned scales_h = lc_load_le16(x->scales_h);
    const int ls = (int)(((x->scales_l[ib / 2] >> 4 * (ib % 2)) & 0xf) |
                         ((scales_h >> 2 * ib) & 3) << 4);
    return d * (ls - 32);
}

/* Q8_K's scale is a little-endian binary32, not a binary16. */
static inline float lc_q8_K_d(const lc_block_q8_K *x) {
    const uint32_t bits = lc_load_le32(x->d);
    float d;
    memcpy(&d, &bits, sizeof d);
    return d;
}

#endif
