/* formats/pth_source_impl.h: pth_source.c, private to formats/pth (not installed).
 *
 * The lazy data source of one torch tensor: strides gathered, byte order swapped,
 * negation applied, DEFLATE inflated, read with pread or from the map. */
#ifndef LC_FORMATS_PTH_SOURCE_IMPL_H
#define LC_FORMATS_PTH_SOURCE_IMPL_H

#include "formats/pth_walk_impl.h"
#include "libconvert/error.h"
#include "libconvert/tensor.h"

/* Gives t its data: a zero-copy view when possible, else a lazy source that reads
 * pt's view of pt->st (which must stay alive as long as t). LC_E_NOMEM. */
lc_code lc_pth_source_attach(lc_tensor *t, const lc_pth_tensor *pt, lc_error *err);

#endif
