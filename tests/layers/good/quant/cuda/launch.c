#include <cuda_runtime.h>

#include "quant/quant_impl.h"

int lc_quant_cuda(void);
int lc_quant_cuda(void) { return lc_qk_ref; }
