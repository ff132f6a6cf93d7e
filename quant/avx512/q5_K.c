/* quant/avx512/q5_K.c: Q5_K quantize with AVX-512, byte-identical to the scalar reference
 * (quant/ref_k.c): Q4_K's lane kernel with levels 0..31 (quant/lanes.h lanes_k4_group)
 * over this folder's 32-lane vocabulary, four super-blocks per group. */
#include "quant/avx512/kernels.h"
#include "quant/avx512/lanes.h"
#include "quant/lanes.h"

void lc_q5_K_quantize_avx512(const float *restrict x, void *restrict y, size_t n) {
    lanes_q5_K_quantize(x, y, n);
}
