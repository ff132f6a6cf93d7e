#include "formats/pth_impl.h"

int
lc_pth_walk(const char *path)
{
    return lc_zip_open(path) + lc_pickle_load(path);
}
