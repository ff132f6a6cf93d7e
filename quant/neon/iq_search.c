/* quant/neon/iq_search.c: the grid i-quants' (IQ2_XXS ... IQ1_M) row entries with NEON
 * neighbour distances, four neighbours per vector. Each lane runs the reference's
 * sequence for its neighbour (lc_iq_dist_ref: diff = scale*q - x, w*diff, *diff, then the
 * add, in order; vmul/vsub/vadd, never a fused multiply-add), so the distances are the
 * reference's bits. A level becomes its value by a table lookup of the lut's bytes
 * (NEON has no gather and no float permute). */
#include <arm_neon.h>
#include <string.h>

#include "quant/iq_grid_impl.h"
#include "quant/neon/kernels.h"

static void dist_neon(const lc_iq_grid *g, const uint16_t *nb, int n, const float *lut,
                      const float *x, const float *w, float scale, float *d2) {
    const uint8x16x2_t tab = { { vld1q_u8((const uint8_t *)lut),
                                 vld1q_u8((const uint8_t *)lut + 16) } };
    const float32x4_t vscale = vdupq_n_f32(scale);
    const uint32x4_t mask = vdupq_n_u32((1u << g->bits) - 1);
    const int32x4_t shift = vdupq_n_s32(-g->bits);
    const uint32x4_t bytes = vdupq_n_u32(0x03020100u);   /* a float's 4 bytes, in order */
    for (int j = 0; j < n; j += 4) {
        const int m = n - j < 4 ? n - j : 4;
        uint32_t pk[4];
        for (int k = 0; k < 4; k++)
            pk[k] = (uint32_t)g->index[nb[j + (k < m ? k : 0)]];
        uint32x4_t idx = vld1q_u32(pk);
        float32x4_t s = vdupq_n_f32(0);
        for (int i = 0; i < g->dim; i++) {
            const uint32x4_t l = vandq_u32(idx, mask);
            idx = vshlq_u32(idx, shift);
            const uint32x4_t sel = vmlaq_n_u32(bytes, l, 0x04040404u);
            const float32x4_t q =
                vreinterpretq_f32_u8(vqtbl2q_u8(tab, vreinterpretq_u8_u32(sel)));
            const float32x4_t diff = vsubq_f32(vmulq_f32(vscale, q), vdupq_n_f32(x[i]));
            s = vaddq_f32(s, vmulq_f32(vmulq_f32(vdupq_n_f32(w[i]), diff), diff));
        }
        if (m == 4) {
            vst1q_f32(d2 + j, s);
        } else {
            float t[4];
            vst1q_f32(t, s);
            memcpy(d2 + j, t, (size_t)m * sizeof *t);
        }
    }
}

#define ROWS_NEON(T, stem) LC_IQ_ROWS_VARIANT(T, stem, neon, dist_neon)
LC_IQ_ROWS_WITH(ROWS_NEON)
