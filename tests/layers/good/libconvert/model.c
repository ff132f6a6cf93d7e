#include "libconvert/model.h"

const int lc_model_version = 1;

/* A helper of the same name in another file is static there too: no tie. */
static int helper(void) { return 0; }

int lc_model_new(void) {
    return helper() ? lc_fail(1) : 0;
}
