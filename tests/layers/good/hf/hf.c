#include "hf/hf.h"

#include <cjson/cJSON.h>

#include "arch/arch.h"
#include "formats/pth.h"
#include "formats/safetensors.h"
#include "quant/quant.h"

int lc_hf_convert(const char *dir) {
    return lc_pth_load(dir) + lc_st_load(dir) + lc_quantize(0, 0) + lc_arch_find(dir);
}
