/* quant/neon/iq_search.c: the grid i-quants' (IQ2_XXS ... IQ1_M) row entries with a NEON
 * neighbour search, four neighbours per vector. Each lane runs the reference's sequence
 * for its neighbour (lc_iq_best_ref: diff = scale*q - x, w*diff, *diff, then the add, in
 * order; vmul/vsub/vadd, never a fused multiply-add) and keeps its first strictly least
 * (vclt is an ordered compare: NaN never wins); the least of the lanes at its lowest
 * position is the entry the reference's scan picks. A level becomes its value by a table
 * lookup of the lut's bytes (NEON has no gather and no float permute). */
#include <arm_neon.h>
#include <float.h>

#include "quant/iq_grid_impl.h"
#include "quant/neon/kernels.h"

#define LC_IQ1_W 4
#include "quant/iq1_split_vec.h"

static int best_neon(const lc_iq_grid *g, const uint16_t *nb, const float *lut,
                     const float *x, const float *w, float scale) {
    const int n = nb[0];
    const uint16_t *list = nb + 1;
    const uint8x16x2_t tab = { { vld1q_u8((const uint8_t *)lut),
                                 vld1q_u8((const uint8_t *)lut + 16) } };
    const float32x4_t vscale = vdupq_n_f32(scale);
    const uint32x4_t mask = vdupq_n_u32((1u << g->bits) - 1);
    const int32x4_t shift = vdupq_n_s32(-g->bits);
    const uint32x4_t bytes = vdupq_n_u32(0x03020100u);   /* a float's 4 bytes, in order */
    const int32x4_t vn = vdupq_n_s32(n);
    float32x4_t bestv = vdupq_n_f32(FLT_MAX);
    int32x4_t bestj = vdupq_n_s32(-1);
    int32x4_t jv = { 0, 1, 2, 3 };
    for (int j = 0; j < n; j += 4) {
        uint32_t pk[4];
        for (int k = 0; k < 4; k++)     /* the tail's spare lanes: entry 0, masked below */
            pk[k] = (uint32_t)g->index[j + k < n ? list[j + k] : 0];
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
        const uint32x4_t lt = vandq_u32(vcltq_f32(s, bestv), vcltq_s32(jv, vn));
        bestv = vbslq_f32(lt, s, bestv);
        bestj = vbslq_s32(lt, jv, bestj);
        jv = vaddq_s32(jv, vdupq_n_s32(4));
    }
    float bv[4];
    int32_t bj[4];
    vst1q_f32(bv, bestv);
    vst1q_s32(bj, bestj);
    float m = FLT_MAX;
    int at = -1;
    for (int k = 0; k < 4; k++)         /* the least; among equals, the lowest position */
        if (bv[k] < m || (bv[k] == m && at >= 0 && bj[k] < at)) {
            m = bv[k];
            at = bj[k];
        }
    return at < 0 ? -1 : list[at];
}

/* IQ1_S/IQ1_M's split searches: quant/iq1_split_vec.h, 4 splits per vector. */
static const lc_iq_ops OPS = { best_neon, iq1s_split_vec, iq1m_split_vec };

#define ROWS_NEON(T, stem) LC_IQ_ROWS_VARIANT(T, stem, neon, &OPS)
LC_IQ_ROWS_WITH(ROWS_NEON)
