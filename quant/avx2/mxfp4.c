/* quant/avx2/mxfp4.c: MXFP4 dequantize with AVX2, bit-identical to the reference
 * (quant/ref_dq.c): x = kvalues_fp4[q] * d with the shared E8M0 decode
 * (lc_q_e8m0_half), the levels looked up with PSHUFB. */
#include <immintrin.h>

#include "quant/avx2/dq.h"
#include "quant/avx2/kernels.h"
#include "quant/blocks.h"
#include "quant/iq_tables.h"
#include "quant/quant_impl.h"

void lc_mxfp4_dequantize_avx2(const void *restrict vx, float *restrict y, size_t n) {
    const lc_block_mxfp4 *x = vx;
    const __m128i lut = _mm_loadu_si128((const __m128i *)(const void *)lc_kvalues_fp4);
    for (size_t b = 0; b < n / LC_QK_MXFP4; b++, y += LC_QK_MXFP4)
        lc_avx2_store32_lut(y, _mm256_set1_ps(lc_q_e8m0_half(x[b].e)), lut, x[b].qs);
}
