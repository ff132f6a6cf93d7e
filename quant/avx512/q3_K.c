/* quant/avx512/q3_K.c: Q3_K quantize with AVX-512, byte-identical to the scalar reference
 * (quant/ref_k.c): the lane kernel of quant/lanes.h (lanes_q3_K_group) over this folder's
 * 32-lane vocabulary, two super-blocks per group. */
#include "quant/avx512/kernels.h"
#include "quant/avx512/lanes.h"
#include "quant/lanes.h"

void lc_q3_K_quantize_avx512(const float *restrict x, void *restrict y, size_t n) {
    lanes_q3_K_quantize(x, y, n);
}
