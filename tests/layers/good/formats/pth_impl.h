/* Includes its module's public header: pth.c includes both, which is no cycle. */
#include "formats/pickle.h"
#include "formats/pth.h"
#include "formats/zip.h"
int lc_pth_walk(const char *path);
