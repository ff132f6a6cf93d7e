/* quant/avx2/iq2_xxs.c: IQ2_XXS dequantize with AVX2, bit-identical to the reference
 * (quant/ref_iq.c): the block decoded by quant/dq_decode.h as in ref, then per group of 8
 * values x = with_sign(db * grid), the sign a XOR (lc_avx2_iq2_grp8, quant/avx2/dq.h). */
#include <immintrin.h>

#include "quant/avx2/dq.h"
#include "quant/avx2/kernels.h"

LC_IQ_DEQUANTIZE(iq2_xxs, avx2, lc_iq_grp8, lc_avx2_iq2_grp8)
