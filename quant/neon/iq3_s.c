/* quant/neon/iq3_s.c: IQ3_S dequantize with NEON, bit-identical to the reference
 * (quant/ref_iq.c): db = d * (1 + 2*ls) per 32 values as in ref, then for each pair of
 * 4-value grid entries (9th index bit from qh) x = with_sign(db * grid), the stored
 * sign byte applied as a XOR. */
#include <arm_neon.h>

#include "quant/blocks.h"
#include "quant/iq_tables.h"
#include "quant/neon/dq.h"
#include "quant/neon/kernels.h"
#include "quant/quant_impl.h"

/* The 32 values of one scale: qs[0..7], the 8 index bits of qh, signs[0..3]. */
static inline void iq3s_32(const uint8_t *qs, unsigned qh, const uint8_t *signs, float db,
                           float *y) {
    const float32x4_t vdb = vdupq_n_f32(db);
    for (int l = 0; l < 4; l++, y += 8) {
        float32x4_t g[2];
        lc_neon_u8x4x2_f32(lc_iq3s_grid[qs[2 * l] | ((qh << (8 - 2 * l)) & 256)],
                           lc_iq3s_grid[qs[2 * l + 1] | ((qh << (7 - 2 * l)) & 256)], g);
        lc_neon_store8_signed(y, vdb, g, signs[l]);
    }
}

void lc_iq3_s_dequantize_neon(const void *restrict vx, float *restrict y, size_t n) {
    const lc_block_iq3_s *x = vx;
    for (size_t b = 0; b < n / LC_QK_K; b++) {
        const float d = lc_q_f16_to_f32(x[b].d);
        const uint8_t *qs = x[b].qs, *qh = x[b].qh, *signs = x[b].signs;
        for (int ib = 0; ib < LC_QK_K / 32; ib += 2, qh += 2) {
            const float db1 = d * (1 + 2 * (x[b].scales[ib / 2] & 0xf));
            const float db2 = d * (1 + 2 * (x[b].scales[ib / 2] >> 4));
            iq3s_32(qs, qh[0], signs, db1, y);
            iq3s_32(qs + 8, qh[1], signs + 4, db2, y + 32);
            qs += 16, signs += 8, y += 64;
        }
    }
}
