#ifndef LC_MODEL_H
#define LC_MODEL_H
#include "libconvert/error.h"
extern const int lc_model_version;
int lc_model_new(void);
#endif
