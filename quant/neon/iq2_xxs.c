/* quant/neon/iq2_xxs.c: IQ2_XXS dequantize with NEON, bit-identical to the reference
 * (quant/ref_iq.c): the block decoded by quant/dq_decode.h as in ref, then per group of 8
 * values x = with_sign(db * grid), the sign a XOR (lc_neon_iq2_grp8, quant/neon/dq.h). */
#include <arm_neon.h>

#include "quant/neon/dq.h"
#include "quant/neon/kernels.h"

LC_IQ_DEQUANTIZE(iq2_xxs, neon, lc_iq_grp8, lc_neon_iq2_grp8)
