#include "libconvert/error.h"

int lc_fail(int code) { return code; }
