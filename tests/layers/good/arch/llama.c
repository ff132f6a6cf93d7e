#include "arch/arch.h"
/* Not includes: #include "formats/gguf.h", nor a string:
 *   "#include <cjson/cJSON.h>" */
// #include "hf/hf.h"

int lc_arch_find(const char *name) {
    return name && lc_model_version ? lc_model_new() : lc_fail(2);
}
