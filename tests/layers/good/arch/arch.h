#ifndef LC_ARCH_H
#define LC_ARCH_H
#include "libconvert/model.h"
int lc_arch_find(const char *name);
#endif
