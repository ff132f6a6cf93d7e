#include "formats/pickle.h"
#include "formats/pickle_impl.h"

int lc_pickle_load(const char *buf) { return lc_pickle_op(buf[0]); }
