#include "libconvert/error.h"
int lc_gguf_load(const char *path);
