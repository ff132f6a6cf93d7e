#include "quant/quant_impl.h"

const int lc_qk_ref = 32;

int lc_quantize(const float *x, int n) { return x && n % lc_qk_ref == 0 ? lc_arch_find("llama") : 0; }
