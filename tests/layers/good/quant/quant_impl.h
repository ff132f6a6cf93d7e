#include "quant/quant.h"
extern const int lc_qk_ref;
