/* quant/neon/iq1_m.c: IQ1_M dequantize with NEON, bit-identical to the reference
 * (quant/ref_iq.c): the block decoded by quant/dq_decode.h as in ref, then per group of 8
 * values x = dl * ((float)grid + delta), the add first (lc_neon_iq1_grp8,
 * quant/neon/dq.h). */
#include <arm_neon.h>

#include "quant/neon/dq.h"
#include "quant/neon/kernels.h"

LC_IQ_DEQUANTIZE(iq1_m, neon, lc_iq1_grp8, lc_neon_iq1_grp8)
