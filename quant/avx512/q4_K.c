/* quant/avx512/q4_K.c: Q4_K quantize with AVX-512, byte-identical to the scalar reference
 * (quant/ref_k.c): the lane kernel of quant/lanes.h over this folder's 32-lane vocabulary
 * (quant/avx512/lanes.h), four super-blocks per group, one sub-block per lane. */
#include "quant/avx512/kernels.h"
#include "quant/avx512/lanes.h"
#include "quant/lanes.h"

void lc_q4_K_quantize_avx512(const float *restrict x, void *restrict y, size_t n) {
    lanes_q4_K_quantize(x, y, n);
}
