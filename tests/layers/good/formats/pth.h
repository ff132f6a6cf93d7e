#include "libconvert/model.h"
int lc_pth_load(const char *path);
