#include "formats/pth.h"
#include "formats/pth_impl.h"

static int helper(void) { return 1; }

int lc_pth_load(const char *path) {
    return helper() + lc_pth_walk(path);
}
