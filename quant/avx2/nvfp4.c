/* quant/avx2/nvfp4.c: NVFP4 dequantize with AVX2, bit-identical to the reference
 * (quant/ref_dq.c): per 16 values the shared UE4M3 decode (lc_q_ue4m3_half), then
 * x = kvalues_fp4[q] * d, the levels looked up with PSHUFB: value j from the low nibble
 * of byte j, value j + 8 from its high nibble. */
#include <immintrin.h>

#include "quant/avx2/dq.h"
#include "quant/avx2/kernels.h"
#include "quant/blocks.h"
#include "quant/iq_tables.h"
#include "quant/quant_impl.h"

void lc_nvfp4_dequantize_avx2(const void *restrict vx, float *restrict y, size_t n) {
    const lc_block_nvfp4 *x = vx;
    enum { SUB = LC_QK_NVFP4_SUB };
    const __m128i lut = _mm_loadu_si128((const __m128i *)(const void *)lc_kvalues_fp4);
    for (size_t b = 0; b < n / LC_QK_NVFP4; b++) {
        for (int s = 0; s < LC_QK_NVFP4 / SUB; s += 2, y += 2 * SUB) {
            /* bytes 0..7: sub-block s, bytes 8..15: sub-block s + 1 */
            const uint8_t *qs = x[b].qs + s * (SUB / 2);
            const __m128i q = _mm_loadu_si128((const __m128i *)(const void *)qs);
            __m128i lo, hi;
            lc_avx2_lut_nibbles(lut, q, &lo, &hi);
            const __m256 d0 = _mm256_set1_ps(lc_q_ue4m3_half(x[b].d[s]));
            const __m256 d1 = _mm256_set1_ps(lc_q_ue4m3_half(x[b].d[s + 1]));
            lc_avx2_store8_i8(y, d0, lo);
            lc_avx2_store8_i8(y + 8, d0, hi);
            lc_avx2_store8_i8(y + SUB, d1, _mm_srli_si128(lo, 8));
            lc_avx2_store8_i8(y + SUB + 8, d1, _mm_srli_si128(hi, 8));
        }
    }
}
