#include "formats/gguf.h"

int lc_gguf_load(const char *path) { return path ? 0 : lc_fail(5); }
