#include "formats/any.h"
#include "formats/gguf.h"
#include "formats/pth.h"
#include "formats/safetensors.h"

int lc_any_load(const char *path) {
    return lc_gguf_load(path) + lc_pth_load(path) + lc_st_load(path);
}
