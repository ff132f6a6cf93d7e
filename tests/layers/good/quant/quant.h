#include "arch/arch.h"
int lc_quantize(const float *x, int n);
