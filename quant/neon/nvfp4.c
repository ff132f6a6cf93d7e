/* quant/neon/nvfp4.c: NVFP4 dequantize with NEON, bit-identical to the reference
 * (quant/ref_dq.c): per 16 values the shared UE4M3 decode (lc_q_ue4m3_half), then
 * x = kvalues_fp4[q] * d, the levels looked up with TBL: value j from the low nibble of
 * byte j, value j + 8 from its high nibble. */
#include <arm_neon.h>

#include "quant/blocks.h"
#include "quant/iq_tables.h"
#include "quant/neon/dq.h"
#include "quant/neon/kernels.h"
#include "quant/quant_impl.h"

void lc_nvfp4_dequantize_neon(const void *restrict vx, float *restrict y, size_t n) {
    const lc_block_nvfp4 *x = vx;
    enum { SUB = LC_QK_NVFP4_SUB };
    const int8x16_t lut = vld1q_s8(lc_kvalues_fp4);
    for (size_t b = 0; b < n / LC_QK_NVFP4; b++) {
        for (int s = 0; s < LC_QK_NVFP4 / SUB; s += 2, y += 2 * SUB) {
            /* bytes 0..7: sub-block s, bytes 8..15: sub-block s + 1 */
            int8x16_t lo, hi;
            lc_neon_lut_nibbles(lut, vld1q_u8(x[b].qs + s * (SUB / 2)), &lo, &hi);
            const float32x4_t d0 = vdupq_n_f32(lc_q_ue4m3_half(x[b].d[s]));
            const float32x4_t d1 = vdupq_n_f32(lc_q_ue4m3_half(x[b].d[s + 1]));
            lc_neon_store8_i8(y, d0, vget_low_s8(lo));
            lc_neon_store8_i8(y + 8, d0, vget_low_s8(hi));
            lc_neon_store8_i8(y + SUB, d1, vget_high_s8(lo));
            lc_neon_store8_i8(y + SUB + 8, d1, vget_high_s8(hi));
        }
    }
}
