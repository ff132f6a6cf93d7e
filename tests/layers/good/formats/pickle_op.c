#include "formats/pickle_impl.h"
#include "libconvert/error.h"

int lc_pickle_op(int op) { return op ? 0 : lc_fail(4); }
