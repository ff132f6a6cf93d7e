/* quant/avx2/iq1_m.c: IQ1_M dequantize with AVX2, bit-identical to the reference
 * (quant/ref_iq.c): the block decoded by quant/dq_decode.h as in ref, then per group of 8
 * values x = dl * ((float)grid + delta), the add first (lc_avx2_iq1_grp8,
 * quant/avx2/dq.h). */
#include <immintrin.h>

#include "quant/avx2/dq.h"
#include "quant/avx2/kernels.h"

LC_IQ_DEQUANTIZE(iq1_m, avx2, lc_iq1_grp8, lc_avx2_iq1_grp8)
