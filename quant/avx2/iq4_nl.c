/* quant/avx2/iq4_nl.c: IQ4_NL dequantize with AVX2, bit-identical to the reference
 * (quant/ref_iq.c): x = d * kvalues[q], the 16 levels looked up with PSHUFB. */
#include <immintrin.h>

#include "quant/avx2/dq.h"
#include "quant/avx2/kernels.h"
#include "quant/blocks.h"
#include "quant/iq_tables.h"
#include "quant/quant_impl.h"

void lc_iq4_nl_dequantize_avx2(const void *restrict vx, float *restrict y, size_t n) {
    const lc_block_iq4_nl *x = vx;
    const __m128i lut = _mm_loadu_si128((const __m128i *)(const void *)lc_kvalues_iq4nl);
    for (size_t b = 0; b < n / LC_QK4_NL; b++, y += LC_QK4_NL)
        lc_avx2_store32_lut(y, _mm256_set1_ps(lc_q_f16_to_f32(x[b].d)), lut, x[b].qs);
}
